"""The scanner's marker searches: the whole-text search (_whole_next) and the
symbol markers' trie find what the stream's search (_next_literal) and a plain
longest-first alternation find, at every place of any text made of markers."""

from __future__ import annotations

import re

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolgram._grammar.registry import default_registry
from toolgram._scan.markers import THINK_CLOSE, THINK_OPEN, markers_for
from toolgram._scan.scanner import Scanner
from toolgram._tools.tools import normalize_tools

FORMATS = default_registry().select()
MARKERS = sorted({*markers_for(FORMATS, True).by_marker, THINK_OPEN, THINK_CLOSE} - {""})
# Pieces of markers too (a start that is not one), and text between them.
PIECES = MARKERS + [m[: len(m) // 2] for m in MARKERS] + ["`", "<", "[", "]", " ", "\n", "a", "word ", "3 < 5"]

soup = st.lists(st.sampled_from(PIECES), max_size=12).map("".join)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(soup, st.booleans())
def test_whole_text_search_finds_what_the_stream_search_finds(text: str, tools_given: bool) -> None:
    tools = normalize_tools([]) if tools_given else None
    whole = Scanner(FORMATS, tools)
    whole.read(text)  # (sets up the whole-text search, then scans)
    assert whole.whole_keys == [k for k in whole.literal_keys if k in text]  # (each key's guard is its own)
    # Asked at every place, moving on (as _in_prose asks: both keep answers until passed),
    # and afresh at each place.
    stream, kept = Scanner(FORMATS, tools), dict.fromkeys(whole.whole_keys, -2)
    for pos in range(len(text) + 1):
        expected = stream._next_literal(text, pos)
        assert whole._whole_next(text, pos, kept) == expected, pos
        assert whole._whole_next(text, pos, dict.fromkeys(whole.whole_keys, -2)) == expected, pos
        assert Scanner(FORMATS, tools)._next_literal(text, pos) == expected, pos


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(soup)
def test_symbol_trie_matches_the_longest_marker(text: str) -> None:
    m = markers_for(FORMATS, True)
    symbols = [s for s in MARKERS if not s[0].isalnum()]
    alternation = re.compile("|".join(map(re.escape, sorted(symbols, key=lambda s: (-len(s), s)))))
    for pos in range(len(text)):
        got, want = m.symbols.match(text, pos), alternation.match(text, pos)
        assert (got and got.group()) == (want and want.group()), pos
        for marker in m.unextended:  # (Scanner._run takes such a marker, where it starts, as the match)
            if text.startswith(marker, pos):
                assert got.group() == marker, pos


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from([*PIECES, "\n[", " \t", "\r", THINK_CLOSE]), max_size=12).map("".join))
def test_line_marker_search_finds_what_the_full_search_finds(text: str) -> None:
    # _line_next takes a line marker found as plain text for the match, where it starts a
    # line, with no search: the full search (any_re, its line conditions) finds the same.
    scanner = Scanner(FORMATS, normalize_tools([]))
    assert scanner.line
    for pos in range(len(text) + 1):
        found = scanner._next_literal(text, pos)
        if found is None or found[1] not in scanner.line:
            continue
        m = scanner.any_re.search(text, found[0])
        assert scanner._line_next(text, found) == ((m.start(), m.group()) if m is not None else None), pos


# What a string of a call holds (instring.QUOTE): a quote, or Gemma's <escape>. The
# plain alternation is the definition; QUOTE is written to start with a character
# class, and quoted() asks str.find, both for speed (see instring.py).
QUOTE_DEFINITION = re.compile(r"[\"']|<escape>")
quote_soup = st.lists(st.sampled_from(['"', "'", "<", "escape>", "<escape>", "<esc", "esc", ">", "a", " "]), max_size=12).map("".join)


@settings(max_examples=500, deadline=None)
@given(quote_soup, st.integers(0, 40), st.integers(0, 40))
def test_quote_search_and_quoted_agree_with_the_definition(text: str, lo: int, hi: int) -> None:
    from toolgram._scan import instring

    want = [m.span() for m in QUOTE_DEFINITION.finditer(text, lo, hi)]
    assert [m.span() for m in instring.QUOTE.finditer(text, lo, hi)] == want
    got = instring.QUOTE.search(text, lo, hi)
    assert (got and got.span()) == (want[0] if want else None)
    assert instring.quoted(text, lo, hi) == bool(want)
