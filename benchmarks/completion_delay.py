"""When does a streamed call complete? Issue 21: "a call is completed by the delta that
ends it, not at the end of the stream, wherever the format can know it ended".

    PYTHONPATH=src python benchmarks/completion_delay.py   # tests/corpus, 8-char deltas
    python benchmarks/completion_delay.py --size 3 --formats minimax_m2_invoke,glm45_arg_kv
    python benchmarks/completion_delay.py --tail " Then done."   # each reply plus this text
    python benchmarks/completion_delay.py --list           # the cases held to flush()
    python benchmarks/completion_delay.py --tail "…" --stable   # only calls the tail leaves alone

Each corpus case is streamed (StreamParser, announce="done") in deltas of --size characters;
for each CallDone the reply position it came at (the end of the delta that brought it) is
set beside the call's span end. Counted by format: the calls, those done at flush(), and of
those the ones with text (not blanks) after their span, which the stream held although more
of the reply had come: "held". A call the format cannot know ended before the end of the
reply (a `llama3_json` object, a call whose close the reply left out) has no text after
it, or its text is the call's own, and counts as "at flush" only. Also the mean and the
largest number of characters between a call's end and its CallDone, before flush().

--stable leaves out the cases whose calls the tail changes (a call the end cut now runs
into the tail, a whole-reply JSON is no longer one): what is "held" then is a call the
stream completed only at flush() although parse() reads it the same with the tail, and
each format's row says what the formats table's "call done at" column says of it
(tests/test_call_done_at.py checks that column against these cases).
"""

from __future__ import annotations

import argparse
import collections
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# (toolgram from PYTHONPATH when set, so one checkout's script measures another's code)
sys.path[:0] = [str(ROOT / "tests")]
sys.path.append(str(ROOT / "src"))

from conftest import corpus_cases  # noqa: E402

from toolgram import CallDone, StreamParser, parse  # noqa: E402
from toolgram._grammar.catalog import builtin_formats  # noqa: E402

try:  # (a checkout from before the column: measured all the same)
    from toolgram._catalog import call_done_at
except ImportError:
    def call_done_at(fmt) -> str:
        return ""

FLUSH = -1


def done_at(case, raw: str, size: int) -> list[tuple[int, tuple[int, int]]]:
    """(position or FLUSH, span) of each CallDone, in order."""
    sp = StreamParser(case.tools, formats=case.formats, in_think=case.in_think, truncated=case.truncated)
    out = []
    for i in range(0, len(raw), size):
        for event in sp.feed(raw[i : i + size]):
            if isinstance(event, CallDone):
                out.append((min(i + size, len(raw)), event.call.span))
    for event in sp.flush():
        if isinstance(event, CallDone):
            out.append((FLUSH, event.call.span))
    return out


def _changed(case, raw: str) -> bool:
    """Whether the calls parse() reads in raw (the case's reply and the tail) are not the
    case's own."""
    def calls(text: str) -> list:
        result = parse(text, case.tools, formats=case.formats, in_think=case.in_think)
        return [(c.name, c.span, c.arguments) for c in result.calls]

    return calls(raw) != calls(case.raw)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=8)
    ap.add_argument("--formats", default="", help="comma-separated format directories (default: all)")
    ap.add_argument("--tail", default="", help="text added after each reply")
    ap.add_argument("--list", action="store_true", help="name the held calls")
    ap.add_argument("--stable", action="store_true", help="only the cases whose calls the tail does not change")
    args = ap.parse_args()
    only = set(filter(None, args.formats.split(",")))
    rows: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    delays: list[int] = []
    held_cases = []
    for case in corpus_cases():
        fmt = case.id.split("/")[0]
        if only and fmt not in only:
            continue
        raw = case.raw + args.tail
        if args.stable and args.tail and _changed(case, raw):
            continue
        row = rows[fmt]
        for at, (_, end) in done_at(case, raw, args.size):
            row["calls"] += 1
            if at != FLUSH:
                delays.append(max(0, at - end))
                continue
            row["at flush"] += 1
            if raw[end:].strip():
                row["held"] += 1
                held_cases.append(f"{case.id} (call ends at {end} of {len(raw)})")
    total: collections.Counter = collections.Counter()
    column = {f.name: call_done_at(f) for f in builtin_formats()}
    print(f"{'format':32} {'calls':>6} {'at flush':>9} {'held':>6}  call done at")
    for fmt in sorted(rows):
        row = rows[fmt]
        total.update(row)
        if row["held"] or args.formats:
            print(f"{fmt:32} {row['calls']:6} {row['at flush']:9} {row['held']:6}  {column.get(fmt, '')}")
    print(f"{'all (' + str(len(rows)) + ' formats)':32} {total['calls']:6} {total['at flush']:9} {total['held']:6}")
    if delays:
        print(f"before flush: {len(delays)} calls, characters from a call's end to its CallDone: mean {sum(delays) / len(delays):.1f}, max {max(delays)}")
    if args.list:
        print("\n".join(held_cases))


if __name__ == "__main__":
    main()
