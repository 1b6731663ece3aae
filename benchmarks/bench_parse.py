"""parse() against a plain regex + json.loads extractor, on the same Hermes replies.

    python benchmarks/bench_parse.py

Prints the time per reply of each and the ratio (parse / regex), for a short reply
(one paragraph, one call), 2 KB and 100 KB: the ratio of the best times of 15
rounds, and the median of the rounds' own ratios. The regex does less (no prose, spans,
repairs or reasoning): it is the baseline we measure against.

A third column, "same result", times a hand-written loop that knows only
well-formed Hermes blocks and builds exactly the ParseResult parse() returns for
these replies (text, calls, segments; checked equal), decoding each payload as
parse() does (json.loads's scanner, called directly): what any parser returning
that result, made at once, costs at least, in Python. parse() makes the segments of
a run of calls only when `result.segments` is first read (most callers never do):
the last column times parse() and that read, against the regex (median of the
rounds' ratios).

The last line: a 600-character paragraph with no call, against one compiled search
for any format's start marker (what any reader does at least to tell that there is
no call); target: at most 3x.
"""

from __future__ import annotations

import json
import re
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import toolgram  # noqa: E402
from toolgram._result.model import ParseResult, Segment, make_call  # noqa: E402
from toolgram._pipeline import Joiner  # noqa: E402
from _replies import hermes_reply  # noqa: E402

CALL_RE = re.compile(r"<tool_call>(.*?)</tool_call>", re.S)


def regex_extract(raw: str) -> list[dict]:
    calls = []
    for m in CALL_RE.finditer(raw):
        try:
            calls.append(json.loads(m.group(1)))
        except ValueError:
            pass
    return calls


_OPEN = re.compile(r"<tool_call>")
_SCAN = json.JSONDecoder(strict=False).scan_once
_BLOCK = re.compile(r"<tool_call>([^<]+(?:<(?!/?tool_call>)[^<]*)*)</tool_call>")


def same_result(raw: str) -> ParseResult:
    """parse()'s result for well-formed Hermes blocks in prose, and nothing else."""
    calls, segments, text = [], [], Joiner()
    pos = 0
    for m in _OPEN.finditer(raw):
        i = m.start()
        if i < pos:
            continue
        if i > pos:
            segments.append(Segment("text", pos, i))
            text.add(raw[pos:i])
        block = _BLOCK.match(raw, i)
        payload = block.group(1).strip(" \t\n\r")
        call, _ = _SCAN(payload, 0)
        pos = block.end()
        calls.append(make_call(call["name"], call["arguments"], None, "tool", "hermes", (i, pos), (), None))
        segments.append(Segment("call", i, pos))
        text.mark_cut()
    if pos < len(raw):
        segments.append(Segment("text", pos, len(raw)))
        text.add(raw[pos:])
    return ParseResult(text=text.text(), calls=calls, segments=segments)


def time_rounds(fns, rounds: int = 15, budget: float = 0.05) -> list[list[float]]:
    """Seconds per call of each fn in each of `rounds` rounds, taken in turn (so that a
    busy spell of the machine hits both sides), in CPU time (time.process_time): wall
    time on a shared machine measures the neighbours. Each fn is repeated to about
    `budget` seconds a round."""
    numbers = []
    for fn in fns:
        t0 = time.process_time()
        fn()
        numbers.append(max(1, int(budget / max(time.process_time() - t0, 1e-6))))
    times: list[list[float]] = [[] for _ in fns]
    for _ in range(rounds):
        for k, (fn, number) in enumerate(zip(fns, numbers)):
            t0 = time.process_time()
            for _ in range(number):
                fn()
            times[k].append((time.process_time() - t0) / number)
    return times


def main() -> None:
    toolgram.parse("<tool_call>{}</tool_call>")  # build the grammars outside the timing
    print(
        f"{'reply':>8} {'calls':>6} {'regex ms':>10} {'parse ms':>10} {'ratio':>7} {'(median)':>9}"
        f" {'same result ms':>15} {'ratio':>7} {'+ segments read':>16}"
    )
    for size in (150, 2_000, 100_000):  # (150: one short paragraph and one call)
        raw = hermes_reply(size)
        expected = regex_extract(raw)
        result = toolgram.parse(raw, max_chars=len(raw))
        assert [c.name for c in result.calls] == [c["name"] for c in expected], "parsers disagree"
        lean = same_result(raw)
        assert (lean.text, lean.calls, lean.segments) == (result.text, result.calls, result.segments), "not the same result"
        times = time_rounds(
            [
                lambda: regex_extract(raw),
                lambda: toolgram.parse(raw, max_chars=len(raw)),
                lambda: same_result(raw),
                lambda: toolgram.parse(raw, max_chars=len(raw)).segments,
            ]
        )
        t_regex, t_parse, t_same, _ = (min(t) for t in times)
        # The ratio of the best times, and the median of each round's ratio (parse and
        # the regex timed one after the other): the second moves less with the machine.
        median = statistics.median(p / r for p, r in zip(times[1], times[0]))
        # (parse() makes the segments of a run of calls when they are first read: the
        # last column is parse() and that, against the regex, the median of the rounds.)
        with_segments = statistics.median(p / r for p, r in zip(times[3], times[0]))
        print(
            f"{len(raw):>8} {len(expected):>6} {t_regex * 1e3:>10.3f} {t_parse * 1e3:>10.3f} {t_parse / t_regex:>6.2f}x"
            f" {median:>8.2f}x {t_same * 1e3:>15.3f} {t_same / t_regex:>6.2f}x {with_segments:>15.2f}x"
        )

    # A one-paragraph reply with no call, against one compiled search for every format's
    # start marker (what any reader must at least do to tell that there is no call).
    starts = sorted({m for f in _formats() for m in f.starts}, key=len, reverse=True)
    any_start = re.compile("|".join(map(re.escape, starts)))
    prose = " ".join(part.split("<tool_call>")[0].strip() for part in hermes_reply(4000).split("</tool_call>"))[:600]
    assert not toolgram.parse(prose).calls and any_start.search(prose) is None
    t_search, t_parse = time_rounds([lambda: any_start.search(prose), lambda: toolgram.parse(prose)])
    median = statistics.median(p / r for p, r in zip(t_parse, t_search))
    print(
        f"no call, {len(prose)} characters: parse {min(t_parse) * 1e3:.4f} ms, one search for any of"
        f" {len(starts)} start markers {min(t_search) * 1e3:.4f} ms: {median:.1f}x (median; best / best"
        f" {min(t_parse) / min(t_search):.1f}x; target <= 3)"
    )


def _formats() -> list:
    from toolgram._grammar.registry import default_registry

    return list(default_registry().select())


if __name__ == "__main__":
    main()
