"""instring.Groups (the bracket walks' tokens read once a text, in linked runs) answers
as _Told._brackets, the plain walk, does: for many walks over one text (each from its own
place, to its own end), whole and as a stream's growing text reads it."""

from __future__ import annotations

import random

import pytest

from toolgram._scan.instring import Groups, _Told

_BITS = ["[", "]", "{", "}", "(", ")", '"', "'", ", ", ": ", "=", "x", "ab", " ", "\n", "\\", '<|"|>', "<|", "\\\""]


def _text(rng: random.Random) -> str:
    unit = "".join(rng.choice(_BITS) for _ in range(rng.randint(1, 14)))
    body = "".join(rng.choice(_BITS) for _ in range(rng.randint(0, 40)))
    return body + unit * rng.randint(1, 12) if rng.random() < 0.6 else body


def _told(at: int, ends: tuple) -> _Told:
    t = _Told('"', 0, 0, at, ends, "<m>")
    t.call_from(at)
    return t


@pytest.mark.parametrize("seed", range(40))
def test_groups_answer_as_the_plain_walk(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(40):
        buf = _text(rng)
        n = len(buf)
        groups = Groups()
        starts = sorted(rng.randrange(n + 1) for _ in range(rng.randint(1, 8)))
        if rng.random() < 0.3:
            rng.shuffle(starts)
        for at in starts:
            end = rng.randint(at, n)
            ends = rng.choice([(), ("</x>",)])
            want, got = _told(at, ends), _told(at, ends)
            a, b = want._brackets(buf, 0, end, False), groups.brackets(got, buf, 0, end, False, True)
            assert (a, want.at if a else None) == (b, got.at if b else None), (buf, at, end)


@pytest.mark.parametrize("seed", range(40))
def test_groups_answer_as_the_plain_walk_as_a_stream_reads(seed: int) -> None:
    rng = random.Random(1000 + seed)
    for _ in range(25):
        full = _text(rng)
        n = len(full)
        groups = Groups()
        walks = []  # (plain walk, grouped walk, its end when the text is whole, done)
        cut = 0
        while True:
            cut = min(n, cut + rng.randint(1, 5))
            buf = full[:cut]
            final = cut == n
            if rng.random() < 0.3 and cut:
                at = rng.randrange(cut)
                walks.append([_told(at, ()), _told(at, ()), rng.randint(at, n), False])
            for w in walks:
                if w[3]:
                    continue
                want, got, limit, _ = w
                end = min(cut, limit)
                more = not final and end < limit
                a = want._brackets(buf, 0, end, more)
                b = groups.brackets(got, buf, 0, end, more, final)
                assert (a, want.at if a else None) == (b, got.at if b else None), (full, cut, limit)
                w[3] = a is not None
            if final:
                break


@pytest.mark.parametrize("seed", range(20))
def test_quotation_walks_answer_as_the_plain_walk(seed: int) -> None:
    from toolgram._scan.quotation import Walks

    rng = random.Random(2000 + seed)
    for _ in range(40):
        buf = _text(rng)
        n = len(buf)
        walks = Walks(Groups())
        nl = buf.find("\n")
        end = nl if nl >= 0 and rng.random() < 0.5 else n
        for at in sorted(rng.randrange(end + 1) for _ in range(rng.randint(1, 8))):
            ends = rng.choice([(), ("</x>",)])
            want, got = _told(at, ends), _told(at, ends)
            a, b = want._brackets(buf, 0, end, False), walks.brackets(got, buf, 0, end, True)
            assert (a, want.at if a else None) == (b, got.at if b else None), (buf, at, end)


@pytest.mark.parametrize("seed", range(10))
def test_end_marker_searches_shared_between_readings_find_what_str_find_does(seed: int) -> None:
    rng = random.Random(3000 + seed)
    for _ in range(30):
        buf = "".join(rng.choice(["x", "</a>", "</", "a>", "<e|>", "|>", " "]) for _ in range(rng.randint(0, 60)))
        seen: dict = {}
        for _ in range(12):
            ends = rng.choice([("</a>",), ("<e|>",), ("</a>", "<e|>")])
            t = _told(0, ends)
            t.seen = seen
            p = rng.randint(0, len(buf))
            end = rng.randint(p, len(buf))
            places = [(buf.find(e, p, end), len(e)) for e in ends]
            places = [x for x in places if x[0] >= 0]
            assert t._next_end(buf, 0, p, end) == (min(places) if places else (-1, 0)), (buf, ends, p, end)
