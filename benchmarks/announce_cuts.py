"""Does StreamParser(announce="name") keep the adapter's contract on cut and changed replies?

    python benchmarks/announce_cuts.py                      # every corpus case, every cut
    python benchmarks/announce_cuts.py --formats cohere_cofl_xml --show 5
    python benchmarks/announce_cuts.py --jobs 2 --out found.jsonl

The contract (docs/serve.md, "Streaming"; issue 21): nothing sent is ever taken back; a
call gets its index and id once, when its name is certain; the ids equal parse()'s. A
stream cannot know how a reply goes on, so a call it names early must be a call of every
reply that begins with what it had read. This builds such replies from every corpus case
(tests/corpus/*/*.txt, with its tools, formats, in_think and truncated), cut at every
position i (in a case over 400 characters: up to 400, near each call's start and end,
and every 37th position between), and, where i is inside a call parse() reads, the same cut followed by:

  prose     "\\nDone." (the model stopped writing the call and talked);
  skip      the case's own text from its next close (`</`, `}`, `]`, `)`) at least one
            character on, whole and cut 8 characters into it (a value left out, its
            closers written: `<cofl:tool_call id="0" name="f"></cofl:v`).

Each reply is checked by tests/_announce_contract.py's check(), streamed with announce="name" in two chunkings: the cut text in one delta,
then one a character ("cut"); one a character from 16 characters before the cut ("near");
the continuation one a character for 64 characters, the rest in one delta. (`--chunkings
1`: one a character throughout, the square of a case's length.) Counted, per format:

  withdrawn_kept  a CallCancelled for a call parse() keeps (same name and id): the call
                  was withdrawn and sent again;
  resent          a CallCancelled whose batch or a later one sends a call of the same
                  name that parse() keeps at the place the withdrawn one would have had
                  (its id moved with its start: no other call of that name is
                  written between where the withdrawn id was made and the kept call);
  index           no call was withdrawn, and a CallStart's index or id is not parse()'s
                  (its place in result.calls, result.to_openai_message()'s id); or,
                  after a withdrawal, the calls not withdrawn are not parse()'s;
  withdrawn_ok    a CallCancelled for a call parse() lacks (allowed: prose, a tool not
                  offered, a failure);
  close           the stream's close() differs from parse().

--out writes each failing reply (one per format, kind and case) as a JSON line
{"format", "case", "raw", "tools", "formats", "in_think", "truncated", "kind", "chunking"}
for tests/test_announce_cuts.py.
"""

from __future__ import annotations

import argparse
import collections
import json
import multiprocessing
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "src"), str(ROOT / "tests")]

from conftest import corpus_cases  # noqa: E402

from _announce_contract import CHUNKINGS, KINDS, check  # noqa: E402

from toolgram import CallCancelled, CallDone, CallStart, StreamParser, parse  # noqa: E402

_CLOSES = "}])"
_SKIP_CUT = 8


_EVERY = 400  # (a case is cut at every position up to here, and near each call's ends)
_NEAR_CALL = 96
_STRIDE = 37  # (elsewhere every _STRIDE-th position: a long value's middle)


