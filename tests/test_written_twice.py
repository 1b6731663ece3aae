"""A call's closer written again right after it (`</tool_call></tool_call>`, a small
model's stutter) is markup: a "markup" segment, never text, in every format whose call
ends with a closer; parse() and a stream in any pieces agree, and the stream sends the
call as soon as its first closer came (it is not held back for the second: so the
call records no repair for it). Blanks may come between the two; anything else before
the second closer leaves it as text (`</tool_call>` quoted in prose after a call)."""

from __future__ import annotations

import pytest

import toolgram
from toolgram.events import CallDone

from test_stream import check, chunked

# (format, a whole call of it ending with its closer, that closer)
CALLS = [
    ("hermes", '<tool_call>{"name": "f", "arguments": {"a": 1}}</tool_call>', "</tool_call>"),
    ("lfm2", "<|tool_call_start|>[f(a=1)]<|tool_call_end|>", "<|tool_call_end|>"),
    ("qwen3_coder_xml", "<tool_call>\n<function=f>\n<parameter=a>\n1\n</parameter>\n</function>\n</tool_call>", "</tool_call>"),
    ("qwen3_coder_xml", "<function=f>\n<parameter=a>\n1\n</parameter>\n</function>", "</function>"),
    ("functionary_v31", '<function=f>{"a": 1}</function>', "</function>"),
    ("minimax_m2_invoke", '<minimax:tool_call>\n<invoke name="f">\n<parameter name="a">1</parameter>\n</invoke>\n</minimax:tool_call>', "</minimax:tool_call>"),
    ("gemma4_call", "<|tool_call>call:f{a:1}<tool_call|>", "<tool_call|>"),
    ("nemotron", '<TOOLCALL>[{"name": "f", "arguments": {"a": 1}}]</TOOLCALL>', "</TOOLCALL>"),
    ("granite_20b_fc", '<function_call>{"name": "f", "arguments": {"a": 1}}</function_call>', "</function_call>"),
    ("olmo3_pythonic", "<function_calls>\nf(a=1)\n</function_calls>", "</function_calls>"),
    ("seed_oss_xml", "<seed:tool_call>\n<function=f>\n<parameter=a>1</parameter>\n</function>\n</seed:tool_call>", "</seed:tool_call>"),
]
IDS = [f"{fmt}-{closer}" for fmt, _, closer in CALLS]


@pytest.mark.parametrize(("fmt", "call", "closer"), CALLS, ids=IDS)
@pytest.mark.parametrize("between", ["", "\n", " \n\n  "])
def test_a_closer_written_again_is_markup(fmt: str, call: str, closer: str, between: str) -> None:
    alone = toolgram.parse(call + "\nDone.")
    raw = call + between + closer + "\nDone."
    result = toolgram.parse(raw)
    assert [c.format for c in result.calls] == [fmt]
    assert result.calls == alone.calls  # (the same call, no repair: a stream has sent it)
    assert (result.text, result.errors) == ("Done.", [])
    at = len(call) + len(between)
    assert ("markup", at, at + len(closer)) in result.segments
    for size in (1, 2, 3, 7):
        check(raw, chunked(raw, size), timely=False)


@pytest.mark.parametrize(("fmt", "call", "closer"), CALLS, ids=IDS)
def test_three_closers_and_a_next_call(fmt: str, call: str, closer: str) -> None:
    raw = call + closer + "\n" + closer + call + closer
    result = toolgram.parse(raw)
    assert len(result.calls) == 2 and (result.text, result.errors) == ("", [])
    for size in (1, 3):
        check(raw, chunked(raw, size), timely=False)


@pytest.mark.parametrize(
    "after",
    [
        " " * 17,  # more blanks than a stutter has
        "`",  # quoted in prose
        "x",
        "\n> ",
    ],
)
def test_a_closer_not_right_after_the_call_stays_text(after: str) -> None:
    call, closer = CALLS[0][1], CALLS[0][2]
    raw = call + after + closer + " ok"
    result = toolgram.parse(raw)
    assert closer in result.text and len(result.calls) == 1
    for size in (1, 2, 5):
        check(raw, chunked(raw, size), timely=False)


def test_the_call_is_sent_at_its_first_closer() -> None:
    call, closer = CALLS[0][1], CALLS[0][2]
    sp = toolgram.StreamParser()
    events = sp.feed(call)
    assert [type(e) for e in events][-1] is CallDone
    assert sp.feed("\n" + closer[:5]) == []  # (held: it may be the closer again)
    assert sp.feed(closer[5:] + " Done.")[-1].text == "Done."
    assert sp.close().text == "Done."


# A Hermes call the turn's token ends (`<|im_start|>` written where `</tool_call>` goes).
_TURN_ENDED = '<tool_call>{"name": "f", "arguments": {"a": 1}}<|im_start|>'


@pytest.mark.parametrize(
    ("raw", "markup"),
    [
        # The last call ends with the closer, the one before with the turn's token: the
        # closer after it is written again (markup). parse() reads a run of calls of one
        # format at once (fastpath.run), and checked the closer of the run's first call
        # only: `</tool_call>` stayed text (fuzz seed 7 #2273131).
        (_TURN_ENDED + CALLS[0][1] + "</tool_call>\nDone.", True),
        (_TURN_ENDED + "\n" + CALLS[0][1] + " </tool_call> Done.", True),
        # The other way round: the last call ends with the turn's token, so the closer
        # after it is no closer written again (text), whatever the first call ended with.
        (CALLS[0][1] + CALLS[0][1] + _TURN_ENDED + "</tool_call>\nDone.", False),
    ],
)
def test_the_closer_written_again_is_the_last_calls_own(raw: str, markup: bool) -> None:
    result = toolgram.parse(raw)
    assert result.errors == [] and len(result.calls) == raw.count("<tool_call>")
    assert ("</tool_call>" in result.text) is not markup
    assert any(s.kind == "markup" for s in result.segments) is markup
    for size in (1, 3, 7, len(raw)):
        check(raw, chunked(raw, size), timely=False)
