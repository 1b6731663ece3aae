"""toolgram.constrain, checked without a model by llguidance's own matcher over a byte
tokenizer: every rendered call is accepted (with and without prose before it), five kinds of
bad call are refused, and what a random walk through the grammar writes reads back through
toolgram.parse as calls to offered tools with schema-valid arguments. The GBNF is checked by
the same matcher through llguidance's GBNF reader (llguidance.gbnf_to_lark)."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

import toolgram
from toolgram._constrain.canonical import canonical, constrainable
from toolgram.prompts import render_call

llg = pytest.importorskip("llguidance")
gbnf_to_lark = pytest.importorskip("llguidance.gbnf_to_lark").gbnf_to_lark
jsonschema = pytest.importorskip("jsonschema")

FORMATS = constrainable()
ENGINES = ("llguidance", "gbnf")

# The tools, the calls each grammar must accept and the calls it must refuse: a data file,
# which benchmarks/gbnf_xgrammar.py and gbnf_llama_cpp.py run against those engines too.
CASES = json.loads((Path(__file__).parent / "constrain" / "cases.json").read_text(encoding="utf-8"))
TOOLS, GOOD, BAD = CASES["tools"], CASES["good"], CASES["bad"]


class _Bytes:
    """A tokenizer of one token per byte, and an end-of-text token (256)."""

    def __init__(self) -> None:
        self.tokens = [bytes([i]) for i in range(256)] + [b"<eos>"]
        self.eos_token_id = 256
        self.bos_token_id = None
        self.special_token_ids = [256]

    def __call__(self, data: bytes) -> list[int]:
        return list(data)


TOKENIZER = llg.LLTokenizer(llg.TokenizerWrapper(_Bytes()))


def _lark(grammar: str, engine: str) -> str:
    return grammar if engine == "llguidance" else gbnf_to_lark(grammar)


def _matcher(tools, fmt, engine, **kw):
    m = llg.LLMatcher(TOKENIZER, _lark(toolgram.constrain(tools, fmt, engine=engine, **kw), engine), log_level=0)
    assert not m.is_error(), m.get_error()
    return m


def _accepts(matcher, text: str) -> bool:
    m = matcher.deep_copy()
    return m.consume_tokens(TOKENIZER.tokenize_str(text)) and m.is_accepting()


def _prose_before(fmt: str) -> str:
    return "Let me check that.\n" if canonical(fmt).anchor == "line" else "Let me check that. "


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("fmt", FORMATS)
def test_rendered_calls_are_accepted_and_read_back(fmt, engine):
    m = _matcher(TOOLS, fmt, engine)
    bare = _matcher(TOOLS, fmt, engine, prose=False)
    for calls in GOOD:
        text = render_call(calls, fmt)
        assert _accepts(m, text), text
        assert _accepts(bare, text), text
        if canonical(fmt).start_marker:
            assert _accepts(m, _prose_before(fmt) + text)
            assert not _accepts(bare, _prose_before(fmt) + text)
        got = toolgram.parse(text, tools=TOOLS, formats=[fmt])
        assert [(c.name, c.arguments) for c in got.calls] == [(c["name"], c["arguments"]) for c in calls], text
        assert not got.errors and not any(c.repairs for c in got.calls), text
        assert not got.text.strip(), text  # (no markup left as prose)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("fmt", FORMATS)
def test_bad_calls_are_refused(fmt, engine):
    m = _matcher(TOOLS, fmt, engine)
    for why, call in BAD.items():
        assert not _accepts(m, render_call([call], fmt)), why


@pytest.mark.parametrize("fmt", FORMATS)
def test_max_calls(fmt):
    m = _matcher(TOOLS, fmt, "llguidance", max_calls=2)
    call = {"name": "ping", "arguments": {}}
    assert _accepts(m, render_call([call, call], fmt))
    assert not _accepts(m, render_call([call, call, call], fmt))


def _walk(matcher, rng: random.Random, limit: int = 3000) -> str | None:
    """A random text the grammar allows: few choices are taken as they come, free text
    is mostly letters, and the end is taken half the times it is allowed."""
    m = matcher.deep_copy()
    out = bytearray()
    letters = [ord(c) for c in "abcdefghijklmnopqrstuvwxyz 0123456789"]
    for _ in range(limit):
        mask = m.compute_bitmask()
        allowed = [i for i in range(257) if mask[i // 8] >> (i % 8) & 1]
        if 256 in allowed and (len(allowed) == 1 or rng.random() < 0.5):
            return out.decode("utf-8")
        allowed = [i for i in allowed if i < 128] or [i for i in allowed if i < 256]  # (a marker's UTF-8 bytes)
        if len(allowed) > 20:
            free = [i for i in allowed if i in letters]
            pick = rng.choice(free) if free and rng.random() < 0.85 else rng.choice(allowed)
        else:
            pick = rng.choice(allowed)
        assert m.consume_token(pick)
        out.append(pick)
    return None


def _valid(call) -> bool:
    tool = next(t for t in TOOLS if t["name"] == call.name)
    jsonschema.validate(call.arguments, {**tool["parameters"], "additionalProperties": False})
    return True


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("fmt", FORMATS)
def test_sampled_replies_read_back_as_valid_calls(fmt, engine):
    rng = random.Random(fmt + engine)
    m = _matcher(TOOLS, fmt, engine, prose=False, max_calls=3)
    done = 0
    for _ in range(12):
        text = _walk(m, rng)
        if text is None:
            continue
        done += 1
        got = toolgram.parse(text, tools=TOOLS, formats=[fmt])
        assert got.calls and not got.errors, text
        assert all(_valid(c) for c in got.calls), text
    assert done >= 6


@pytest.mark.parametrize("fmt", FORMATS)
def test_canonical_form_opens_with_a_header_marker(fmt):
    # (Where it closes is checked by reading it back with no repair: an end marker the
    # form left out would be supplied, repair closed_tag.)
    c = canonical(fmt)
    if c.anchor not in ("reply", "whole"):
        assert c.start_marker, c.region[0]


@pytest.mark.parametrize("fmt", sorted(set(FORMATS) & set(toolgram.prompts.PROMPT_FORMATS)))
def test_a_prompts_example_is_the_rendered_call(fmt):
    example = toolgram.prompts.example_call(TOOLS, fmt)
    calls = toolgram.parse(example, tools=TOOLS, formats=[fmt]).calls
    assert render_call(calls, fmt) == example


def test_the_marker_is_never_text_in_prose():
    m = _matcher(TOOLS, "hermes", "llguidance")
    call = render_call(GOOD[0], "hermes")
    assert _accepts(m, "I use tags. " + call)
    assert not _accepts(m, "I use <tool_call> tags. " + call)


def test_special_tokens_are_required_as_tokens():
    start, end = "<|tool_call_start|>", "<|tool_call_end|>"
    words = _Bytes()
    words.tokens += [start.encode(), end.encode()]
    words.special_token_ids += [257, 258]
    tok = llg.LLTokenizer(llg.TokenizerWrapper(words))
    grammar = toolgram.constrain(TOOLS, "lfm2", special_tokens=[start, end])
    assert f"{start}" in grammar and f'"{start}' not in grammar
    m = llg.LLMatcher(tok, grammar, log_level=0)
    assert not m.is_error(), m.get_error()
    inner = render_call(GOOD[0], "lfm2")[len(start) : -len(end)]
    for prose, ok in (("", True), ("Sure. ", True)):
        tokens = list(prose.encode()) + [257] + list(inner.encode()) + [258]
        one = m.deep_copy()
        assert (one.consume_tokens(tokens) and one.is_accepting()) == ok
    spelt = m.deep_copy()
    assert not (spelt.consume_tokens(list(render_call(GOOD[0], "lfm2").encode())) and spelt.is_accepting())


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"format": "hermes", "engine": "outlines"}, "engine must be"),
        ({"format": "harmony"}, "declares no canonical form"),
        ({"format": "hermes", "max_calls": 0}, "max_calls"),
        ({"format": "hermes", "special_tokens": ["[TOOL_CALLS]"]}, "<…>"),
    ],
)
def test_what_cannot_be_constrained_is_a_value_error(kwargs, message):
    with pytest.raises(ValueError, match=message):
        toolgram.constrain(TOOLS, **kwargs)
    with pytest.raises(ValueError, match="at least one tool"):
        toolgram.constrain([], "hermes")


def test_render_call_needs_a_canonical_form():
    with pytest.raises(ValueError, match="declares no canonical form"):
        render_call(GOOD[0], "harmony")


@pytest.mark.parametrize("fmt", FORMATS)
def test_render_call_takes_every_shape_of_a_call(fmt):
    # A ToolCall, its OpenAI form (arguments as JSON text), a plain mapping with the
    # arguments as text: the same call written the same way.
    result = toolgram.parse(render_call({"name": "get_weather", "arguments": {"city": "Oslo"}}, fmt), formats=[fmt])
    (call,) = result.calls
    written = {render_call(x, fmt) for x in (call, call.to_openai(), {"name": "get_weather", "arguments": '{"city": "Oslo"}'})}
    assert len(written) == 1, written


@pytest.mark.parametrize("bad", [{}, 42, "get_weather", {"name": ""}, {"name": "f", "arguments": "no json"}, {"name": "f", "arguments": [1]}])
def test_render_call_refuses_what_is_no_call(bad):
    # (Written, each would be a call with no name or without its arguments: silent errors
    # in a few-shot prompt.)
    with pytest.raises(TypeError, match="render_call"):
        render_call(bad, "hermes")


def test_the_command_prints_the_grammar(tmp_path, capsys):
    import json

    from toolgram._audit.cli import main

    tools = tmp_path / "tools.json"
    tools.write_text(json.dumps(TOOLS), encoding="utf-8")
    assert main(["constrain", "qwen3_coder_xml", "--tools", str(tools), "--engine", "gbnf", "--max-calls", "2"]) == 0
    out = capsys.readouterr().out
    assert out == toolgram.constrain(TOOLS, "qwen3_coder_xml", engine="gbnf", max_calls=2)
    assert main(["constrain", "harmony", "--tools", str(tools)]) != 0
    assert "no canonical form" in capsys.readouterr().err
