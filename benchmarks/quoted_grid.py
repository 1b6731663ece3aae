"""The two costs of instring.py's rule, counted on one grid: a call quoted in a string of
a call no format reads that RUNS (an invented call), and a real call after prose that left
a string open that is LOST (read as quoted). A change to the rule should lower one count
without raising the other.

    python benchmarks/quoted_grid.py [--show 5] [--stream] [--by] [--shown] [--src DIR]

Quoted: 14 marker formats x the string wrappers x text around the call in the string
(tests/test_quoted_calls.py's, plus line breaks and blank lines before and after the call,
fenced blocks); `rm_rf` must not run. Real: the same formats x prose leaving a string open
(JSON, Python, Gemma; in code fences, before blank lines) x prose after the call; `search`
must be read. --stream also feeds each reply in 7-character deltas and counts those that
differ from parse(). --shown also counts calls the prose shows (QA18 Q14: quoted in a
sentence, in a ```text block; test_quoted_calls.SHOWN) that run, and real calls beside
those shapes (SHOWN_GUARDS) that are lost.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

# (--src DIR: another tree's src, its grammars beside it, to count a change's before and after.)
_SRC = sys.argv[sys.argv.index("--src") + 1] if "--src" in sys.argv else str(Path(__file__).resolve().parent.parent / "src")
sys.path.insert(0, _SRC)
sys.path.insert(1, str(Path(__file__).resolve().parent.parent / "tests"))

from test_quoted_calls import AFTER, AROUND, CODE_LEFT_OPEN, FORMATS, LEFT_OPEN, SHOWN, SHOWN_GUARDS, TOOLS, WRAPPERS, _call  # noqa: E402

from toolgram import StreamParser, parse  # noqa: E402

# More text around the quoted call in its string: paragraphs and fences the string holds.
MORE_AROUND = [
    ("Docs:\n\n", ""), ("Docs:\n\n", "\nThat is all."), ("Docs:\n\n", "\n"), ("a\n\nb\n", "\nc\n"),
    ("x ", "\n\nmore\n"), ("Docs:\n\n", "\n\nmore\n"), ("Example:\n```\n", "\n```\n"), ("Example:\n\n```\n", "\n```\n"),
]
# More prose leaving a string open before a real call.
MORE_LEFT_OPEN = [
    'Saving {"path": "C:\\dir\\"} now.\n\n', 'Saving {"path": "C:\\dir\\"} now.\n```\n', "Try [f(q='x\n\n",
    'Try f(q="x\n\n', '```json\n{"path": "C:\\dir\\"}\n```\n', 'Run: {"cmd": "ls\n\n',
]
# (Those closing the string as a value, `"}`, `")`, `')`: the text is then the quoted
# shape's; counted apart.)
MORE_AFTER = ['\nDone"}', '\n\n"}', '\n")', "\nThat's it')", '\nSee "docs", "faq".']

def _key(result) -> tuple:
    return ([(c.name, c.arguments, c.repairs) for c in result.calls], result.errors, result.text)


def _stream(raw: str, size: int = 7):
    s = StreamParser(TOOLS)
    for i in range(0, len(raw), size):
        s.feed(raw[i : i + size])
    return s.close()


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--show", type=int, default=0)
    ap.add_argument("--stream", action="store_true")
    ap.add_argument("--by", action="store_true", help="counts by shape (formats summed)")
    ap.add_argument("--src", help="the src directory to import toolgram from (default: this tree's)")
    ap.add_argument("--shown", action="store_true", help="also count calls the prose shows (QA18 Q14) and their guards")
    args = ap.parse_args()
    ran, lost, differ, total = Counter(), Counter(), 0, Counter()
    shown: list = []
    for fmt in FORMATS:
        quoted = _call(fmt, "rm_rf", {"p": "/"})
        for before, after in WRAPPERS:
            if "'" in before and "'" in quoted:
                continue
            for pre, post in AROUND + MORE_AROUND:
                raw = before + pre + quoted + post + after
                r = parse(raw, TOOLS)
                total["quoted"] += 1
                if any(c.name == "rm_rf" for c in r.calls):
                    ran[(before, pre, post)] += 1
                    shown.append(("ran", raw))
                if args.stream and _key(_stream(raw)) != _key(r):
                    differ += 1
                    shown.append(("differ", raw))
        real = _call(fmt, "search", {"q": "x"})
        pairs = [(p, a) for p in LEFT_OPEN + MORE_LEFT_OPEN for a in AFTER + MORE_AFTER] + CODE_LEFT_OPEN
        for before, after in pairs:
            raw = before + real + after
            r = parse(raw, TOOLS)
            total["real"] += 1
            if not any(c.name == "search" and c.arguments == {"q": "x"} for c in r.calls):
                kind = "lost, told" if r.errors else "lost"
                if after in MORE_AFTER:
                    kind = "mirror " + kind
                lost[(before, after, kind)] += 1
                shown.append((kind, raw))
            if args.stream and _key(_stream(raw)) != _key(r):
                differ += 1
                shown.append(("differ", raw))
        if args.shown:
            for before, after in SHOWN:
                raw = before + quoted + after
                r = parse(raw, TOOLS)
                total["shown"] += 1
                if any(c.name == "rm_rf" for c in r.calls):
                    ran[("shown", before, after)] += 1
                    shown.append(("shown ran", raw))
                if args.stream and _key(_stream(raw)) != _key(r):
                    differ += 1
                    shown.append(("differ", raw))
            for before, after in SHOWN_GUARDS:
                raw = before + real + after
                r = parse(raw, TOOLS)
                total["guards"] += 1
                if not any(c.name == "search" and c.arguments == {"q": "x"} for c in r.calls):
                    lost[(before, after, "guard lost")] += 1
                    shown.append(("guard lost", raw))
                if args.stream and _key(_stream(raw)) != _key(r):
                    differ += 1
                    shown.append(("differ", raw))
    if args.shown:
        print(f"shown calls run: {sum(n for k, n in ran.items() if k[0] == 'shown')} of {total['shown']}; "
              f"guards lost: {sum(n for k, n in lost.items() if k[2] == 'guard lost')} of {total['guards']}")
        for k in [k for k in ran if k[0] == "shown"]:
            del ran[k]
        for k in [k for k in lost if k[2] == "guard lost"]:
            del lost[k]
    print(f"quoted calls run: {sum(ran.values())} of {total['quoted']}")
    if args.by:
        for k, n in sorted(ran.items(), key=str):
            print(f"  {n:3} {k!r}")
    silent = sum(n for (b, a, k), n in lost.items() if k == "lost")
    mirror = sum(n for (b, a, k), n in lost.items() if k.startswith("mirror"))
    print(f"real calls lost: {sum(lost.values()) - mirror} of {total['real']} (silent {silent}); "
          f"and {mirror} where the prose after it closes the string as a value (the quoted shape's mirror)")
    if args.by:
        for k, n in sorted(lost.items(), key=str):
            print(f"  {n:3} {k!r}")
    if args.stream:
        print(f"streams differing: {differ}")
    by_kind: Counter = Counter()
    for kind, raw in shown:
        if by_kind[kind] < args.show:
            print(kind, repr(raw))
        by_kind[kind] += 1
    return 1 if differ else 0


if __name__ == "__main__":
    raise SystemExit(main())
