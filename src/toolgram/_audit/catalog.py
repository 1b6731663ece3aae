"""The formats tables of docs/formats.md and README.md, generated from the grammar files' headers.

    python -m toolgram._audit.catalog                   # print the full table
    python -m toolgram._audit.catalog --write-readme    # replace both tables: docs/formats.md's and README.md's
    python -m toolgram._audit.catalog --check           # exit 1 when either is stale

docs/formats.md holds the full table (formats_table(): name, title, models, markers);
README.md a short one (short_table(): name and models). Each sits between
`<!-- formats:start -->` and `<!-- formats:end -->`; tests/test_readme.py fails when
either differs from what these functions give.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .._grammar.catalog import builtin_formats, formats_table, short_table

START = "<!-- formats:start -->"
END = "<!-- formats:end -->"
README = Path(__file__).resolve().parents[3] / "README.md"
FORMATS_DOC = README.parent / "docs" / "formats.md"


def readme_table(text: str) -> str | None:
    """The table between the markers in Markdown text; None when the markers are missing."""
    start, end = text.find(START), text.find(END)
    if start < 0 or end < start:
        return None
    return text[start + len(START) : end].strip("\n") + "\n"


def with_table(text: str, table: str) -> str:
    """Markdown text with its table replaced (the marked section is appended when missing)."""
    block = f"{START}\n{table}{END}"
    start, end = text.find(START), text.find(END)
    if start < 0 or end < start:
        sep = "" if not text or text.endswith("\n\n") else ("\n" if text.endswith("\n") else "\n\n")
        return f"{text}{sep}{block}\n"
    return text[:start] + block + text[end + len(END) :]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m toolgram._audit.catalog", description="The formats tables of docs/formats.md and README.md.")
    ap.add_argument("--readme", type=Path, default=README, help="the README to check or write (default: the repo's)")
    ap.add_argument("--formats-doc", type=Path, default=FORMATS_DOC, help="the full table's page (default: the repo's docs/formats.md)")
    group = ap.add_mutually_exclusive_group()
    group.add_argument("--write-readme", action="store_true", help="replace the tables in both files")
    group.add_argument("--check", action="store_true", help="exit 1 when either table is stale")
    args = ap.parse_args(argv)
    if not (args.write_readme or args.check):
        sys.stdout.write(formats_table())
        return 0
    stale = 0
    for path, table in ((args.formats_doc, formats_table()), (args.readme, short_table())):
        text = path.read_text(encoding="utf-8") if path.exists() else ""
        if args.check:
            if readme_table(text) != table:
                print(f"{path}: the formats table is stale; run python -m toolgram._audit.catalog --write-readme", file=sys.stderr)
                stale = 1
            continue
        new = with_table(text, table)
        if new != text:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(new, encoding="utf-8")
    return stale


if __name__ == "__main__":
    sys.exit(main())
