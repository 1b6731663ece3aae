"""Snapshot storage for the corpus: one JSON file per case at snapshots/<format>/<case>.json.

syrupy (7.x) would otherwise put snapshots under tests/__snapshots__/test_corpus/. Here the
location comes from the `corpus_case` parameter of the test item
(`test_location.item.callspec.params["corpus_case"]`), so the snapshot tree mirrors
tests/corpus/ and a case's snapshot is easy to find and review.

Unused snapshots. syrupy ties a snapshot file to a test by file basename (the file must be named
after, or sit in a folder named after, the test module) and, with paths or `-k` on the command
line, by substring-matching `-k` against the snapshot name. Neither works for this layout: orphans
go unnoticed whenever a path is given, and `-k "not mfcs"` would mark every mfcs snapshot whose
case name lacks "mfcs" as unused -- and delete it under `--snapshot-update`. So this extension
reports nothing to syrupy's unused-snapshot machinery (`discover_snapshots` returns no
collections) and the corpus does its own, exact bookkeeping instead: `test_no_orphan_snapshots`
(tests/test_corpus.py, helpers in tests/conftest.py) fails for any file under snapshots/ that is
not the snapshot of an existing case, and deletes such files under `--snapshot-update`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from syrupy.location import PyTestLocation

from toolgram.pytest_plugin import snapshot_base

SNAPSHOT_ROOT = Path(__file__).resolve().parent.parent / "snapshots"
CASE_PARAM = "corpus_case"


def _case_of(test_location: PyTestLocation) -> Any:
    callspec = getattr(test_location.item, "callspec", None)
    case = getattr(callspec, "params", {}).get(CASE_PARAM) if callspec is not None else None
    if case is None:
        raise RuntimeError(
            f"CorpusSnapshotExtension serves only tests parametrized with {CASE_PARAM!r}; "
            f"{test_location.nodeid} is not"
        )
    return case


class CorpusSnapshotExtension(snapshot_base()):  # type: ignore[misc]
    """JSON snapshot at snapshots/<case.format>/<case.name>.json, one per case (written
    as the pytest plugin writes a case's snapshot: toolgram.pytest_plugin.snapshot_base)."""

    @classmethod
    def dirname(cls, *, test_location: PyTestLocation) -> str:
        return str(SNAPSHOT_ROOT / _case_of(test_location).format)

    @classmethod
    def discovery_dirname(cls, *, test_location: PyTestLocation) -> str:
        return str(SNAPSHOT_ROOT)

    @classmethod
    def get_snapshot_name(cls, *, test_location: PyTestLocation, index: Any = 0) -> str:
        if index not in (0, None):
            raise RuntimeError(
                f"one snapshot per corpus case: {test_location.nodeid} asserted against "
                f"its snapshot more than once (index {index!r})"
            )
        return str(_case_of(test_location).name)
