"""The two ways the prose is joined: Joiner, a piece at a time (the stream shows
what each piece adds), and WholeJoiner, once at the end (parse). They must agree
on every sequence of pieces and cuts, or a stream would not add up to parse()."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from toolgram._pipeline import Joiner, WholeJoiner

# Pieces built from words and the whitespace runs that decide the separators.
PIECE = st.lists(st.sampled_from(["a", "bc", " ", "  ", "\n", "\n\n", "\t", " \n ", "\u3000", "x y"]), max_size=4).map("".join)
NOTES = st.lists(st.one_of(PIECE, st.none()), max_size=14)  # None: markup cut out


def incremental(notes: list) -> tuple[str, str]:
    joiner = Joiner()
    shown = []
    for note in notes:
        if note is None:
            joiner.mark_cut()
        else:
            shown.append(joiner.add(note))
    return joiner.text(), "".join(shown)


def whole(notes: list) -> str:
    joiner = WholeJoiner()
    for note in notes:
        if note is None:
            joiner.mark_cut()
        else:
            assert joiner.add(note) is None  # (nothing is shown before the end)
    return joiner.text()


@settings(max_examples=1500, deadline=None)
@given(NOTES)
def test_the_whole_reply_joins_as_the_pieces_do(notes: list) -> None:
    text, shown = incremental(notes)
    assert shown == text
    assert whole(notes) == text


def test_the_separator_rules_on_examples() -> None:
    # Kept as it is where nothing was cut; the longer run around a cut; a newline
    # where neither side had any; the first of equal runs; the ends dropped.
    cases = [
        (["  a ", " b  "], "a  b"),
        (["a ", None, "\n\nb"], "a\n\nb"),
        (["a", None, "b"], "a\nb"),
        (["a\n", None, " ", None, "\tb"], "a\nb"),
        ([None, "  ", None, "a", None, "   "], "a"),
        (["a", None, "  ", None, "b"], "a  b"),
    ]
    for notes, expected in cases:
        assert incremental(notes)[0] == expected, notes
        assert whole(notes) == expected, notes


# Pieces with one cut between each two: prose between calls, which WholeJoiner joins
# its own quicker way (_alternating) unless a piece is all whitespace.
ALTERNATING = st.lists(PIECE, min_size=1, max_size=8).map(lambda pieces: [x for p in pieces for x in (None, p)][1:])


@settings(max_examples=1500, deadline=None)
@given(ALTERNATING)
def test_prose_between_calls_joins_as_the_pieces_do(notes: list) -> None:
    text, shown = incremental(notes)
    assert shown == text
    assert whole(notes) == text
