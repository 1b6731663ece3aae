"""`python -m toolgram …`: the same command as `toolgram …` (see toolgram._audit.cli)."""

import sys

from ._audit.cli import main

if __name__ == "__main__":
    sys.exit(main())
