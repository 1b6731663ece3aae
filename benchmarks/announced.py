"""How often does StreamParser(announce="name") withdraw a call it sent by its name?

    python benchmarks/announced.py                 # tests/corpus, chunkings 1 to 3
    python benchmarks/announced.py --seeds 1,2,3,4,5

What `CompletionStream(arguments="as_written")` and `toolgram serve --stream-arguments`
trade (docs/streaming.md, "Arguments as written"): each corpus reply is streamed in the
replay backend's pieces (1-12 characters, tests/serve/replay_backend.py, one chunking per
seed) with announce="name". Counted, by format and by group (captured or reference
replies, `smollm2_*`, `reference*`, `seed_*`; constructed cases): the calls sent by name
before the delta that ends them ("early"), how many of those were then withdrawn
(CallCancelled), and the argument deltas sent before a call's end.
"""

from __future__ import annotations

import argparse
import collections
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "src"), str(ROOT / "tests"), str(ROOT / "tests" / "serve")]

from conftest import corpus_cases  # noqa: E402
from replay_backend import pieces  # noqa: E402

from toolgram import ArgumentsDelta, CallCancelled, CallDone, CallStart, StreamParser  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", default="1,2,3", help="chunkings (replay backend seeds)")
    args = ap.parse_args()
    seeds = [int(s) for s in args.seeds.split(",")]
    counts: dict[tuple[str, str], collections.Counter] = collections.defaultdict(collections.Counter)
    for case in corpus_cases():
        group = "real" if case.name.startswith(("smollm2_", "reference", "seed_")) else "constructed"
        for seed in seeds:
            sp = StreamParser(case.tools, formats=case.formats, in_think=case.in_think, truncated=case.truncated, announce="name")
            batches = [sp.feed(piece) for piece in pieces(case.raw, seed)] + [sp.flush()]
            open_early: set[int] = set()
            for batch in batches:
                ended = {e.index for e in batch if type(e) in (CallDone, CallCancelled)}
                for e in batch:
                    kind = type(e)
                    if kind is CallStart and e.index not in ended:
                        open_early.add(e.index)
                        counts[case.format, group]["early"] += 1
                    elif kind is ArgumentsDelta and e.index in open_early and e.index not in ended:
                        counts[case.format, group]["early deltas"] += 1
                    elif kind is CallCancelled and e.index in open_early:
                        counts[case.format, group]["withdrawn"] += 1
    print(f"{'format':<20} {'group':<12} {'early':>6} {'withdrawn':>9} {'early deltas':>12}")
    total: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for (fmt, group), c in sorted(counts.items()):
        if c["early"]:
            print(f"{fmt:<20} {group:<12} {c['early']:>6} {c['withdrawn']:>9} {c['early deltas']:>12}")
            total[group].update(c)
    for group, c in sorted(total.items()):
        print(f"{'all':<20} {group:<12} {c['early']:>6} {c['withdrawn']:>9} {c['early deltas']:>12}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
