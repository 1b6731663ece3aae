"""How often does StreamParser(announce="name") withdraw a call it sent by its name?

    python benchmarks/announced.py                 # tests/corpus, chunkings 1 to 3
    python benchmarks/announced.py --seeds 1,2,3,4,5
    python benchmarks/announced.py --formats glm45_arg_kv,minimax_m2_invoke

What `CompletionStream(arguments="as_written")` and `toolgram serve` (both by default)
trade (docs/streaming.md, "Arguments as written"): each corpus reply is streamed in the
replay backend's pieces (1-12 characters, tests/serve/replay_backend.py, one chunking per
seed) with announce="name". Counted, by format and by group (captured or reference
replies, `smollm2_*`, `reference*`, `seed_*`; constructed cases): the calls sent by name
before the delta that ends them ("early"), how many of those were then withdrawn
(CallCancelled), of those how many were sent again whole (the feed that withdrew the call
completed one of the same name: arguments that did not start with what was sent, a span
that moved), and the argument deltas sent before a call's end. The totals are by how the
arguments of the format a case is filed under stream: "json" (a JSON object whose name comes first, JsonEcho) or
"params" (XML-ish parameters of the tags its header declares, `stream_param:`, XmlParamEcho).
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
from toolgram._grammar.registry import default_registry  # noqa: E402

COLUMNS = ("early", "withdrawn", "resent", "early deltas")


def kind_of(fmt: str) -> str:
    declared = default_registry().formats.get(fmt)
    if declared is not None and declared.stream_param is not None:
        return "params"
    return "python" if declared is not None and declared.stream_python else "json"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", default="1,2,3", help="chunkings (replay backend seeds)")
    ap.add_argument("--formats", default="", help="only the corpus cases filed under these formats (comma-separated)")
    args = ap.parse_args()
    seeds = [int(s) for s in args.seeds.split(",")]
    only = set(filter(None, args.formats.split(",")))
    counts: dict[tuple[str, str], collections.Counter] = collections.defaultdict(collections.Counter)
    for case in corpus_cases():
        if only and case.format not in only:
            continue
        group = "real" if case.name.startswith(("smollm2_", "reference", "seed_")) else "constructed"
        for seed in seeds:
            sp = StreamParser(case.tools, formats=case.formats, in_think=case.in_think, truncated=case.truncated, announce="name")
            batches = [sp.feed(piece) for piece in pieces(case.raw, seed)] + [sp.flush()]
            open_early: set[int] = set()
            starts: list[CallStart] = []
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
                        name = next(s.name for s in starts if s.index == e.index)
                        if any(type(d) is CallDone and d.call.name == name for d in batch):
                            counts[case.format, group]["resent"] += 1
                    if kind is CallStart:
                        starts.append(e)
    head = "".join(f" {c:>12}" for c in COLUMNS)
    print(f"{'format':<20} {'group':<12}{head}")
    total: dict[tuple[str, str], collections.Counter] = collections.defaultdict(collections.Counter)
    for (fmt, group), c in sorted(counts.items()):
        if c["early"]:
            print(f"{fmt:<20} {group:<12}" + "".join(f" {c[k]:>12}" for k in COLUMNS))
            total[kind_of(fmt), group].update(c)
            total["all", group].update(c)
    for (kind, group), c in sorted(total.items()):
        print(f"{kind:<20} {group:<12}" + "".join(f" {c[k]:>12}" for k in COLUMNS))
    return 0


if __name__ == "__main__":
    sys.exit(main())
