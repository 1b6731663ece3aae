"""announce="name" keeps the stream adapter's contract on replies cut or changed after a
call was named (issue 21; docs/serve.md, "Streaming"): no call is withdrawn that parse() of
the whole reply keeps, and indexes and ids are parse()'s. Each line of announce_cuts.jsonl
is a reply benchmarks/announce_cuts.py found breaking it (or one written by hand beside
them), streamed in its chunkings and in fixed ones (tests/_announce_contract.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from _announce_contract import CHUNKINGS, check

CASES = [json.loads(line) for line in (Path(__file__).parent / "announce_cuts.jsonl").read_text(encoding="utf-8").splitlines() if line.strip()]


@pytest.mark.parametrize("chunking", (*CHUNKINGS, "1", "2", "3", "7", "64"))
@pytest.mark.parametrize("case", CASES, ids=[f"{c['format']}-{c['case']}-{c['cut']}" for c in CASES])
def test_no_call_parse_keeps_is_withdrawn(case: dict, chunking: str) -> None:
    failures = [kind for kind in check(case, case["raw"], case["cut"], chunking) if kind != "withdrawn_ok"]
    assert failures == [], case["raw"]
