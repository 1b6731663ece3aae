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


@pytest.mark.parametrize("case", CASES, ids=[f"{c['format']}-{c['case']}-{c['cut']}" for c in CASES])
def test_the_openai_stream_withdraws_no_call_parse_keeps(case: dict) -> None:
    from toolgram import parse
    from toolgram.openai import CompletionStream

    options = {k: case[k] for k in ("formats", "in_think", "truncated") if k in case}
    # (The ids the whole completion gives: the model's, or those made from where each
    # call starts; a call whose id the model did not write has c.id None.)
    kept = {c["id"] for c in parse(case["raw"], case.get("tools"), **options).to_openai_message().get("tool_calls", [])}
    cs = CompletionStream(case.get("tools"), **options)
    chunks = [chunk for ch in case["raw"] for chunk in cs.feed(ch)] + cs.close()
    withdrawn = [w for c in chunks for ch in c.get("choices", []) for w in (ch["delta"].get("toolgram") or {}).get("withdrawn", [])]
    assert [w for w in withdrawn if w["id"] in kept] == []


def test_a_withdrawn_call_is_resent_only_where_it_was_the_kept_call() -> None:
    # (The checker itself: a call announced at a block's opener and kept from its own
    # opener is the same call sent again, gi54's class; a broken list's own call, withdrawn,
    # then the next line's call kept, are two calls: pw54's "resent" replies.)
    from types import SimpleNamespace

    from _announce_contract import _same_call
    from toolgram import CallStart
    from toolgram._result.openai import id_for

    block = "<tool_call>\n<function=f>\n<parameter=a>\nx\n</parameter>\n<oops>"
    kept = SimpleNamespace(name="f", span=(12, 52))
    assert _same_call(block, CallStart(index=0, name="f", id=id_for("f", 0)), kept)
    lines = '[f(a="y", 4)]\n[f(a="z")]'
    kept = SimpleNamespace(name="f", span=(15, 23))
    assert not _same_call(lines, CallStart(index=0, name="f", id=id_for("f", 0)), kept)
    assert _same_call(lines, CallStart(index=0, name="f", id="call_the_models_own"), kept)
