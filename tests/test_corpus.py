"""Every corpus case (tests/corpus/<format>/<case>.txt) against its snapshot.

    pytest tests/test_corpus.py                      # compare
    pytest tests/test_corpus.py --snapshot-update    # (re)write snapshots/<format>/<case>.json
                                                     # and delete orphaned ones

A snapshot is the ParseResult as plain JSON: text, reasoning, errors, per call name,
arguments, id, kind, format, span [start, end] and repairs, and the segments. An orphan -- a file under snapshots/
that is no corpus case's snapshot -- fails test_no_orphan_snapshots (see tests/_snapshot.py for
why this is not left to syrupy's own unused-snapshot check).
"""

from __future__ import annotations

import importlib.util
import math
import re
import warnings
from pathlib import Path
from typing import Any

import pytest

import toolgram
from toolgram._audit.cases import result_data  # the snapshot shape the pytest plugin also stores

# syrupy warns that it "Can not relate" snapshots/<format>/<case>.json to this module: expected,
# the location is custom. (The message starts with a newline, hence the leading \s*.)
pytestmark = pytest.mark.filterwarnings(r"ignore:\s*Can not relate snapshot (location|name):UserWarning")


def _parse(case: Any) -> Any:
    return toolgram.parse(case.raw, case.tools, formats=case.formats, in_think=case.in_think, truncated=case.truncated)


def corpus_data(result: Any) -> dict:
    """A case's snapshot: the result as the pytest plugin stores it, and the segments,
    one `kind start end` string each (where each part of the reply went: a segment
    that moves, or changes kind, shows in the snapshot's diff)."""
    data = result_data(result)
    data["segments"] = [f"{s.kind} {s.start} {s.end}" for s in result.segments]
    return data


def test_corpus(corpus_case: Any, corpus_snapshot: Any) -> None:
    result = _parse(corpus_case)
    assert corpus_snapshot == corpus_data(result)


def _json_plain(value: Any, where: str) -> None:
    if isinstance(value, float):
        assert math.isfinite(value), f"{where}: {value!r} is not JSON"  # (repair non_finite_number)
        return
    if value is None or isinstance(value, (bool, int, str)):
        return
    if isinstance(value, dict):
        for key, item in value.items():
            assert isinstance(key, str), f"{where}: non-string key {key!r}"
            _json_plain(item, f"{where}.{key}")
        return
    assert isinstance(value, list), f"{where}: {type(value).__name__} is not JSON data"
    for i, item in enumerate(value):
        _json_plain(item, f"{where}[{i}]")


def test_corpus_invariants(corpus_case: Any) -> None:
    """Needs no snapshot: spans lie in the raw text, in order, without overlap; data is JSON."""
    result = _parse(corpus_case)
    raw = corpus_case.raw
    previous_end = 0
    for n, call in enumerate(result.calls):
        start, end = call.span
        assert isinstance(start, int) and isinstance(end, int), f"call {n}: span {call.span!r}"
        assert 0 <= start < end <= len(raw), f"call {n}: span {call.span!r} outside 0..{len(raw)}"
        assert start >= previous_end, f"call {n}: span {call.span!r} overlaps or precedes the previous call's (ends {previous_end})"
        previous_end = end
        written = raw[start:end]
        if _PY_CALL.match(written) and not call.repairs:
            # A Python call's span holds it whole, up to its closing bracket (a region of
            # one call is its span: the list's bracket, a `;`, may close it).
            assert written.rstrip(" \n;]'\"").endswith(")"), f"call {n}: span {written!r} stops short of its ')'"
        assert isinstance(call.name, str) and call.name, f"call {n}: name {call.name!r}"
        assert isinstance(call.arguments, dict), f"call {n}: arguments {type(call.arguments).__name__}"
        _json_plain(call.arguments, f"call {n} arguments")
    assert all(isinstance(e, str) for e in result.errors)
    assert isinstance(result.text, str) and isinstance(result.reasoning, str)
    # The segments tile the reply, and say where the reasoning came from: its
    # characters (but whitespace) are, in order, those of the reasoning segments.
    assert [s.start for s in result.segments[1:]] == [s.end for s in result.segments[:-1]]
    assert (result.segments[0].start, result.segments[-1].end) == (0, len(raw)) if raw else not result.segments
    # Each call's span lies inside one call segment: a call never spans the reply's
    # own prose or reasoning (xLAM's "thought" after the calls it holds).
    calls = [(s.start, s.end) for s in result.segments if s.kind == "call"]
    for n, call in enumerate(result.calls):
        assert any(a <= call.span[0] and call.span[1] <= b for a, b in calls), f"call {n}: span {call.span!r} in no call segment {calls!r}"
    shown = "".join(raw[s.start : s.end] for s in result.segments if s.kind == "reasoning")
    assert _in_order(re.sub(r"\s+", "", result.reasoning), re.sub(r"\s+", "", shown)), "reasoning outside its segments"


_PY_CALL = re.compile(r"(?:[\w.]|\\_)+\s*\(")


def _in_order(small: str, big: str) -> bool:
    """Whether small's characters all occur in big, in that order."""
    rest = iter(big)
    return all(ch in rest for ch in small)


def test_no_orphan_snapshots(request: pytest.FixtureRequest, corpus_orphan_snapshots: list[Path], snapshot_dir: Path) -> None:
    """Every file under snapshots/ is the snapshot of a corpus case.

    Under --snapshot-update, orphaned <format>/<case>.json files are deleted instead (as syrupy
    does for its own unused snapshots); with --snapshot-warn-unused they only warn.
    """
    orphans = corpus_orphan_snapshots
    if not orphans:
        return
    listing = "\n".join(f"  {p.relative_to(snapshot_dir.parent)}" for p in orphans)
    option = request.config.option
    if getattr(option, "update_snapshots", False):
        deletable = [p for p in orphans if p.suffix == ".json" and p.parent.parent == snapshot_dir]
        for path in deletable:
            path.unlink()
            if not any(path.parent.iterdir()):
                path.parent.rmdir()
        if deletable:
            deleted = "\n".join(f"  {p.relative_to(snapshot_dir.parent)}" for p in deletable)
            warnings.warn(f"deleted {len(deletable)} orphaned snapshot(s):\n{deleted}", stacklevel=1)
        orphans = [p for p in orphans if p not in deletable]
        if not orphans:
            return
        listing = "\n".join(f"  {p.relative_to(snapshot_dir.parent)}" for p in orphans)
    message = f"{len(orphans)} file(s) under snapshots/ belong to no corpus case:\n{listing}"
    if getattr(option, "warn_unused_snapshots", False):
        warnings.warn(message, stacklevel=1)
        return
    pytest.fail(message + "\nDelete them, or re-run with --snapshot-update.", pytrace=False)


def test_corpus_layout(corpus_layout: list[str]) -> None:
    """No stray, misnamed or unknown files in tests/corpus/."""
    assert not corpus_layout, "\n".join(corpus_layout)


def test_smollm2_cases_match_shared_corpus(shared_dir: Path) -> None:
    """The smollm2_* cases are exactly what tests/corpus/import_smollm2.py makes of ../shared."""
    script = Path(__file__).parent / "corpus" / "import_smollm2.py"
    spec = importlib.util.spec_from_file_location("_import_smollm2", script)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    problems = module.check(shared_dir / "corpus")
    assert not problems, "run python tests/corpus/import_smollm2.py\n" + "\n".join(problems)