def cuts(raw: str, spans: list[tuple[int, int]], budget: int = 0) -> list[int]:
    """Where raw is cut: everywhere in a short case; in a long one (a 10 KB write_file)
    up to _EVERY, within _NEAR_CALL after a call's start or around its end, and every
    _STRIDE-th position between (each cut costs a parse of its length). `budget`: at most
    that many, those nearest after a call's start first (where its name becomes certain),
    then around its end, then the rest in steps."""
    n = len(raw)
    first = [i for a, _ in spans for i in range(a + 1, min(n, a + _NEAR_CALL))]
    ends = [i for _, b in spans for i in range(max(1, b - _NEAR_CALL), min(n, b + _NEAR_CALL))]
    if n <= _EVERY:
        rest = list(range(1, n))
    else:
        rest = list(range(1, _EVERY)) + list(range(_EVERY, n, _STRIDE))
    if not budget:
        return sorted(set(first) | set(ends) | set(rest))
    if budget < n:
        # (a sample: the first positions after each start, then ends, then a stride)
        first = sorted(set(first), key=lambda i: min(i - a for a, _ in spans if a < i))
        step = max(1, n // budget)
        rest = list(range(1, n, step))
    out: dict[int, None] = {}
    for i in (*first, *ends, *rest):
        if len(out) >= budget:
            break
        out[i] = None
    return sorted(out)


def replies(raw: str, spans: list[tuple[int, int]], budget: int = 0) -> list[tuple[str, int]]:
    """(reply, where its cut is) for every cut of raw and its continuations."""
    at = cuts(raw, spans, budget)
    out = [(raw[:i], i) for i in at]
    for i in at:
        if not any(a < i <= b for a, b in spans):
            continue
        out.append((raw[:i] + "\nDone.", i))
        for k in range(i + 1, len(raw)):
            if raw.startswith("</", k) or raw[k] in _CLOSES:
                out.append((raw[:i] + raw[k:], i))
                if len(raw) - k > _SKIP_CUT:
                    out.append((raw[:i] + raw[k : k + _SKIP_CUT], i))
                break
    return out


def names_early(case: dict) -> bool:
    """Whether the case, streamed 4 characters a delta, names a call before the delta that
    ends it (with --budget, a case that does not is skipped: its cuts would be cut calls
    that are sent whole)."""
    sp = StreamParser(case["tools"], formats=case["formats"], in_think=case["in_think"], truncated=case["truncated"], announce="name")
    raw = case["raw"]
    for i in range(0, len(raw), 4):
        batch = sp.feed(raw[i : i + 4])
        ended = {e.index for e in batch if type(e) in (CallDone, CallCancelled)}
        if any(type(e) is CallStart and e.index not in ended for e in batch):
            return True
    return False


def run_case(args: tuple) -> tuple[str, str, collections.Counter, list[dict]]:
    case, chunkings, budget = args
    counts: collections.Counter = collections.Counter()
    found: dict[str, dict] = {}
    result = parse(case["raw"], case["tools"], formats=case["formats"], in_think=case["in_think"], truncated=case["truncated"])
    spans = [c.span for c in result.calls]
    if budget and not names_early(case):
        return case["format"], case["case"], counts, []
    for reply, cut in replies(case["raw"], spans, budget):
        counts["replies"] += 1
        for chunking in chunkings:
            kinds = check(case, reply, cut, chunking)
            for kind in set(kinds):
                counts[kind] += 1
                if kind != "withdrawn_ok" and (kind not in found or len(reply) < len(found[kind]["raw"])):
                    found[kind] = {k: case[k] for k in ("format", "case", "tools", "formats", "in_think", "truncated")} | {"raw": reply, "kind": kind, "chunking": chunking, "cut": cut}
    return case["format"], case["case"], counts, list(found.values())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--formats", default="", help="only the corpus cases filed under these formats (comma-separated)")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--out", default="", help="write the failing replies here (JSON lines)")
    ap.add_argument("--chunkings", default=",".join(CHUNKINGS), help='cut, near, 1 (one delta a character: the square of a case\'s length)')
    ap.add_argument("--budget", type=int, default=0, help="at most this many cuts a case (a sample: see cuts), and only the cases that name a call early (names_early); 0: all")
    ap.add_argument("--show", type=int, default=0, help="print this many failing replies")
    args = ap.parse_args()
    only = set(filter(None, args.formats.split(",")))
    cases = [
        {"format": c.format, "case": c.name, "raw": c.raw, "tools": c.tools, "formats": c.formats, "in_think": c.in_think, "truncated": c.truncated}
        for c in corpus_cases()
        if not only or c.format in only
    ]
    cases.sort(key=lambda c: -len(c["raw"]))  # (the long ones first: the pool ends together)
    totals: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    found: list[dict] = []
    chunkings = tuple(args.chunkings.split(","))
    work = [(c, chunkings, args.budget) for c in cases]
    if args.jobs > 1:
        with multiprocessing.Pool(args.jobs) as pool:
            got = list(pool.imap_unordered(run_case, work, chunksize=4))
    else:
        got = [run_case(w) for w in work]
    for fmt, _name, counts, failing in got:
        totals[fmt].update(counts)
        found.extend(failing)
    cols = ("replies",) + KINDS + ("close",)
    bad = (*KINDS[:3], "close")
    print(f"{'format':<24}" + "".join(f" {c:>14}" for c in cols))
    whole: collections.Counter = collections.Counter()
    for fmt in sorted(totals):
        whole.update(totals[fmt])
        if any(totals[fmt][k] for k in bad) or args.formats:
            print(f"{fmt:<24}" + "".join(f" {totals[fmt][c]:>14}" for c in cols))
    print(f"{'all':<24}" + "".join(f" {whole[c]:>14}" for c in cols))
    found.sort(key=lambda f: (f["format"], f["kind"], len(f["raw"])))
    for f in found[: args.show]:
        print(f["format"], f["kind"], f["chunking"], f["case"], repr(f["raw"]))
    if args.out:
        with open(args.out, "w") as fh:
            for f in found:
                fh.write(json.dumps(f, ensure_ascii=False) + "\n")
    return 1 if any(whole[k] for k in bad) else 0


if __name__ == "__main__":
    sys.exit(main())
