"""Differential check for work on StreamParser's per-delta paths: every feed()'s event
list, flush()'s and close()'s result, compared between two source trees (e.g. an export
of main and a branch), over the streaming benchmark's replies (bench_stream.make_reply,
20 KB and 100 KB, with its tools and without; bench_fast.five_calls), every corpus case
(tests/corpus, with its sibling .tools.json when there is one) and fuzz inputs
(fuzz.make_input, seed 7, indexes 7500000 on), each in deltas of 1 character (not the
100 KB replies), 8, and a random chunking, with announce="done" and "name".

    git -C /work/main archive HEAD | tar -x -C /tmp/base
    python benchmarks/stream_events_diff.py --base /tmp/base/src [--src src] [--fuzz 1500]
        [--chunks 1,2,3,7,8,64,random] [--both-tools]

`--both-tools`: each case that has tools is also streamed without any. `--dump SRC OUT
--shard K/N` writes one tree's hashes for every Nth case (run shards in parallel, then
compare the JSON files). STREAM_DIFF_CAPTURES=1 adds the shared captures
(/work/shared/corpus/*.jsonl, read in place, never copied), =only streams them alone.

Each tree runs in its own process (`--dump SRC OUT`), which writes a hash per case (the
reprs of its events, feed by feed, then flush() and close()); the cases whose hashes differ
are printed, and the exit status is 1 if any do.
"""

from __future__ import annotations

import argparse
import glob
import hashlib
import json
import os
import random
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
CORPUS = HERE.parent / "tests" / "corpus"


def inputs(nfuzz: int) -> list[tuple]:
    import bench_fast
    import fuzz
    from bench_stream import TOOLS, make_reply

    found = []
    for size in (20_000, 100_000):
        found.append((f"bench{size}", make_reply(size), TOOLS, None, False))
        found.append((f"bench{size}-notools", make_reply(size), None, None, False))
    found.append(("five_calls", bench_fast.five_calls(), None, None, False))
    for path in sorted(glob.glob(str(CORPUS / "*" / "*.txt"))):
        raw = Path(path).read_text(encoding="utf-8")
        tools_path = path[:-4] + ".tools.json"
        tools = json.loads(Path(tools_path).read_text()) if os.path.exists(tools_path) else None
        found.append((os.path.relpath(path, CORPUS), raw, tools, None, False))
    # (The shared captures, /work/shared/corpus, where present: never copied into the repository.)
    for path in sorted(glob.glob(str(HERE.parent.parent / "shared" / "corpus" / "*.jsonl"))) if os.environ.get("STREAM_DIFF_CAPTURES") else ():
        for n, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines()):
            raw = json.loads(line).get("raw") if line.strip() else None
            if isinstance(raw, str):
                found.append((f"{os.path.basename(path)}:{n}", raw, None, None, False))
    for i in range(7_500_000, 7_500_000 + nfuzz):
        inp = fuzz.make_input(7, i)
        found.append((f"fuzz{i}", inp.raw, inp.case_tools, inp.formats, inp.in_think))
    return found


def chunks(raw: str, how: int | str, rng: random.Random):
    if how == "random":
        i = 0
        while i < len(raw):
            n = rng.choice((1, 2, 3, 5, 8, 13, 40, 200))
            yield raw[i : i + n]
            i += n
    else:
        for i in range(0, len(raw), how):
            yield raw[i : i + how]


def dump(src: str, out: str, nfuzz: int, hows: tuple = (1, 8, "random"), both: bool = False, shard: str = "0/1") -> None:
    sys.path[:0] = [src, str(HERE)]
    import toolgram
    from toolgram import StreamParser

    assert Path(toolgram.__file__).resolve().is_relative_to(Path(src).resolve()), toolgram.__file__
    found = {}
    cases = inputs(nfuzz)
    if os.environ.get("STREAM_DIFF_CAPTURES") == "only":
        cases = [c for c in cases if ".jsonl:" in c[0]]
    if both:
        # (--both-tools: each case with its tools also read without any)
        cases += [(name + " / no tools", raw, None, formats, in_think) for name, raw, tools, formats, in_think in cases if tools is not None]
    k, n = map(int, shard.split("/"))
    for name, raw, tools, formats, in_think in cases[k::n]:
        max_chars = len(raw) + 1 if name.startswith("bench") else 32_768
        for how in hows:
            if how == 1 and len(raw) > 40_000:
                continue
            for announce in ("done", "name"):
                rng = random.Random(f"{name}/{how}")
                h = hashlib.sha1()
                try:
                    sp = StreamParser(tools, formats=formats, in_think=in_think, announce=announce, max_chars=max_chars)
                    for delta in chunks(raw, how, rng):
                        h.update(repr(sp.feed(delta)).encode() + b"|")
                    h.update(repr(sp.flush()).encode())
                    h.update(repr(sp.close()).encode())
                except Exception as exc:  # noqa: BLE001 - a raise is a result to compare too
                    h.update(("raised " + repr(exc)).encode())
                found[f"{name} / deltas {how} / announce={announce}"] = h.hexdigest()
    Path(out).write_text(json.dumps(found))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--base", help="the source tree to compare against (e.g. an export of main's src)")
    ap.add_argument("--src", default=str(HERE.parent / "src"))
    ap.add_argument("--fuzz", type=int, default=1500, help="how many fuzz inputs")
    ap.add_argument("--chunks", default="1,8,random", help="the chunkings, e.g. 1,2,3,7,8,64,random")
    ap.add_argument("--shard", default="0/1", help="K/N: only every Nth case from the Kth (--dump)")
    ap.add_argument("--both-tools", action="store_true", help="each case with tools also read without")
    ap.add_argument("--dump", nargs=2, metavar=("SRC", "OUT"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.dump:
        hows = tuple(c if c == "random" else int(c) for c in args.chunks.split(","))
        dump(*args.dump, args.fuzz, hows, args.both_tools, args.shard)
        return
    if not args.base:
        ap.error("--base is required")
    with tempfile.TemporaryDirectory() as tmp:
        got = []
        for i, src in enumerate((args.base, args.src)):
            out = os.path.join(tmp, f"{i}.json")
            cmd = [sys.executable, __file__, "--dump", str(Path(src).resolve()), out, "--fuzz", str(args.fuzz), "--chunks", args.chunks]
            cmd += ["--both-tools"] if args.both_tools else []
            env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
            subprocess.run(cmd, check=True, env=env)
            got.append(json.loads(Path(out).read_text()))
    base, mine = got
    differ = [k for k in base if base[k] != mine.get(k)] + [k for k in mine if k not in base]
    for k in differ[:50]:
        print("differs:", k)
    print(f"{len(base)} cases, {len(differ)} differ")
    sys.exit(1 if differ else 0)


if __name__ == "__main__":
    main()
