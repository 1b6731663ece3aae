"""`python -m toolgram …`: the same command as `toolgram …` (see toolgram._cli)."""

import sys

from ._cli import main

if __name__ == "__main__":
    sys.exit(main())
