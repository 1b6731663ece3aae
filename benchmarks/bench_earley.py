"""The cost of `parser: earley`: one region read under the same grammar compiled as
LALR and as Earley (grammars/README.md, "Earley").

    python benchmarks/bench_earley.py

The grammar is an XML-ish call (a name, then `<param name=KEY>VALUE</param>` tags),
which LALR reads; the Earley copy differs only by its header line `parser: earley`.
Each reply is prose, one region of about SIZE characters, prose. Printed: the time
per region of toolgram.parse (the whole way: scanner, parser, builder) with each,
and their ratio; a stream of 8-character deltas for each (linear: the Earley region
is parsed once, at its end marker); and the ratio of Lark's own parse of the region
text (Earley vs LALR), for reference. Times are CPU time, the best of --repeat.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

import toolgram  # noqa: E402
from toolgram._stream.parser import StreamParser  # noqa: E402

BODY = r"""
start: "<<call>>" call "<</call>>"
call: name param*
name: NAME
param: "<param name=" key ">" value "</param>"
key: NAME
value: TEXT
NAME: /[A-Za-z_][A-Za-z0-9_]*/
TEXT: /[^<]+/
%ignore /\s+/
"""


def header(name: str, earley: bool) -> str:
    return f"// format: {name}\n// start: <<call>>\n// end: <</call>>\n" + ("// parser: earley\n" if earley else "")


def reply(size: int) -> str:
    params, n = [], 0
    while n < size:
        p = f'<param name=p{len(params)}>value number {len(params)}, with some words in it</param>\n'
        params.append(p)
        n += len(p)
    return "Let me check. <<call>>lookup\n" + "".join(params) + "<</call>> Done."


def best(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.process_time()
        fn()
        times.append(time.process_time() - t)
    return min(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=20)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        paths = {}
        for name, earley in (("bench_lalr", False), ("bench_earley", True)):
            paths[name] = Path(tmp) / f"{name}.lark"
            paths[name].write_text(header(name, earley) + BODY, encoding="utf-8")
        grammar_paths = list(paths.values())
        print(f"{'region':>8} {'LALR ms':>9} {'Earley ms':>10} {'ratio':>6}   {'stream L':>9} {'stream E':>9}   {'Lark only':>9}")
        for size in (200, 900, 3000, 8000):
            raw = reply(size)
            region = raw[raw.index("<<call>>") : raw.index("<</call>>") + len("<</call>>")]
            per = {}
            for name in paths:
                r = toolgram.parse(raw, grammar_paths=grammar_paths, formats=[name])
                assert len(r.calls) == 1 and not r.errors, (name, r.errors)
                per[name] = best(lambda: toolgram.parse(raw, grammar_paths=grammar_paths, formats=[name]), args.repeat)

            def streamed(name: str) -> float:
                def run() -> None:
                    sp = StreamParser(None, grammar_paths=grammar_paths, formats=[name])
                    for i in range(0, len(raw), 8):
                        sp.feed(raw[i : i + 8])
                    assert len(sp.close().calls) == 1

                return best(run, max(3, args.repeat // 4))

            fmts = {f.name: f for f in toolgram._grammar.registry.registry_for(grammar_paths).select([*paths])}
            lalr_lark = __import__("lark").Lark(BODY, parser="lalr", maybe_placeholders=False)
            earley_lark = fmts["bench_earley"].compiled.earley
            lark_ratio = best(lambda: earley_lark.parse(region), args.repeat) / best(lambda: lalr_lark.parse(region), args.repeat)
            lalr, earley = per["bench_lalr"], per["bench_earley"]
            print(
                f"{len(region):>8} {lalr * 1e3:>9.2f} {earley * 1e3:>10.2f} {earley / lalr:>5.0f}x"
                f"   {streamed('bench_lalr') * 1e3:>8.1f}m {streamed('bench_earley') * 1e3:>8.1f}m   {lark_ratio:>8.0f}x"
            )


if __name__ == "__main__":
    main()
