"""Reasoning blocks of every format, and markup left in the text (issue "Exactly what the
model wrote").

- A format declares its reasoning blocks in its header (`// reasoning: OPEN … CLOSE`); the
  scanner reads each as it reads `<think>`: only the block's own closer ends it, so any
  other marker of the format written inside (a call's, `<|call|>`, `[TOOL_CALLS]`) is
  reasoning text; an opener left unclosed never shows in the text.
- `in_think=True`: the prompt opened a block; any closer the formats declare ends it.
- A reply cut right after a call's opener is an error, and the opener no text.
Each rule is checked for every marker of every built-in format, parse and stream alike.
"""

from __future__ import annotations

import re
import textwrap
import warnings
from pathlib import Path

import pytest

import toolgram
from toolgram._grammar import registry as _registry
from toolgram._grammar.registry import default_registry

from conftest import result_key
from test_mentions import MARKERS as CALL_MARKERS

FORMATS = default_registry().select()
BLOCKS = sorted({(f.name, opener, closers) for f in FORMATS for opener, closers in f.reasoning if opener})
CLOSERS = sorted({c for f in FORMATS for _, closers in f.reasoning for c in closers})
STARTS = {m for f in FORMATS for m in f.starts}


def chunked(raw: str, size: int, **kw) -> toolgram.ParseResult:
    sp = toolgram.StreamParser(**kw)
    for i in range(0, len(raw), size):
        sp.feed(raw[i : i + size])
    return sp.close()


def same_in_streams(raw: str, **kw) -> toolgram.ParseResult:
    result = toolgram.parse(raw, **kw)
    for size in (1, 3, 8):
        assert result_key(chunked(raw, size, **kw)) == result_key(result), (raw, size)
    return result


def test_the_formats_with_a_reasoning_block_declare_it() -> None:
    declared = {name for name, _, _ in BLOCKS}
    assert {"mistral", "harmony", "kimi_k3_open_close", "cohere", "seed_oss_xml", "gemma4_call"} <= declared
    # (A block is read by the scanner, not a grammar: its opener is no start marker.)
    assert not STARTS & {opener for _, opener, _ in BLOCKS}


@pytest.mark.parametrize("name, opener, closers", BLOCKS, ids=lambda v: v if isinstance(v, str) else None)
def test_a_closed_block_keeps_every_marker_of_its_format_as_reasoning(name: str, opener: str, closers: tuple) -> None:
    fmt = default_registry().formats[name]
    inside = " then ".join(m for m in fmt.starts + fmt.ends if m not in closers)
    raw = f"{opener}Weighing it: {inside} maybe.{closers[0]}Here is the answer."
    for tools in (None, ["plan_route"]):
        result = same_in_streams(raw, tools=tools)
        assert result.text == "Here is the answer.", (raw, result)
        assert result.calls == [] and result.errors == []
        assert inside in result.reasoning


@pytest.mark.parametrize("name, opener, closers", BLOCKS, ids=lambda v: v if isinstance(v, str) else None)
def test_an_unclosed_opener_never_leaks(name: str, opener: str, closers: tuple) -> None:
    raw = f"Intro line. {opener}still weighing trains against flights"
    result = same_in_streams(raw)
    assert opener not in result.text and opener not in result.reasoning
    assert result.reasoning == "still weighing trains against flights" and result.text == "Intro line."


@pytest.mark.parametrize("closer", CLOSERS)
def test_in_think_ends_at_any_declared_closer(closer: str) -> None:
    raw = f"The prompt opened this thought.{closer}"
    result = same_in_streams(raw, in_think=True)
    assert result.reasoning == "The prompt opened this thought.", (raw, result)
    assert closer not in result.text


@pytest.mark.parametrize("name, opener, closers", BLOCKS, ids=lambda v: v if isinstance(v, str) else None)
def test_in_think_with_formats_ends_at_their_closers_only(name: str, opener: str, closers: tuple) -> None:
    others = [c for c in CLOSERS if c not in closers and c != "</think>" and c not in STARTS]
    raw = "Thinking " + " and ".join(others) + f" done.{closers[0]}Answer."
    result = same_in_streams(raw, in_think=True, formats=[name])
    assert result.reasoning == raw[: raw.index(closers[0])], (raw, result)
    if closers[0] not in STARTS:
        assert result.text == "Answer."


# (harmony's <|start|> is left out: a start marker, settled by what follows it)
BACKTICKED = [(n, o, c) for n, o, closers in BLOCKS for c in closers[:1] if c not in STARTS]


@pytest.mark.parametrize("name, opener, closer", BACKTICKED, ids=lambda v: v if isinstance(v, str) else None)
def test_a_closer_in_backticks_is_the_reasonings_mention_of_it(name: str, opener: str, closer: str) -> None:
    # (QA6 D13: the rest of the reasoning was shown as the answer, and the real closer
    # dropped.) Only in backticks: a closer written bare still ends the block.
    raw = f"{opener}The tag `{closer}` ends this part. So I answer.{closer}Here is the answer."
    result = same_in_streams(raw)
    assert result.reasoning == f"The tag `{closer}` ends this part. So I answer.", (raw, result)
    assert result.text == "Here is the answer." and result.errors == []
    bare = same_in_streams(f"{opener}Thinking done{closer} then `x` and more.")
    assert bare.reasoning == "Thinking done" and bare.text == "then `x` and more."


