"""A fast frame's close in a stream (Scanner._close_wait): the deltas that bring the start
of the close marker after a payload are put aside, not read, and the call comes with the
delta that completes the marker, as before (issue 20: each such delta read the region again,
two of a call's 8-character deltas in three at its end)."""

from __future__ import annotations

import json

import pytest

import toolgram
from toolgram._scan import fastpath

CALL = "<tool_call>\n" + json.dumps({"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}) + "\n</tool_call>\n"
REPLY = "".join(f"Checking item {i} now. " + CALL for i in range(20))


def _events(raw: str, cuts: list[int], tools: list | None = None) -> list[list]:
    sp = toolgram.StreamParser(tools)
    got = [sp.feed(raw[a:b]) for a, b in zip([0, *cuts], [*cuts, len(raw)])]
    got.append(sp.flush())
    assert sp.close() == toolgram.parse(raw, tools)
    return got


@pytest.mark.parametrize("delta", [1, 2, 3, 8, 13])
def test_a_calls_close_is_read_once_whatever_the_deltas(delta: int, monkeypatch: pytest.MonkeyPatch) -> None:
    # The payload's wait is read on (Frame._resumed) once a call, at the delta that completes
    # `</tool_call>`: on 900661c2, at each delta from its `<` on (1-character deltas: 12 a call).
    reads = [0]
    resumed = fastpath.Frame._resumed

    def counting(*args, **kwargs):
        reads[0] += 1
        return resumed(*args, **kwargs)

    monkeypatch.setattr(fastpath.Frame, "_resumed", counting)
    _events(REPLY, list(range(delta, len(REPLY), delta)))
    assert reads[0] == REPLY.count("<tool_call>")


CLOSES = [
    ("hermes", CALL, None),
    ("tools", CALL, ["get_weather"]),
    ("turn end", CALL.replace("</tool_call>", "<|im_end|>"), None),
    ("a `<` in a value", CALL.replace("Paris", "3 < 5 </tool"), None),
    ("no close after all", CALL.replace("</tool_call>", "</tool_callx>") + "more </tool_call>", None),
    ("prose right after", CALL.rstrip("\n") + "Done.", None),
    ("the next call right after", CALL.rstrip("\n") + CALL, None),
]


@pytest.mark.parametrize("name, call, tools", CLOSES, ids=[c[0] for c in CLOSES])
def test_putting_the_close_aside_changes_no_event(name: str, call: str, tools: list | None, monkeypatch: pytest.MonkeyPatch) -> None:
    # Every way of cutting the text around the first close marker in three: each feed()'s
    # events are those of the stream that reads every delta (no close put aside), so the
    # call comes with the delta that completes its close, as it did; the result is parse()'s.
    from toolgram._scan.scanner import Scanner

    raw = "Let me check. " + call + " That was it."
    at = raw.index("}}") + 2  # (the first payload's end: its close follows, a line break first)
    end = min(raw.find(m, at) + len(m) for m in ("</tool_call>", "<|im_end|>") if raw.find(m, at) >= 0)
    cuts = [(a, b) for a in range(at - 3, end + 2) for b in range(a + 1, end + 4)]
    held = [_events(raw, list(c), tools) for c in cuts]
    monkeypatch.setattr(Scanner, "_close_wait", lambda self, wait, text: None)
    for c, got in zip(cuts, held):
        assert repr(got) == repr(_events(raw, list(c), tools)), c
