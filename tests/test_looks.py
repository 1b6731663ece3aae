"""_lalr/looks.py: what it says of a terminal's tries holds. A try before a spot, in a
text the margin and the runs' check clear up to a cut, matches the text cut there as
it matches the whole (a salvage's reading of the cut text takes up from that spot)."""

from __future__ import annotations

import random

import pytest

import toolgram
from toolgram._grammar.registry import default_registry
from toolgram._lalr import looks as _looks
from toolgram._lalr.close import CUT_ROOM

FORMATS = ["dots_invoke", "minimax_m2_invoke", "seed_oss_xml", "qwen3_coder_xml", "deepseek_v32_dsml", "kimi_k3_open_close"]
PIECES = ['<invoke name="f">', "<function=f>", '<parameter name="a">', "<parameter=a>", "</parameter>", "</invoke>", "</function>",
          "<｜DSML｜invoke", "</｜DSML｜parameter>", "x", "word ", " ", "\t", "\n", '"', "'", "=", "<", ">", "</", "a < b",
          "<|open|>", "<|close|>", "<|sep|>", "é", "{", "}"]  # fmt: skip


def _format(name: str):
    return next(f for f in default_registry().select(None) if f.name == name)


@pytest.mark.parametrize("name", FORMATS)
def test_a_try_before_the_spot_reads_the_cut_text_as_the_whole(name: str) -> None:
    toolgram.parse("")
    c = _format(name).compiled
    looks = _looks.of(c, CUT_ROOM + c.longest_literal)
    assert looks is not None  # (each terminal of these grammars has a shape looks.py knows)
    terminals = [t for t in [*c.terminals.values(), *c.ignore] if t.literal is None and t.name not in ("JSON", "PYVALUE")]
    rng = random.Random(name)
    tried = 0
    for _ in range(60):
        buf = "".join(rng.choice(PIECES) for _ in range(rng.randint(200, 900)))
        spot = rng.randint(1, len(buf) // 3)
        end = spot + looks.margin + rng.randint(0, 200)
        if end > len(buf) or not looks.clear(buf, spot, end):
            continue
        cut = buf[:end]
        for p in {*range(max(0, spot - 40), spot), *rng.sample(range(spot), min(spot, 20))}:  # (the tries nearest the cut, and some)
            for t in terminals:
                whole, part = t.pattern.match(buf, p), t.pattern.match(cut, p)
                if t.name in looks.loops and whole is not None and whole.end() > spot:
                    continue  # (a loop's try is bounded by where its match ends: before the spot, for a token read)
                tried += 1
                assert (whole and whole.span()) == (part and part.span()), (t.name, p, spot, end)
    assert tried > 1000


def test_a_pattern_of_no_shape_it_knows_is_none() -> None:
    # A group repeated without a bound that takes more than one character a time, and a
    # run in a group whose flags change what its class takes.
    from toolgram._grammar import regex_loops

    regex_loops.sre()
    for source in (r"(?:ab)*c", r"(?i:a[b]*)c"):
        hidden, escapes = _looks._hide_properties(source)
        items = list(regex_loops.sre().parse(hidden))
        assert _looks._span(items) is None and _looks._runs(items, escapes) is None, source
