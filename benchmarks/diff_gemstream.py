"""Stream events of Gemma 4 replies, per feed(), compared between two source trees (issue 17:
gemcall's fast frame in a stream must announce each call at the same delta as the general way).

    python benchmarks/diff_gemstream.py BASE_SRC NEW_SRC [FUZZ_N] [FUZZ_FROM]

runs itself under each tree (PYTHONPATH=BASE_SRC, then NEW_SRC) as a worker that streams every
case in deltas of 1, 7, 16, 64 and 256 characters and random ones (seeded per case), with
announce="done" and "name", and records the events each feed() returned (repr, ids included)
and close()'s result; then compares the two, case by case, and prints the first difference of
each mismatch (at most 10). The cases: the corpus cases holding `<|tool_call>` (with their
tools and options), replies of many Gemma calls (back to back, with prose, with tools, calls
quoted in an unclosed Gemma string), and fuzz seed 7's inputs from index FUZZ_FROM (7400000) that
hold `<|tool_call>` (FUZZ_N indexes looked at; default 3000), each without tools and with the
names it calls as tools.
"""

import hashlib
import json
import os
import pickle
import random
import re
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
CORPUS = HERE.parent / "tests" / "corpus"
SIZES = (1, 7, 16, 64, 256, 0)  # (0: random deltas, 1 to 80 characters)
FUZZ_FROM = 7400000


def gemma_many(n_chars, seed, prose=0.3):
    r = random.Random(seed)
    out, tot = [], 0
    while tot < n_chars:
        name = r.choice(["get_weather", "search", "set_timer", "lookup", "send_mail"]) + str(r.randint(0, 99))
        args = []
        for j in range(r.randint(1, 4)):
            k = r.choice(["city", "q", "n", "flag", "unit", "limit"]) + str(j)
            kind = r.randint(0, 3)
            if kind == 0:
                v = '<|"|>' + r.choice(["Paris", "Lyon", "x y z", "hello world"]) + '<|"|>'
            elif kind == 1:
                v = str(r.randint(0, 1000))
            elif kind == 2:
                v = r.choice(["true", "false"])
            else:
                v = "[" + ",".join(str(r.randint(0, 9)) for _ in range(3)) + "]"
            args.append(f"{k}:{v}")
        c = "<|tool_call>call:" + name + "{" + ",".join(args) + "}<tool_call|>"
        if r.random() < prose:
            c += r.choice(["Okay. ", "\n", " ", "<turn|>", "\n\nNext:\n", 'He said "', "`"])
        out.append(c)
        tot += len(c)
    return "".join(out)


def gemma_short(n_chars, seed):
    r = random.Random(seed)
    out, tot = [], 0
    while tot < n_chars:
        c = "<|tool_call>call:f%d{a:%d}<tool_call|>" % (r.randint(0, 9), r.randint(0, 99))
        out.append(c)
        tot += len(c)
    return "".join(out)


def gemma_open_strings(seed):
    """Calls between others whose Gemma string is left open (the calls after are quoted)."""
    r = random.Random(seed)
    parts = []
    for _ in range(40):
        k = r.random()
        if k < 0.15:
            parts.append('<|tool_call>call:write_file{content:<|"|>Two examples:\n')
        elif k < 0.25:
            parts.append('<|"|>}<tool_call|>')
        elif k < 0.3:
            parts.append('He said "')
        else:
            parts.append("<|tool_call>call:f%d{a:%d,b:<|\"|>x<|\"|>}<tool_call|>" % (r.randint(0, 9), r.randint(0, 99)))
        if r.random() < 0.3:
            parts.append(r.choice(["\n", " ok ", '"', "`"]))
    return "".join(parts)


def names_in(raw):
    return sorted(set(re.findall(r"call:([\w.\-]+)", raw)))[:20] + ["other"]