# A closer that is a start marker (harmony's `<|start|>`) ends a block only where a message
# of its format may start there: followed by a role word and then prose, or by a word that
# begins like a marker ("assistant" and "assistantcommentary to="), it is reasoning text.
MARKER_CLOSERS = [(n, o, c) for n, o, closers in BLOCKS for c in closers if c in STARTS]


@pytest.mark.parametrize("name, opener, closer", MARKER_CLOSERS, ids=lambda v: v if isinstance(v, str) else None)
@pytest.mark.parametrize("words", ["assistant. Then one more line", "assistant then a channel", "user, then", ". Next"])
def test_a_start_marker_written_as_text_inside_a_block_stays_reasoning(name: str, opener: str, closer: str, words: str) -> None:
    fmt = default_registry().formats[name]
    end = next(c for o, closers in fmt.reasoning if o == opener for c in closers if c not in STARTS)
    inside = f"A message opens with {closer}{words}."
    for formats in (None, [name]):
        result = same_in_streams(f"{opener}{inside}{end}Answer.", formats=formats)
        assert result.reasoning == inside, (formats, result)
        assert result.errors == [] and result.calls == []


def test_a_start_marker_that_starts_a_message_still_ends_the_analysis() -> None:
    for message in ("<|start|>assistant<|channel|>final<|message|>Answer.", "<|start|>assistant <|channel|>final<|message|>Answer."):
        result = same_in_streams("<|channel|>analysis<|message|>Weighing it." + message)
        assert (result.reasoning, result.text, result.errors) == ("Weighing it.", "Answer.", [])
    result = same_in_streams('<|channel|>analysis<|message|>Weighing it.<|start|>assistant to=functions.get_time<|channel|>commentary json<|message|>{"tz": "UTC"}<|call|>')
    assert result.reasoning == "Weighing it." and [(c.name, c.arguments) for c in result.calls] == [("get_time", {"tz": "UTC"})]


# (A word, or a quiet format's marker, is not among them: prose may end with it.)
CUT_MARKERS = [m for m in CALL_MARKERS if not (m[0].isalnum() or all(f.quiet for f in FORMATS if m in f.starts))]


@pytest.mark.parametrize("marker", CUT_MARKERS)
@pytest.mark.parametrize("before", ["Let me check.", "<think>Look it up.</think>\n\n"])
@pytest.mark.parametrize("after", ["", "\n"])
def test_a_reply_cut_right_after_an_opener_is_an_error_not_text(marker: str, before: str, after: str) -> None:
    raw = before + marker + after
    for tools in (None, ["get_weather"]):
        result = same_in_streams(raw, tools=tools)
        assert marker not in result.text and result.calls == []
        assert result.errors == [f"Couldn't read a tool call: the reply ended right after {marker!r}."], result.errors
        assert (result.segments[-1].kind, result.segments[-1].start) == ("error", len(before))


# -- a user's grammar ------------------------------------------------------------------

PONDER = """\
// format: ponder
// title: Test format with a reasoning block
// start: <<call>>
// end: <</call>>
// reasoning: <<ponder>> … <</ponder>> | <<decide>>

start: "<<call>>" json_calls "<</call>>"
json_calls: JSON
JSON: /[\\[{]/
%import common.WS
%ignore WS
"""


@pytest.fixture
def fresh_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_registry, "_registries", {})
    monkeypatch.setattr(_registry, "_entry_point_paths", None)
    monkeypatch.delenv("TOOLGRAM_GRAMMAR_PATH", raising=False)


def write(folder: Path, text: str) -> Path:
    path = folder / "ponder.lark"
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def test_a_user_grammar_declares_its_reasoning_block(tmp_path: Path, fresh_registry: None) -> None:
    path = write(tmp_path, PONDER)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # (a known key: no warning)
        fmt = _registry.registry_for(path).formats["ponder"]
        assert fmt.reasoning == (("<<ponder>>", ("<</ponder>>", "<<decide>>")),) and fmt.warnings == ()
    call = '<<call>>{"name": "lookup", "arguments": {"q": "owls"}}<</call>>'
    raw = f"<<ponder>>Maybe {call} now?<</ponder>>Looking.{call}"
    result = toolgram.parse(raw, grammar_paths=path)
    assert (result.reasoning, result.text, [c.name for c in result.calls]) == (f"Maybe {call} now?", "Looking.", ["lookup"])
    thought = toolgram.parse("Owls hunt at night.<<decide>>Here.", grammar_paths=path, in_think=True)
    assert (thought.reasoning, thought.text) == ("Owls hunt at night.", "Here.")


def test_a_misspelt_reasoning_key_is_warned_about(tmp_path: Path, fresh_registry: None) -> None:
    path = write(tmp_path, PONDER.replace("// reasoning:", "// reasonning:"))
    with pytest.warns(toolgram.GrammarWarning, match=re.escape("unknown header key 'reasonning' (did you mean 'reasoning'?)")):
        result = toolgram.parse("<<ponder>>x<</ponder>>y", grammar_paths=path)
    assert result.text == "<<ponder>>x<</ponder>>y"  # (not used: no block)


@pytest.mark.parametrize("value", ["<<ponder>>", "<<ponder>> …", "… "])
def test_a_reasoning_line_without_a_closer_is_a_grammar_error(tmp_path: Path, fresh_registry: None, value: str) -> None:
    path = write(tmp_path, PONDER.replace("<<ponder>> … <</ponder>> | <<decide>>", value))
    with pytest.raises(toolgram.GrammarError, match=re.escape(f"{path}:5: write '// reasoning: OPENER … CLOSER'")):
        toolgram.parse("anything", grammar_paths=path)
