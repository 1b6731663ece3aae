"""The generated tables, each from its one source, written into the documents that
show them and checked there (tests/test_readme.py, tests/test_catalogues.py):

    formats   docs/formats.md (in full) and README.md (short), from the grammar headers
    rules     grammars/README.md, from _grammar/vocabulary.py
    repairs   docs/repairs.md, from _recover/catalog.py

    python -m toolgram._audit.catalog                   # print the full formats table
    python -m toolgram._audit.catalog --write-readme    # replace every table in its file
    python -m toolgram._audit.catalog --check           # exit 1 when one is stale

Each sits between its start and end markers (`<!-- formats:start -->` …).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .._grammar import vocabulary
from .._grammar.catalog import builtin_formats  # noqa: F401 (re-exported)
from .._catalog import formats_table, short_table
from .._recover import catalog as repairs

START = "<!-- formats:start -->"
END = "<!-- formats:end -->"
README = Path(__file__).resolve().parents[3] / "README.md"
FORMATS_DOC = README.parent / "docs" / "formats.md"
RULES_DOC = README.parent / "grammars" / "README.md"
REPAIRS_DOC = README.parent / "docs" / "repairs.md"


def readme_table(text: str, begin: str = START, finish: str = END) -> str | None:
    """The table between the markers in Markdown text; None when the markers are missing."""
    start, end = text.find(begin), text.find(finish)
    if start < 0 or end < start:
        return None
    return text[start + len(begin) : end].strip("\n") + "\n"


def with_table(text: str, table: str, begin: str = START, finish: str = END) -> str:
    """Markdown text with its table replaced (the marked section is appended when missing)."""
    block = f"{begin}\n{table}{finish}"
    start, end = text.find(begin), text.find(finish)
    if start < 0 or end < start:
        sep = "" if not text or text.endswith("\n\n") else ("\n" if text.endswith("\n") else "\n\n")
        return f"{text}{sep}{block}\n"
    return text[:start] + block + text[end + len(finish) :]


def generated_tables() -> list[tuple[Path, str, str, str]]:
    """Each generated table: (file, start marker, end marker, the table as it should be)."""
    return [
        (FORMATS_DOC, START, END, formats_table()),
        (README, START, END, short_table()),
        (RULES_DOC, vocabulary.START, vocabulary.END, vocabulary.rules_table()),
        (REPAIRS_DOC, repairs.START, repairs.END, repairs.repairs_table()),
    ]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m toolgram._audit.catalog",
        description="The generated tables: formats (docs/formats.md, README.md), rules (grammars/README.md), "
        "repairs (docs/repairs.md).",
    )
    ap.add_argument("--readme", type=Path, default=README, help="the README to check or write (default: the repo's)")
    ap.add_argument("--formats-doc", type=Path, default=FORMATS_DOC, help="the full table's page (default: the repo's docs/formats.md)")
    group = ap.add_mutually_exclusive_group()
    group.add_argument("--write-readme", action="store_true", help="replace every generated table in its file")
    group.add_argument("--check", action="store_true", help="exit 1 when a table is stale")
    args = ap.parse_args(argv)
    if not (args.write_readme or args.check):
        sys.stdout.write(formats_table())
        return 0
    stale = 0
    moved = {FORMATS_DOC: args.formats_doc, README: args.readme}
    for path, start, end, table in generated_tables():
        path = moved.get(path, path)
        text = path.read_text(encoding="utf-8") if path.exists() else ""
        if args.check:
            if readme_table(text, start, end) != table:
                print(f"{path}: a generated table is stale; run python -m toolgram._audit.catalog --write-readme", file=sys.stderr)
                stale = 1
            continue
        new = with_table(text, table, start, end)
        if new != text:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(new, encoding="utf-8")
    return stale


if __name__ == "__main__":
    sys.exit(main())