def cases(fuzz_n):
    out = []
    for path in sorted(CORPUS.glob("*/*.txt")):
        raw = path.read_bytes().decode("utf-8")
        if "<|tool_call>" not in raw:
            continue
        stem = path.with_suffix("")
        side = {}
        for key in ("tools", "formats", "in_think"):
            p = Path(f"{stem}.{key}.json")
            if p.exists():
                side[key] = json.loads(p.read_bytes().decode("utf-8"))
        tools = side.pop("tools", None)
        out.append((f"corpus:{path.parent.name}/{path.name}", raw, tools, side))
    for seed in range(3):
        for n in (600, 3000):
            raw = gemma_many(n, seed)
            out.append((f"many:{n}:{seed}", raw, None, {}))
            out.append((f"many_tools:{n}:{seed}", raw, names_in(raw)[::2], {}))
            out.append((f"many_tight:{n}:{seed}", gemma_many(n, seed + 10, 0.0), None, {}))
            out.append((f"short:{n}:{seed}", gemma_short(n, seed), None, {}))
        out.append((f"open_strings:{seed}", gemma_open_strings(seed), None, {}))
        out.append((f"open_strings_tools:{seed}", gemma_open_strings(seed + 5), ["f1", "f2", "f3", "write_file"], {}))
    out.append(("many:29000:3", gemma_many(29000, 3), None, {}))
    out.append(("short:29000:4", gemma_short(29000, 4), None, {}))
    if fuzz_n:
        sys.path.insert(0, str(HERE))
        import fuzz

        for i in range(FUZZ_FROM, FUZZ_FROM + fuzz_n):
            inp = fuzz.make_input(7, i)
            if "<|tool_call>" not in inp.raw:
                continue
            opts = {"formats": inp.formats, "in_think": inp.in_think}
            out.append((f"fuzz:7:{i}", inp.raw, None, opts))
            out.append((f"fuzz_tools:7:{i}", inp.raw, names_in(inp.raw), opts))
    return out


def chunks(raw, size, seed):
    if size:
        return [raw[i : i + size] for i in range(0, len(raw), size)]
    rng = random.Random(seed)
    out, i = [], 0
    while i < len(raw):
        n = rng.choice((1, 2, 3, 5, 8, 13, 16, 30, 64, 80))
        out.append(raw[i : i + n])
        i += n
    return out


def events(raw, tools, opts, size, announce, seed):
    from toolgram import StreamParser

    sp = StreamParser(tools, announce=announce, **opts)
    got = [repr(sp.feed(c)) for c in chunks(raw, size, seed)]
    got.append(repr(sp.close()))
    return got


def worker(fuzz_n, out_path, only=None):
    rows = {}
    for k, (name, raw, tools, opts) in enumerate(cases(fuzz_n)):
        if only is not None and name not in only:
            continue
        for size in SIZES:
            for announce in ("done", "name"):
                try:
                    got = events(raw, tools, opts, size, announce, k)
                except Exception as exc:  # (the worker goes on: the other tree's answer is compared)
                    got = ["raised " + repr(exc)]
                key = (name, size, announce)
                rows[key] = got if only is not None else hashlib.md5("\n".join(got).encode()).hexdigest()
    with open(out_path, "wb") as f:
        pickle.dump(rows, f)


def run(src, fuzz_n, only=None):
    fd, path = tempfile.mkstemp(suffix=".pkl")
    os.close(fd)
    env = dict(os.environ, PYTHONPATH=src)
    args = [sys.executable, __file__, "--worker", str(fuzz_n), path, str(FUZZ_FROM)]
    if only is not None:
        args.append(json.dumps(sorted(only)))
    subprocess.run(args, env=env, check=True)
    with open(path, "rb") as f:
        rows = pickle.load(f)
    os.unlink(path)
    return rows


def main():
    global FUZZ_FROM
    if sys.argv[1] == "--worker":
        FUZZ_FROM = int(sys.argv[4])
        only = set(json.loads(sys.argv[5])) if len(sys.argv) > 5 else None
        worker(int(sys.argv[2]), sys.argv[3], only)
        return 0
    base, new = sys.argv[1], sys.argv[2]
    fuzz_n = int(sys.argv[3]) if len(sys.argv) > 3 else 3000
    FUZZ_FROM = int(sys.argv[4]) if len(sys.argv) > 4 else FUZZ_FROM
    a, b = run(base, fuzz_n), run(new, fuzz_n)
    bad = sorted(k for k in a if a[k] != b.get(k))
    names = {k[0] for k in a}
    print(f"{len(names)} cases, {len(a)} streams compared, {len(bad)} differ")
    if bad:
        only = {k[0] for k in bad[:10]}
        da, db = run(base, fuzz_n, only), run(new, fuzz_n, only)
        for key in bad[:10]:
            x, y = da[key], db[key]
            for j, (p, q) in enumerate(zip(x, y)):
                if p != q:
                    at = next((c for c, (u, v) in enumerate(zip(p, q)) if u != v), min(len(p), len(q)))
                    lo = max(0, at - 150)
                    print(f"DIFF {key} feed {j}/{len(x)}, from character {lo}:\n  base {p[lo : at + 250]}\n  new  {q[lo : at + 250]}")
                    break
            else:
                print(f"DIFF {key}: {len(x)} vs {len(y)} feeds")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
