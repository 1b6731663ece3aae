"""Fuzz parse() and StreamParser: no exception, segments that tile the reply, the
stream equal to parse(), and no input that is slow for its size.

    python benchmarks/fuzz.py [--count N] [--seed S] [--max-size 32768] [--out DIR]
                              [--time-limit-ms 50] [--jobs N] [--hang-s 20]
    python benchmarks/fuzz.py --replay fuzz-failures/X.json [--minimize]

Inputs (input `i` of seed `S` is rebuilt from (S, i) alone, so a failure file names
its input by seed and index too):

  * soup     random marker-rich text: every built-in format's start and end markers,
             <think>/</think>, JSON/Python punctuation {}[]()"':,= , words, call
             fragments, whitespace;
  * mutate   a corpus case (tests/corpus/*/*.txt, with its formats and in_think)
             changed 1 to 4 times: insert text, delete a span, duplicate one, truncate,
             swap two spans, insert a random marker (grown to the input's size by
             repeating it or joining other cases first);
  * markers  one format's start and end markers repeated, paired, nested, interleaved
             with another format's, left unclosed (each followed by `{`, `[`, a call's
             head, ...), or calls each cut in a value, the values all different
             (`<parameter=city>Nanj0`, `…Nanj1`, …), up to the input's size;
  * deep     deep nesting: `[[[[`, `{a:{a:{`, `{"a":{"a":`, `call:f{a:[[[[`, `f(a=f(a=`,
             after a random start marker, unclosed or closed wrongly (`call:f{a:[}`);
  * unicode  a soup or mutated input with astral characters (emoji, ZWJ sequences),
             combining marks (U+0301), zero-width joiner U+200D, RTL text (Hebrew,
             Arabic, U+202E), NUL, CRLF, U+FEFF put anywhere, inside markers too.

Sizes: 88% of inputs are up to 512 characters, 10% up to 4 KB, 2% up to --max-size.

Each input is run twice: with tools=None, and with tools (the names the tools=None
parse read as calls, the names `"name": "x"` and `x(` mention, one of them left out
at times, plus two names the input does not mention; for a corpus case, its own
tools.json first). For each run:

  parse_exception   parse() raised (it promises never to);
  internal_error    parse() or the stream swallowed an exception of its own ("internal
                    error (...)" in errors);
  segments          the accounting of tests/test_properties.py (check_accounting): the
                    segments are sorted and contiguous from 0 to len(raw), kinds text /
                    reasoning / call / error, each call's span inside a call segment, each
                    text segment's text in result.text in order and the text made of
                    nothing else (whitespace aside), no more error segments than errors; and of tests/test_corpus.py (test_corpus_invariants): no
                    segments for "", call spans inside the raw text, in order and without
                    overlap, names non-empty, arguments dicts of plain JSON data, the
                    reasoning's characters (but whitespace) in order those of the
                    reasoning segments;
  stream_exception  StreamParser's feed/flush/close raised;
  stream_mismatch   close() differs from parse() in text, calls, errors, reasoning or
                    segments;
  stream_events     the Text / Reasoning / Error events do not add up to close()'s
                    text / reasoning / errors;
  announce          StreamParser(announce="name") over the random chunking (64 for an
                    input over 8 KB): close() differs from parse(), an index given twice,
                    a CallDone for a withdrawn call, or a call's ArgumentsDelta texts
                    that are not its arguments' JSON;
  hang              the input used over --hang-s of CPU time (a wall-clock SIGALRM in the
                    worker is the guard: when it rings it asks how much CPU the input used,
                    and waits on while that is under --hang-s, so a starved process is not
                    a hang; it gives up at 10x --hang-s of wall clock all the same). The
                    worker is then replaced; a worker that does not answer (stuck in C
                    code, where no signal is handled) is killed once it has used --hang-s
                    + 15 s of CPU on the input (read from /proc; elsewhere, of wall clock),
                    or 10x --hang-s + 15 s of wall clock: `hang` too;
  crash             the worker died (a segfault, or the memory limit --max-memory-mb);
  harness_error     this script's own check raised (a bug here, not in the library);
  slow_parse        parse() took over --time-limit-ms of CPU time (time.process_time of
                    the process doing the work: a process the machine starves of CPU, a
                    nice-19 run beside other work, is not slow for it);
  slow_stream       the 1-character stream took over 3x its parse + 10 µs a delta, both
                    CPU time (--stream-factor, --stream-us-per-delta), and over 1 ms
                    (--stream-floor-ms: a floor for the smallest inputs, whose budget,
                    3 x a 12 µs parse + 10 µs a character, is less than a stream's own
                    fixed cost and than one page fault or collection pass: the empty
                    input and 1-character inputs were flagged at 0.3 ms against 0.06).
  (A reading over its limit is not kept at once: the parse, or the stream and its
  parse, run --retime more times (3) in the same worker, and the best of the readings
  counts, in the check and in the slowest lists. The first reading can hold one-time
  costs of the process, not the input's: a format's first use, a cold cache, a
  collection pass; the files keep it as parse_first_s / stream1_first_s.)

slow_parse and slow_stream are timing, not correctness: the machine's noise moves them
(less than it moved wall clock: caches and the CPU's clock still vary with the load).

Chunkings, by the input's length n (to keep a million inputs to a few hours on 2
cores: most inputs are small, and the tools=None run of those gets every chunking):
                     tools=None                          with tools
  n <= 1 KB          deltas of 1, 2, 3, 7, 64, random     1, 7, random
  1 KB < n <= 8 KB   1, 7, 64, random                     1, random
  n > 8 KB           1, random                            64
(A random split has pieces of 1 to 200 characters, and now and then an empty delta.)
The 1-character stream is the one timed (slow_stream): feed, flush and close, CPU time.

Every input that fails a check (timing included) is written to --out (default
fuzz-failures/, git-ignored) as <check>-s<seed>-i<index>.json: the input, both
tool settings, formats, in_think, each failed check with its tool setting and a
detail, and the timings (--max-files-per-check N keeps the first N of each check: the
slow_stream threshold flags a good share of marker-dense inputs today). `--replay
FILE...` reruns files; with `--minimize` it shrinks each input (deleting spans while
the same check still fails) and prints it.

Cost: about 90 inputs a second with --jobs 2 on a shared 2-core machine (a million in
about 3 hours); --start N --count M runs a slice of a seed's inputs. `--resume STATE`
keeps the run's state in STATE (the next input, the counts, the times, the slowest lists),
so a run stopped (^C, kill, the end of a session) goes on in a later process with the
same command: a million inputs need not fit in one.

At the end: inputs run, failures by check, the slowest inputs, time percentiles.
The exit status (EXIT below, in --help): 1 when a correctness check failed; timing
checks fail the run only with --strict-time.
"""

from __future__ import annotations

import argparse
import heapq
import json
import multiprocessing
import os
import random
import re
import signal
import sys
import time
import traceback
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT / "src") not in sys.path:
    sys.path.insert(0, str(ROOT / "src"))

import toolgram  # noqa: E402
from toolgram.events import ArgumentsDelta, CallCancelled, CallDone, CallStart, Error, Reasoning, Text  # noqa: E402
from toolgram._grammar.registry import default_registry  # noqa: E402
from toolgram._stream.parser import StreamParser  # noqa: E402

EXIT = """exit status:
  0  no input failed a correctness check (slow_parse and slow_stream are reported but
     do not fail the run: they measure the machine as much as the code; with
     --strict-time they do)
  1  an input failed a correctness check (parse_exception, internal_error, segments,
     stream_exception, stream_mismatch, stream_events, hang, crash, harness_error),
     or, with --strict-time, a timing check
  2  bad arguments, or a --replay file that cannot be read"""

CORPUS_DIR = ROOT / "tests" / "corpus"
TIMING_CHECKS = frozenset({"slow_parse", "slow_stream"})
GENERATORS = ("soup", "mutate", "markers", "deep", "unicode")
GENERATOR_WEIGHTS = (30, 35, 12, 8, 15)
SEGMENT_KINDS = frozenset({"text", "reasoning", "call", "error", "markup"})

PUNCT = list("{}[]()\"':,=") + ["\\", "<", ">", "/", "`", "```", "#", "*", ";", "|"]
WORDS = [
    "f", "get_weather", "search", "name", "arguments", "parameters", "city", "Paris", "x", "a", "b",
    "1", "1.5", "-2", "1e400", "true", "True", "false", "null", "None", "NaN", "functions.f", "call",
    "call:f", "to=", "commentary", "analysis", "Action:", "functools", "assistant", "json", "python",
    "<escape>", "<parameter=a>", "</parameter>", "<function=f>", "</function>", "<arg_key>a</arg_key>",
    "<arg_value>1</arg_value>", '<invoke name="f">', "</invoke>", '<parameter name="a">', "<|tool_sep|>",
    "\\n", "\\u00e9", "é", "—", "…", "the", "weather", "I", "will", "call", "tool", "Sure,", "done.",
]  # fmt: skip
FRAGMENTS = [
    '{"name": "f", "arguments": {"a": 1}}', '{"name": "get_weather", "arguments": {"city": "Paris"}}',
    '{"name": "f", "parameters": {}}', '[{"name": "f", "arguments": {}}]', "[f(a=1)]", "f(a=1, b='x')",
    '{"a": [1, 2, {"b": null}]}', "call:f{a:<escape>x<escape>}", '"name": "f"', '"arguments": {', "[{",
    "}]", "f(", "a=1", "a=[1, {'b': (2,)}]", '{"type": "tool_call", ', "<function=f><parameter=a>1</parameter></function>",
    '<tool_call>{"name": "f", "arguments": {}}</tool_call>', "```json\n", "\n```", "to=functions.f",
    '<|channel|>commentary to=functions.f <|constrain|>json<|message|>{"a": 1}<|call|>',
]  # fmt: skip
WHITESPACE = [" ", " ", " ", "  ", "\n", "\n\n", "\t", "\r\n"]
SPECIALS = [
    "😀", "👍🏽", "👨\u200d👩\u200d👧", "\U0001f9d1\u200d\U0001f4bb", "e\u0301", "\u0301", "\u0301\u0301",
    "\u200d", "\u200b", "\u202e", "\u202c", "\u200f", "שלום", "مرحبا بالعالم", "\u202eabc\u202c", "\x00",
    "\r\n", "\r", "\ufeff", "\U00010000", "𝒳", "\u2028", "ﬁ", "Ⅻ", "\U000e0041",
]  # fmt: skip
DEEP_UNITS = ["[", "{", "(", "{a:", '{"a":', '{"a": [', "[[", "f(a=", "call:f{a:", "[f(a=", "{'a': ", "<a>"]
DEEP_PREFIXES = [
    "", "", "call:f{a:[", '<tool_call>{"name": "f", "arguments": ', "<tool_call>", "[f(a=", "```json\n",
    '{"name": "f", "arguments": ', "<|tool_call_start|>[f(a=", "<start_function_call>call:f{a:",
]  # fmt: skip
DEEP_TAILS = ["", "", "}", "]", ")", "x", "}]", "])}", '"', "</tool_call>", "<end_function_call>", "\n```"]
UNCLOSED_AFTER = ["", "{", "[", "x", "(", '{"name": "f", "arguments": {', "f(", "<function=f>", '{"a": ', "@", " ", "\n"]
EXTRA_TOOLS = ["get_weather", "search", "unrelated_tool", "calc"]


# -- the corpus and the markers --------------------------------------------------------
@dataclass(frozen=True)
class Case:
    id: str
    raw: str
    tools: list | None
    formats: list | None
    in_think: bool


def _json_sidecar(path: Path) -> Any:
    return json.loads(path.read_bytes().decode("utf-8")) if path.exists() else None


def load_corpus(corpus_dir: Path = CORPUS_DIR) -> list[Case]:
    """Every tests/corpus/<format>/<case>.txt with its sidecars (see tests/corpus/README.md)."""
    cases = []
    for path in sorted(corpus_dir.glob("*/*.txt")):
        stem = path.name[: -len(".txt")]
        cases.append(
            Case(
                id=f"{path.parent.name}/{stem}",
                raw=path.read_bytes().decode("utf-8"),  # (not read_text: keeps "\r\n")
                tools=_json_sidecar(path.with_name(stem + ".tools.json")),
                formats=_json_sidecar(path.with_name(stem + ".formats.json")),
                in_think=bool(_json_sidecar(path.with_name(stem + ".in_think.json"))),
            )
        )
    return cases


@dataclass
class Context:
    """What the generators draw from (built once per process)."""

    corpus: list[Case]
    formats: dict[str, tuple[tuple[str, ...], tuple[str, ...]]]  # name -> (starts, ends)
    markers: list[str]
    pieces: list[list[str]] = field(default_factory=list)
    # Calls cut where a value begins, one per format whose header declares stream_param
    # (its stream_call and stream_param written out), and a Hermes JSON one (gen_markers'
    # distinct values).
    cut_calls: list[str] = field(default_factory=list)


_CTX: Context | None = None


def context() -> Context:
    global _CTX
    if _CTX is None:
        fmts = default_registry().select(None)
        # (A format's reasoning blocks count among its markers: openers with its starts,
        # closers with its ends.)
        formats = {
            f.name: (
                tuple(f.starts) + tuple(o for o, _ in f.reasoning if o),
                tuple(f.ends) + tuple(c for _, cs in f.reasoning for c in cs),
            )
            for f in fmts
        }
        markers = sorted({m for s, e in formats.values() for m in (*s, *e)} | {"<think>", "</think>"})
        _CTX = Context(load_corpus(), formats, markers, cut_calls=[_cut_call(f) for f in fmts if f.stream_param is not None and f.stream_call is not None])
        _CTX.cut_calls.append('<tool_call>{"name": "get_weather", "arguments": {"city": "')
    return _CTX


def _cut_call(fmt: Any) -> str:
    """A call of the format up to its one parameter's value (`city`), as its header's
    stream_call and stream_param write it (benchmarks/bench_pathological.py's cut_call)."""
    call_open = fmt.stream_call[0].split(" | ")[0].replace("{call}", "").replace("{attrs}", "").replace("{name}", "get_weather").replace("{id}", "0")
    param = fmt.stream_param[0].replace("{key}", "city").replace("{type}", "string" if "type=" in fmt.stream_param[0] else "true")
    start = fmt.starts[0] if fmt.starts and not call_open.startswith(fmt.starts[0]) else ""
    return (start + "\n" if start else "") + call_open + "\n" + param


def warm_up() -> None:
    """Build every format's grammar outside the timings (a grammar is compiled when a
    region of its format is first met: here, not inside a timed input)."""
    from toolgram._grammar.catalog import builtin_formats
    from toolgram._grammar.compile import compile_now

    for fmt in builtin_formats():
        fmt.compiled.warnings  # (its checks too: made when first asked for)
        compile_now(fmt)
    ctx = context()
    for starts, ends in ctx.formats.values():
        for start in starts or ("",):
            raw = start + '{"name": "f", "arguments": {"a": 1}}' + (ends[0] if ends else "") + " ok"
            for tools in (None, ["f"]):
                toolgram.parse(raw, tools)
                sp = StreamParser(tools)
                for i in range(0, len(raw), 7):
                    sp.feed(raw[i : i + 7])
                sp.close()
    for case in ctx.corpus[::7]:
        toolgram.parse(case.raw, case.tools, formats=case.formats, in_think=case.in_think)


# -- generating inputs -----------------------------------------------------------------
@dataclass
class Input:
    seed: int
    index: int
    generator: str
    raw: str
    formats: list | None = None
    in_think: bool = False
    case_tools: list | None = None  # a corpus case's own tools
    source: str = ""  # a corpus case's id


def pick_size(rng: random.Random, max_size: int) -> int:
    r = rng.random()
    if r < 0.88 or max_size <= 512:
        return rng.randint(0, min(512, max_size))
    if r < 0.98 or max_size <= 4096:
        return rng.randint(513, min(4096, max_size))
    return rng.randint(4097, max_size)


def soup(rng: random.Random, ctx: Context, size: int) -> str:
    parts: list[str] = []
    total = 0
    while total < size:
        r = rng.random()
        if r < 0.30:
            piece = rng.choice(ctx.markers)
        elif r < 0.55:
            piece = rng.choice(PUNCT)
        elif r < 0.75:
            piece = rng.choice(WORDS)
        elif r < 0.90:
            piece = rng.choice(WHITESPACE)
        else:
            piece = rng.choice(FRAGMENTS)
        parts.append(piece)
        total += len(piece)
    return "".join(parts)[: max(size, 0)]


def _span(rng: random.Random, n: int) -> tuple[int, int]:
    a = rng.randint(0, n)
    b = min(n, a + int(rng.expovariate(1 / 12)) + 1)
    return a, b


def mutate(rng: random.Random, ctx: Context, raw: str) -> str:
    for _ in range(rng.randint(1, 4)):
        n = len(raw)
        op = rng.choice(("insert", "delete", "duplicate", "truncate", "swap", "marker"))
        if op == "insert":
            at = rng.randint(0, n)
            raw = raw[:at] + soup(rng, ctx, rng.randint(1, 12)) + raw[at:]
        elif op == "marker":
            at = rng.randint(0, n)
            raw = raw[:at] + rng.choice(ctx.markers) + raw[at:]
        elif op == "delete" and n:
            a, b = _span(rng, n)
            raw = raw[:a] + raw[b:]
        elif op == "duplicate" and n:
            a, b = _span(rng, n)
            at = rng.choice((b, rng.randint(0, n)))
            raw = raw[:at] + raw[a:b] + raw[at:]
        elif op == "truncate" and n:
            raw = raw[: rng.randint(0, n)] if rng.random() < 0.7 else raw[rng.randint(0, n) :]
        elif op == "swap" and n > 2:
            a, b = _span(rng, n)
            c, d = _span(rng, n)
            if b <= c:
                raw = raw[:a] + raw[c:d] + raw[b:c] + raw[a:b] + raw[d:]
            elif d <= a:
                raw = raw[:c] + raw[a:b] + raw[d:a] + raw[c:d] + raw[b:]
    return raw


def gen_mutate(rng: random.Random, ctx: Context, size: int, inp: Input) -> str:
    case = rng.choice(ctx.corpus)
    inp.source, inp.formats, inp.in_think, inp.case_tools = case.id, case.formats, case.in_think, case.tools
    raw = case.raw
    if size > 512 and raw:
        # Grow it: the case repeated, or other cases of its folder after it.
        folder = case.id.split("/")[0]
        same = [c for c in ctx.corpus if c.id.startswith(folder + "/")]
        parts = [raw]
        total = len(raw)
        while total < size:
            nxt = raw if rng.random() < 0.5 else rng.choice(same).raw
            sep = rng.choice(("", "\n", "\n\n", " "))
            parts.append(sep + nxt)
            total += len(sep) + len(nxt)
        raw = "".join(parts)
    return mutate(rng, ctx, raw)


def gen_markers(rng: random.Random, ctx: Context, size: int) -> str:
    names = [n for n, (s, _) in ctx.formats.items() if s]
    starts, ends = ctx.formats[rng.choice(names)]
    s = rng.choice(starts)
    e = rng.choice(ends) if ends else rng.choice(ctx.markers)
    size = max(size, len(s) + len(e))
    shape = rng.choice(("repeat", "pairs", "nested", "interleave", "unclosed", "payload", "distinct"))
    if shape == "repeat":
        unit = rng.choice((s, e))
        return unit * (size // len(unit) + 1)
    if shape == "pairs":
        unit = s + rng.choice(("", " ", "\n", "x")) + e
        return unit * (size // len(unit) + 1)
    if shape == "nested":
        k = size // (len(s) + len(e)) + 1
        return s * k + rng.choice(("", "x", "{}", "[]")) + e * rng.randint(0, k)
    other = ctx.formats[rng.choice(names)]
    pool = [s, e, *starts, *ends, *other[0], *other[1], "<think>", "</think>"]
    if shape == "interleave":
        parts, total = [], 0
        while total < size:
            piece = rng.choice(pool) + (rng.choice(UNCLOSED_AFTER) if rng.random() < 0.3 else "")
            parts.append(piece)
            total += len(piece)
        return "".join(parts)
    if shape == "unclosed":
        unit = s + rng.choice(UNCLOSED_AFTER)
        return unit * (size // len(unit) + 1)
    if shape == "distinct":
        # Calls cut in a value (a format's own, or the marker and what follows it), the
        # values all different, each written a few times, their run at times written
        # again (`…<parameter=city>Nanj0` twice, `…Nanj1` twice, …): the storm memo shares
        # few of them or none (issue 17: 150-380 ms at 32 KB).
        unit = rng.choice(ctx.cut_calls) if rng.random() < 0.7 else s + rng.choice(UNCLOSED_AFTER)
        word, reps, cycle = rng.choice(("Nanj", "x", "Paris ", '"a', "1")), rng.randint(1, 4), rng.choice((0, 0, rng.randint(2, 100)))
        parts, total, k = [], 0, 0
        while total < size:
            piece = unit + word + str(k // reps % cycle if cycle else k // reps)
            parts.append(piece)
            total += len(piece)
            k += 1
        return "".join(parts)
    # payload: a call, its end marker left out at times
    parts, total = [], 0
    while total < size:
        piece = s + rng.choice(FRAGMENTS) + (e if rng.random() < 0.6 else "") + rng.choice(WHITESPACE)
        parts.append(piece)
        total += len(piece)
    return "".join(parts)


def gen_deep(rng: random.Random, ctx: Context, size: int) -> str:
    prefix = rng.choice(DEEP_PREFIXES + [rng.choice(ctx.markers)])
    unit = rng.choice(DEEP_UNITS)
    n = max(1, (size - len(prefix)) // len(unit))
    if rng.random() < 0.2:
        n = rng.randint(1, 8)  # shallow: `call:f{a:[}`
    tail = rng.choice(DEEP_TAILS)
    if rng.random() < 0.2:
        closer = {"[": "]", "{": "}", "(": ")"}.get(unit[-1], "}")
        tail = closer * rng.randint(0, n) + tail
    return prefix + unit * n + tail


def gen_unicode(rng: random.Random, ctx: Context, size: int, inp: Input) -> str:
    raw = soup(rng, ctx, size) if rng.random() < 0.5 else gen_mutate(rng, ctx, min(size, 512), inp)
    for _ in range(rng.randint(1, 6)):
        op = rng.random()
        n = len(raw)
        if op < 0.55:
            at = rng.randint(0, n)
            raw = raw[:at] + rng.choice(SPECIALS) + raw[at:]
        elif op < 0.7 and n:
            # combining marks after several characters
            out = []
            for ch in raw:
                out.append(ch)
                if rng.random() < 0.05:
                    out.append("\u0301")
            raw = "".join(out)
        elif op < 0.8:
            raw = raw.replace("\r\n", "\n").replace("\n", "\r\n")
        elif op < 0.9 and n:
            a, b = _span(rng, n)
            raw = raw[:a] + "\u202e" + raw[a:b] + "\u202c" + raw[b:]
        else:
            raw = raw.replace(" ", rng.choice(("\x00", "\u200d", "\u00a0", "\u3000")), rng.randint(1, 5))
    return raw


def make_input(seed: int, index: int, max_size: int = 32_768, generator: str | None = None) -> Input:
    """Input `index` of `seed`: the same (seed, index) gives the same input."""
    ctx = context()
    rng = random.Random(f"toolgram-fuzz/{seed}/{index}")
    gen = generator or rng.choices(GENERATORS, GENERATOR_WEIGHTS)[0]
    size = pick_size(rng, max_size)
    inp = Input(seed, index, gen, "")
    if gen == "soup":
        raw = soup(rng, ctx, size)
        if rng.random() < 0.1:
            inp.in_think = True
        if rng.random() < 0.1:
            inp.formats = rng.sample(sorted(ctx.formats), rng.randint(1, 3))
    elif gen == "mutate":
        raw = gen_mutate(rng, ctx, size, inp)
    elif gen == "markers":
        raw = gen_markers(rng, ctx, size)
    elif gen == "deep":
        raw = gen_deep(rng, ctx, size)
    else:
        raw = gen_unicode(rng, ctx, size, inp)
    inp.raw = raw[:max_size]
    return inp


_MENTIONED = re.compile(r'"name"\s*:\s*"([A-Za-z_][\w.\-]{0,63})"|([A-Za-z_][\w.\-]{0,63})\s*\(')


def tools_for(inp: Input, result: Any, rng: random.Random) -> list:
    """The tools of the second run: what the input names as calls, plus two others."""
    names: list[str] = []
    if result is not None:
        names += [c.name for c in result.calls]
    names += [a or b for a, b in _MENTIONED.findall(inp.raw[:4096])][:20]
    names = list(dict.fromkeys(n for n in names if n))
    if len(names) > 1 and rng.random() < 0.3:
        names.remove(rng.choice(names))  # a call to a tool not offered
    tools: list = list(inp.case_tools or [])
    offered = {t if isinstance(t, str) else (t.get("function", t) or {}).get("name") for t in tools}
    tools += [n for n in names if n not in offered]
    tools += [n for n in rng.sample(EXTRA_TOOLS, 2) if n not in offered and n not in names]
    return tools


# -- the checks ------------------------------------------------------------------------
class Hang(BaseException):
    """Raised by SIGALRM (a BaseException: the library's `except Exception` keeps it)."""


HANG_WALL_FACTOR = 10.0  # the guard gives up on an input after this x --hang-s of wall clock, CPU or not
_guard: dict[str, float] = {}  # the input being guarded: its CPU and wall clock at the start, --hang-s


def _on_alarm(signum: int, frame: Any) -> None:
    # The wall-clock alarm only asks: an input is a hang when it used hang_s of CPU
    # (a starved process waits on), or, as a last resort, HANG_WALL_FACTOR x hang_s
    # of wall clock (an input blocked without using CPU).
    cpu = time.process_time() - _guard["cpu0"]
    left = min(_guard["hang_s"] - cpu, _guard["wall_end"] - time.monotonic())
    if left > 0:
        signal.setitimer(signal.ITIMER_REAL, max(left, 0.01))
        return
    raise Hang


def _short(value: Any, n: int = 100) -> str:
    try:
        s = repr(value)
    except RecursionError:
        s = f"<{type(value).__name__} too deep to repr>"
    return s if len(s) <= n else s[: n - 12] + "…" + s[-11:]


def _in_order(small: str, big: str) -> bool:
    rest = iter(big)
    return all(ch in rest for ch in small)


def _plain_json(value: Any) -> bool:
    """JSON data only (iterative: arguments may nest 10,000 deep)."""
    stack = [value]
    while stack:
        v = stack.pop()
        if v is None or isinstance(v, (bool, str)):
            continue
        if isinstance(v, (int, float)):
            if v != v or v in (float("inf"), float("-inf")):
                return False
        elif isinstance(v, list):
            stack.extend(v)
        elif isinstance(v, dict):
            if not all(isinstance(k, str) for k in v):
                return False
            stack.extend(v.values())
        else:
            return False
    return True


def deep_equal(a: Any, b: Any) -> bool:
    """a == b for JSON-like data, without recursion (== on 10,000 nested lists raises
    RecursionError)."""
    stack = [(a, b)]
    while stack:
        x, y = stack.pop()
        if isinstance(x, dict) and isinstance(y, dict):
            if len(x) != len(y) or x.keys() != y.keys():
                return False
            stack.extend((x[k], y[k]) for k in x)
        elif isinstance(x, list) and isinstance(y, list):
            if len(x) != len(y):
                return False
            stack.extend(zip(x, y))
        elif isinstance(x, (dict, list)) or isinstance(y, (dict, list)):
            return False
        elif not (x == y):
            return False
    return True


_CALL_FIELDS = ("name", "id", "kind", "format", "span", "repairs")


def calls_equal(a: Any, b: Any) -> bool:
    """ToolCall ==, field by field (instructions are not compared), arguments by deep_equal."""
    return all(getattr(a, f) == getattr(b, f) for f in _CALL_FIELDS) and deep_equal(a.arguments, b.arguments)


_WS = re.compile(r"[\s\ufeff\u200b]+")  # (a byte order mark or zero-width space before the reply is leading blanks)


def accounting_problem(raw: str, result: Any) -> str | None:
    """What tests/test_properties.py's check_accounting and test_corpus_invariants
    assert, as a message (None: all holds)."""
    segments = result.segments
    if not raw and segments:
        return f"segments for an empty reply: {segments[:3]}"
    pos = 0
    for seg in segments:
        kind, start, end = seg
        if kind not in SEGMENT_KINDS:
            return f"segment kind {kind!r}"
        if start != pos:
            return f"{'gap' if start > pos else 'overlap'} at {pos}: segment {tuple(seg)} (segments {len(segments)})"
        if end < start:
            return f"segment {tuple(seg)} ends before it starts"
        pos = end
    if pos != len(raw):
        return f"segments end at {pos}, the reply at {len(raw)}"
    calls = [(s, e) for k, s, e in segments if k == "call"]
    previous = 0
    for n, call in enumerate(result.calls):
        start, end = call.span
        if not (isinstance(start, int) and isinstance(end, int) and 0 <= start < end <= len(raw)):
            return f"call {n} span {call.span} outside 0..{len(raw)}"
        if start < previous:
            return f"call {n} span {call.span} overlaps or precedes the previous (ends {previous})"
        previous = end
        if not any(s <= start and end <= e for s, e in calls):
            return f"call {n} span {call.span} in no call segment"
        if not (isinstance(call.name, str) and call.name):
            return f"call {n} name {call.name!r}"
        if not isinstance(call.arguments, dict) or not _plain_json(call.arguments):
            return f"call {n} arguments not plain JSON data: {_short(call.arguments)}"
    # The text, whitespace aside (it joins its pieces with whitespace of its own): each
    # text segment in it, in order; and nothing in it but what the segments that are not
    # reasoning hold, in order (a JSON message object is decoded, its escapes read: not
    # checked, whether the whole reply or fenced).
    text = _WS.sub("", result.text)
    at = 0
    for kind, start, end in segments:
        if kind == "text":
            piece = _WS.sub("", raw[start:end])
            found = text.find(piece, at)
            if found < 0:
                return f"text segment ({start}, {end}) {_short(piece, 60)} not (in order) in result.text"
            at = found + len(piece)
    if '"message"' not in raw:
        held = "".join(_WS.sub("", raw[s:e]) for k, s, e in segments if k != "reasoning")
        if not _in_order(text, held):
            return "result.text holds characters that no segment but reasoning holds"
    if sum(1 for k, _, _ in segments if k == "error") > len(result.errors):
        return "more error segments than errors"
    if not all(isinstance(e, str) for e in result.errors):
        return "an error that is not a str"
    shown = "".join(raw[s:e] for k, s, e in segments if k == "reasoning")
    if not _in_order(_WS.sub("", result.reasoning), _WS.sub("", shown)):
        return "reasoning characters not (in order) in the reasoning segments"
    return None


def result_difference(expected: Any, got: Any) -> str | None:
    for name in ("text", "calls", "errors", "reasoning", "segments"):
        a, b = getattr(expected, name), getattr(got, name)
        if name == "calls":
            if len(a) != len(b):
                return f"calls: parse has {len(a)}, stream {len(b)}: {_short(a, 80)} vs {_short(b, 80)}"
            i = next((i for i, (x, y) in enumerate(zip(a, b)) if not calls_equal(x, y)), None)
            if i is not None:
                return f"calls[{i}]: parse {_short(a[i], 90)} stream {_short(b[i], 90)}"
            continue
        if a != b:
            if isinstance(a, str):
                at = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
                return f"{name} differs at {at}: parse {_short(a[at:at + 40], 60)} stream {_short(b[at:at + 40], 60)}"
            if len(a) != len(b):
                return f"{name}: parse has {len(a)}, stream {len(b)}: {_short(a, 80)} vs {_short(b, 80)}"
            i = next(i for i, (x, y) in enumerate(zip(a, b)) if x != y)
            return f"{name}[{i}]: parse {_short(a[i], 90)} stream {_short(b[i], 90)}"
    return None


def chunkings(n: int, with_tools: bool) -> tuple:
    """The delta sizes an input of n characters is streamed in (see the docstring)."""
    if n <= 1024:
        return (1, 7, "random") if with_tools else (1, 2, 3, 7, 64, "random")
    if n <= 8192:
        return (1, "random") if with_tools else (1, 7, 64, "random")
    return (64,) if with_tools else (1, "random")


def random_chunks(rng: random.Random, raw: str) -> list[str]:
    out, i = [], 0
    while i < len(raw):
        if rng.random() < 0.03:
            out.append("")
        n = rng.choice((1, 1, 2, 3, 4, 5, 8, 13, 21, 50, 200))
        out.append(raw[i : i + n])
        i += n
    return out


def run_stream(raw: str, chunks: list[str], tools: Any, formats: Any, in_think: bool) -> tuple[Any, list, float]:
    sp = StreamParser(tools, formats=formats, in_think=in_think)
    events: list = []
    t0 = time.process_time()
    for chunk in chunks:
        events += sp.feed(chunk)
    events += sp.flush()
    result = sp.close()
    return result, events, time.process_time() - t0


def announce_problem(raw: str, chunks: list[str], tools: Any, inp: Any, result: Any) -> str | None:
    """StreamParser(announce="name") over `chunks`: close() equal to parse(), each index
    given once, a call's ArgumentsDelta texts joined the JSON of its CallDone's arguments
    (where it sent any), no CallDone for a withdrawn call (None: all so)."""
    sp = StreamParser(tools, formats=inp.formats, in_think=inp.in_think, announce="name")
    events: list = []
    for chunk in chunks:
        events += sp.feed(chunk)
    events += sp.flush()
    diff = result_difference(result, sp.close())
    if diff:
        return f"close(): {diff}"
    started: set = set()
    cancelled: set = set()
    sent: dict = {}
    for e in events:
        kind = type(e)
        if kind is CallStart:
            if e.index in started:
                return f"CallStart index {e.index} given twice"
            started.add(e.index)
        elif kind is ArgumentsDelta:
            sent[e.index] = sent.get(e.index, "") + e.text
        elif kind is CallCancelled:
            cancelled.add(e.index)
        elif kind is CallDone:
            if e.index in cancelled:
                return f"CallDone for the withdrawn call {e.index}"
            if e.index in sent and sent[e.index] != json.dumps(e.call.arguments, ensure_ascii=False):
                return f"call {e.index}: its ArgumentsDelta texts are not its arguments' JSON"
    return None


@dataclass
class Outcome:
    inp: Input
    tools: list | None = None
    failures: list[dict] = field(default_factory=list)  # {"check", "variant", "detail"}
    timing: dict[str, float] = field(default_factory=dict)
    restart: bool = False  # the worker should be replaced (a hang or MemoryError cut it short)
    op: str = ""

    def fail(self, check: str, variant: str, detail: str) -> None:
        self.failures.append({"check": check, "variant": variant, "detail": detail})

    @property
    def checks(self) -> list[str]:
        return list(dict.fromkeys(f["check"] for f in self.failures))

    def record(self) -> dict:
        inp = self.inp
        checks = self.checks
        main = next((c for c in checks if c not in TIMING_CHECKS), checks[0] if checks else "")
        return {
            "check": main,
            "checks": self.failures,
            "seed": inp.seed,
            "index": inp.index,
            "generator": inp.generator,
            "source": inp.source,
            "size": len(inp.raw),
            "raw": inp.raw,
            "tools": self.tools,
            "formats": inp.formats,
            "in_think": inp.in_think,
            "timing": self.timing,
            "variants": "each check names its run: tools=None, or tools=<the tools above>",
        }


STREAM_FACTOR = 3.0  # slow_stream: the 1-character stream over STREAM_FACTOR x parse + STREAM_PER_DELTA_S a delta
STREAM_PER_DELTA_S = 10e-6
# ... and over STREAM_FLOOR_S: a stream's own fixed cost (a StreamParser made, flushed and
# closed; its first deltas) is a few tens of µs warm, and one page fault or collection
# pass costs more than the whole budget of a 1-character input (3 x a 12 µs parse + 10 µs).
STREAM_FLOOR_S = 1e-3
# A reading over its limit is timed RETIME times more in the same worker, right after it,
# and the best counts: the first reading can hold one-time costs (a grammar's first use,
# a cold cache, a collection pass) that are the process's, not the input's.
RETIME = 3


def stream_budget(parse_s: float, deltas: int) -> float:
    """The 1-character stream's CPU budget (slow_stream over it)."""
    return max(STREAM_FLOOR_S, STREAM_FACTOR * parse_s + STREAM_PER_DELTA_S * deltas)


def stream_budget_text(parse_s: float, deltas: int) -> str:
    own = f"{STREAM_FACTOR:g} x parse {parse_s * 1e3:.2f} ms + {STREAM_PER_DELTA_S * 1e6:g} µs x {deltas} deltas"
    if STREAM_FACTOR * parse_s + STREAM_PER_DELTA_S * deltas < STREAM_FLOOR_S:
        return f"the floor {STREAM_FLOOR_S * 1e3:g} ms (over {own})"
    return own


def retime(fn: Any) -> float:
    """The best CPU time of RETIME more calls of fn (inf when RETIME is 0)."""
    best = float("inf")
    for _ in range(RETIME):
        t0 = time.process_time()
        fn()
        best = min(best, time.process_time() - t0)
    return best


def check_variant(out: Outcome, variant: str, tools: Any, rng: random.Random, limit_s: float, only: str | None = None) -> Any:
    """Run one tool setting's checks; return parse()'s result (None if it raised)."""
    inp, raw = out.inp, out.inp.raw
    out.op = f"parse ({variant})"
    t0 = time.process_time()
    try:
        result = toolgram.parse(raw, tools, formats=inp.formats, in_think=inp.in_think)
    except MemoryError:
        out.restart = True
        out.fail("parse_exception", variant, "MemoryError")
        return None
    except Exception as exc:  # noqa: BLE001
        out.fail("parse_exception", variant, f"{type(exc).__name__}: {exc} | {_tb(exc)}")
        return None
    parse_t = time.process_time() - t0
    if parse_t > limit_s:
        # (over the limit: timed again, warm, before it counts; see RETIME)
        out.timing[f"parse_first_s[{variant}]"] = parse_t
        parse_t = min(parse_t, retime(lambda: toolgram.parse(raw, tools, formats=inp.formats, in_think=inp.in_think)))
    out.timing[f"parse_s[{variant}]"] = parse_t
    if parse_t > limit_s:
        out.fail("slow_parse", variant, f"{parse_t * 1e3:.1f} ms > {limit_s * 1e3:.0f} ms (best of {RETIME + 1}, warm)")
    internal = [e for e in result.errors if "internal error" in e]
    if internal:
        out.fail("internal_error", variant, f"parse: {internal[0]}")
    problem = _guarded(out, variant, accounting_problem, raw, result)
    if problem:
        out.fail("segments", variant, problem)
    if only == "parse":
        return result
    for size in chunkings(len(raw), variant != "tools=None"):
        if size == "random":
            chunks = random_chunks(rng, raw)
        elif size == 1:
            chunks = list(raw)
        else:
            chunks = [raw[i : i + size] for i in range(0, len(raw), size)]
        out.op = f"stream {size} ({variant})"
        try:
            got, events, stream_t = run_stream(raw, chunks, tools, inp.formats, inp.in_think)
        except MemoryError:
            out.restart = True
            out.fail("stream_exception", variant, f"chunks {size}: MemoryError")
            return result
        except Exception as exc:  # noqa: BLE001
            out.fail("stream_exception", variant, f"chunks {size}: {type(exc).__name__}: {exc} | {_tb(exc)}")
            continue
        if size == 1:
            allowed = stream_budget(parse_t, len(chunks))
            if stream_t > allowed:
                # (over its budget: the stream and its parse timed again, warm, before it
                # counts; the budget is of the warm parse)
                out.timing[f"stream1_first_s[{variant}]"] = stream_t
                stream_t = min([stream_t] + [run_stream(raw, chunks, tools, inp.formats, inp.in_think)[2] for _ in range(RETIME)])
                parse_t = min(parse_t, retime(lambda: toolgram.parse(raw, tools, formats=inp.formats, in_think=inp.in_think)))
                out.timing[f"parse_s[{variant}]"] = parse_t
                allowed = stream_budget(parse_t, len(chunks))
            out.timing[f"stream1_s[{variant}]"] = stream_t
            if stream_t > allowed:
                out.fail(
                    "slow_stream", variant,
                    f"{stream_t * 1e3:.2f} ms > {stream_budget_text(parse_t, len(chunks))} "
                    f"({stream_t / max(1, len(chunks)) * 1e6:.0f} µs a delta; best of {RETIME + 1}, warm)",
                )  # fmt: skip
        diff = _guarded(out, variant, result_difference, result, got)
        if diff:
            out.fail("stream_mismatch", variant, f"chunks {size}: {diff}")
        internal = [e for e in got.errors if "internal error" in e and e not in result.errors]
        if internal:
            out.fail("internal_error", variant, f"stream chunks {size}: {internal[0]}")
        text = "".join(e.text for e in events if type(e) is Text)
        thought = "".join(e.text for e in events if type(e) is Reasoning)
        errors = [e.message for e in events if type(e) is Error]
        if (text, thought, errors) != (got.text, got.reasoning, got.errors):
            which = "Text" if text != got.text else "Reasoning" if thought != got.reasoning else "Error"
            out.fail("stream_events", variant, f"chunks {size}: the {which} events differ from close()")
        if size == "random" or (size == 64 and len(raw) > 8192):
            # (announce="name", on one chunking: toolgram serve's default stream)
            out.op = f"announce {size} ({variant})"
            try:
                problem = announce_problem(raw, chunks, tools, inp, result)
            except Exception as exc:  # noqa: BLE001
                problem = f"{type(exc).__name__}: {exc} | {_tb(exc)}"
            if problem:
                out.fail("announce", variant, f"chunks {size}: {problem}")
    return result


def _guarded(out: Outcome, variant: str, fn: Any, *args: Any) -> Any:
    """fn(*args); an exception of the harness's own is the check harness_error."""
    try:
        return fn(*args)
    except Exception as exc:  # noqa: BLE001
        out.fail("harness_error", variant, f"{fn.__name__}: {type(exc).__name__}: {exc} | {_tb(exc)}")
        return None


def _tb(exc: BaseException) -> str:
    frames = traceback.extract_tb(exc.__traceback__)[-3:]
    return " <- ".join(f"{Path(f.filename).name}:{f.lineno} {f.name}" for f in reversed(frames))


def run_input(inp: Input, limit_s: float = 0.05, hang_s: float = 20.0, tools: list | None = None, only: tuple | None = None) -> Outcome:
    """All the checks of one input, under a guard of hang_s seconds of CPU time (a
    wall-clock SIGALRM that asks the CPU time used: see _on_alarm; in the main thread;
    elsewhere unguarded). `tools`: the second run's tools (default: see
    tools_for). `only`: (variant, "parse" or None) to run one tool setting (--minimize)."""
    out = Outcome(inp)
    rng = random.Random(f"toolgram-fuzz-chunks/{inp.seed}/{inp.index}")
    guarded = hang_s > 0 and hasattr(signal, "setitimer") and _main_thread()
    if guarded:
        _guard.update(cpu0=time.process_time(), wall_end=time.monotonic() + HANG_WALL_FACTOR * hang_s, hang_s=hang_s)
        old = signal.signal(signal.SIGALRM, _on_alarm)
        signal.setitimer(signal.ITIMER_REAL, hang_s)
    try:
        try:
            result = None
            if only is None or only[0] == "tools=None":
                result = check_variant(out, "tools=None", None, rng, limit_s, only and only[1])
            if only is None or only[0] == "tools":
                out.tools = tools if tools is not None else tools_for(inp, result, rng)
                check_variant(out, "tools", out.tools, rng, limit_s, only and only[1])
        finally:
            if guarded:
                signal.setitimer(signal.ITIMER_REAL, 0)
    except Hang:
        out.restart = True
        cpu = time.process_time() - _guard["cpu0"]
        out.fail("hang", out.op.split("(")[-1].rstrip(")"), f"over {hang_s:g} s in {out.op} ({cpu:.1f} s CPU)")
    finally:
        if guarded:
            signal.signal(signal.SIGALRM, old)
    return out


def _main_thread() -> bool:
    import threading

    return threading.current_thread() is threading.main_thread()


# -- running many: worker processes ----------------------------------------------------
@dataclass
class Summary:
    """What the parent keeps of each input (no text, unless it failed)."""

    index: int
    generator: str
    size: int
    parse_s: float
    stream1_s: float
    head: str
    checks: list[str]
    record: dict | None
    restart: bool


def summarize(out: Outcome) -> Summary:
    t = out.timing
    return Summary(
        out.inp.index,
        out.inp.generator,
        len(out.inp.raw),
        t.get("parse_s[tools=None]", -1.0),
        t.get("stream1_s[tools=None]", -1.0),
        _short(out.inp.raw, 70),
        out.checks,
        out.record() if out.failures else None,
        out.restart,
    )


def _worker(conn: Any, opts: dict) -> None:
    global STREAM_FACTOR, STREAM_PER_DELTA_S, STREAM_FLOOR_S, RETIME
    STREAM_FACTOR, STREAM_PER_DELTA_S = opts["stream_factor"], opts["stream_per_delta_s"]
    STREAM_FLOOR_S, RETIME = opts["stream_floor_s"], opts["retime"]
    if opts["max_memory_mb"]:
        try:
            import resource

            limit = opts["max_memory_mb"] * 1024 * 1024
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        except (ImportError, ValueError, OSError):
            pass
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles ^C
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # (the parent's handler is inherited)
    while True:
        try:
            index = conn.recv()
        except EOFError:
            return
        if index is None:
            return
        inp = make_input(opts["seed"], index, opts["max_size"])
        out = run_input(inp, opts["limit_s"], opts["hang_s"])
        conn.send(summarize(out))
        if out.restart:
            return


def _cpu_of(pid: int) -> float | None:
    """A process's CPU time so far, seconds (Linux /proc; None elsewhere)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, AttributeError):
        return None


class Pool:
    """Worker processes, one input each at a time; a worker that does not answer in
    time (CPU time where /proc tells it, see the docstring's `hang`) is killed (by its
    pid) and replaced."""

    def __init__(self, jobs: int, opts: dict) -> None:
        self.ctx = multiprocessing.get_context("fork") if hasattr(os, "fork") else multiprocessing.get_context()
        self.opts = opts
        self.workers: list[dict] = [self._spawn() for _ in range(jobs)]

    def _spawn(self) -> dict:
        parent, child = self.ctx.Pipe()
        proc = self.ctx.Process(target=_worker, args=(child, self.opts), daemon=True)
        proc.start()
        child.close()
        return {"proc": proc, "conn": parent, "index": None, "sent": 0.0, "cpu0": None}

    def _replace(self, w: dict) -> None:
        try:
            w["conn"].close()
        except OSError:
            pass
        if w["proc"].is_alive():
            w["proc"].kill()
        w["proc"].join(5)
        w.update(self._spawn())
        w["index"] = None

    def run(self, indexes: Any, on_result: Any) -> None:
        from multiprocessing.connection import wait

        todo = iter(indexes)
        exhausted = False
        hang_s = self.opts["hang_s"]
        # (the worker's own guard answers at hang_s of CPU, at HANG_WALL_FACTOR x hang_s
        # of wall clock at the latest; 15 s more of either and it is not answering)
        cpu_limit, wall_limit = hang_s + 15.0, HANG_WALL_FACTOR * hang_s + 15.0
        while True:
            for w in self.workers:
                if w["index"] is None and not exhausted:
                    nxt = next(todo, None)
                    if nxt is None:
                        exhausted = True
                        break
                    w["index"], w["sent"], w["cpu0"] = nxt, time.monotonic(), _cpu_of(w["proc"].pid)
                    w["conn"].send(nxt)
            busy = [w for w in self.workers if w["index"] is not None]
            if not busy:
                break
            ready = wait([w["conn"] for w in busy], timeout=1.0)
            for w in busy:
                if w["conn"] in ready:
                    try:
                        summary = w["conn"].recv()
                    except (EOFError, OSError):
                        code = w["proc"].exitcode if not w["proc"].is_alive() else None
                        on_result(self._lost(w["index"], "crash", f"worker died (exit code {code})"))
                        self._replace(w)
                        continue
                    w["index"] = None
                    on_result(summary)
                    if summary.restart:
                        self._replace(w)
                else:
                    wall = time.monotonic() - w["sent"]
                    cpu = _cpu_of(w["proc"].pid)
                    cpu = cpu - w["cpu0"] if cpu is not None and w["cpu0"] is not None else None
                    if wall > wall_limit or (cpu if cpu is not None else wall) > cpu_limit:
                        said = f"{wall:.0f} s" + (f", {cpu:.0f} s of CPU" if cpu is not None else "")
                        on_result(self._lost(w["index"], "hang", f"worker killed: no answer in {said}"))
                        self._replace(w)
        for w in self.workers:
            try:
                w["conn"].send(None)
            except OSError:
                pass
            w["proc"].join(5)
            if w["proc"].is_alive():
                w["proc"].kill()

    def _lost(self, index: int, check: str, detail: str) -> Summary:
        inp = make_input(self.opts["seed"], index, self.opts["max_size"])
        out = Outcome(inp)
        out.fail(check, "?", detail)
        return summarize(out)


# -- the report --------------------------------------------------------------------------
class Report:
    def __init__(self, out_dir: Path | None, top: int = 10, max_files_per_check: int = 0) -> None:
        self.out_dir = out_dir
        self.max_files = max_files_per_check
        self.files_by_check: dict[str, int] = {}
        self.top = top
        self.n = 0
        self.sizes = 0
        self.by_gen: dict[str, int] = {}
        self.by_check: dict[str, list[Summary]] = {}
        self.parse_times: list[float] = []
        self.stream_times: list[float] = []
        self.slow_parse: list[tuple] = []
        self.slow_stream: list[tuple] = []
        self.files = 0
        self.t0 = time.monotonic()

    def add(self, s: Summary) -> None:
        self.n += 1
        self.sizes += s.size
        self.by_gen[s.generator] = self.by_gen.get(s.generator, 0) + 1
        if s.parse_s >= 0:
            self.parse_times.append(s.parse_s)
            heapq.heappush(self.slow_parse, (s.parse_s, s.size, s.generator, s.index, s.head))
            if len(self.slow_parse) > self.top:
                heapq.heappop(self.slow_parse)
        if s.stream1_s >= 0:
            self.stream_times.append(s.stream1_s)
            heapq.heappush(self.slow_stream, (s.stream1_s, s.size, s.generator, s.index, s.head))
            if len(self.slow_stream) > self.top:
                heapq.heappop(self.slow_stream)
        for check in s.checks:
            self.by_check.setdefault(check, []).append(s)
        main = s.record["check"] if s.record is not None else ""
        if s.record is not None and self.max_files and self.files_by_check.get(main, 0) >= self.max_files:
            s.record = {"checks": s.record["checks"]}  # (not written: --max-files-per-check)
        elif s.record is not None and self.out_dir is not None:
            self.files_by_check[main] = self.files_by_check.get(main, 0) + 1
            self.out_dir.mkdir(parents=True, exist_ok=True)
            path = self.out_dir / f"{s.record['check']}-s{s.record['seed']}-i{s.index}.json"
            path.write_text(json.dumps(s.record, indent=1, ensure_ascii=True) + "\n", encoding="utf-8")
            s.record["file"] = str(path)
            self.files += 1
        s.record = {"file": s.record.get("file"), "checks": s.record["checks"]} if s.record is not None else None

    def state(self) -> dict:
        """What a later run needs to go on from here (--resume): the counts, the times,
        the slowest lists and the inputs that failed (their summaries)."""
        return {
            "n": self.n, "sizes": self.sizes, "by_gen": self.by_gen, "files": self.files,
            "files_by_check": self.files_by_check, "elapsed": time.monotonic() - self.t0,
            "by_check": {k: [asdict(x) for x in v] for k, v in self.by_check.items()},
            "parse_times": self.parse_times, "stream_times": self.stream_times,
            "slow_parse": self.slow_parse, "slow_stream": self.slow_stream,
        }  # fmt: skip

    def restore(self, state: dict) -> None:
        self.n, self.sizes, self.by_gen, self.files = state["n"], state["sizes"], state["by_gen"], state["files"]
        self.files_by_check = state["files_by_check"]
        self.t0 = time.monotonic() - state["elapsed"]
        self.by_check = {k: [Summary(**x) for x in v] for k, v in state["by_check"].items()}
        self.parse_times, self.stream_times = state["parse_times"], state["stream_times"]
        self.slow_parse = [tuple(x) for x in state["slow_parse"]]
        self.slow_stream = [tuple(x) for x in state["slow_stream"]]
        heapq.heapify(self.slow_parse)
        heapq.heapify(self.slow_stream)

    def progress(self, total: int) -> str:
        dt = time.monotonic() - self.t0
        bad = sum(len(v) for k, v in self.by_check.items() if k not in TIMING_CHECKS)
        return f"[fuzz] {self.n}/{total} inputs, {dt:.0f} s, {self.n / max(dt, 1e-9):.0f}/s, failing checks {bad}"

    def print(self, file: Any = None) -> None:
        file = file or sys.stdout  # (the stdout of now, not of when this module was loaded)
        dt = time.monotonic() - self.t0
        p = lambda *a: print(*a, file=file)  # noqa: E731
        p(f"inputs run: {self.n} ({self.sizes / 1e6:.1f} M characters) in {dt:.1f} s ({self.n / max(dt, 1e-9):.0f} inputs/s)")
        p("by generator: " + ", ".join(f"{g} {n}" for g, n in sorted(self.by_gen.items())))
        if not self.by_check:
            p("failures by check: none")
        else:
            p("failures by check (inputs; timing checks are marked *):")
            for check, items in sorted(self.by_check.items(), key=lambda kv: (kv[0] in TIMING_CHECKS, -len(kv[1]))):
                mark = "*" if check in TIMING_CHECKS else " "
                p(f"  {mark}{check:<17} {len(items):>7}")
                for s in sorted(items, key=lambda s: s.size)[:3]:
                    detail = next((f["detail"] for f in s.record["checks"] if f["check"] == check), "") if s.record else ""
                    where = s.record.get("file") if s.record else None
                    p(f"      #{s.index} {s.generator} {s.size} ch {s.head}")
                    p(f"         {detail[:150]}" + (f"  [{where}]" if where else ""))
        if self.files:
            p(f"failure files written: {self.files} in {self.out_dir}/")
        for title, heap in (("parse", self.slow_parse), ("1-char stream", self.slow_stream)):
            p(f"slowest {title} (tools=None):")
            for t, size, gen, index, head in sorted(heap, reverse=True):
                p(f"  {t * 1e3:9.2f} ms  {size:>6} ch  #{index} {gen:<8} {head}")
        for title, times in (("parse", self.parse_times), ("1-char stream", self.stream_times)):
            if times:
                times.sort()
                q = lambda f: times[min(len(times) - 1, int(f * len(times)))] * 1e3  # noqa: E731
                p(
                    f"{title} ms (CPU): p50 {q(0.5):.3f}  p90 {q(0.9):.3f}  p99 {q(0.99):.3f}  "
                    f"p99.9 {q(0.999):.3f}  max {times[-1] * 1e3:.3f}"
                )

    def failed(self, strict_time: bool = False) -> bool:
        """Whether the run fails (see EXIT): a correctness check failed, or with
        strict_time any check."""
        return any(strict_time or k not in TIMING_CHECKS for k in self.by_check)


# -- replay and minimize -----------------------------------------------------------------
def input_from_record(rec: dict) -> Input:
    return Input(rec.get("seed", 0), rec.get("index", 0), rec.get("generator", "replay"), rec["raw"],
                 rec.get("formats"), bool(rec.get("in_think")), None, rec.get("source", ""))  # fmt: skip


def minimize(inp: Input, tools: list | None, check: str, variant: str, hang_s: float, limit_s: float) -> str:
    """Delete spans of inp.raw (halves, then smaller) while `check` still fails."""
    only = (variant if variant in ("tools=None", "tools") else "tools=None", None)

    def fails(raw: str) -> bool:
        trial = Input(inp.seed, inp.index, inp.generator, raw, inp.formats, inp.in_think)
        out = run_input(trial, limit_s, hang_s, tools or [], only)
        return check in out.checks

    raw = inp.raw
    n = max(1, len(raw) // 2)
    while n >= 1:
        i, changed = 0, False
        while i < len(raw):
            cand = raw[:i] + raw[i + n :]
            if fails(cand):
                raw, changed = cand, True
            else:
                i += n
        if not changed:
            n //= 2
    return raw


def replay(paths: list[str], args: argparse.Namespace) -> int:
    bad = 0
    for path in paths:
        try:
            rec = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            print(f"{path}: cannot be read: {exc}", file=sys.stderr)
            return 2
        inp = input_from_record(rec)
        out = run_input(inp, args.time_limit_ms / 1e3, args.hang_s, rec.get("tools") or [])
        print(f"{path}: {len(inp.raw)} ch, {out.checks or 'passes'}")
        for f in out.failures:
            print(f"  {f['check']} [{f['variant']}] {f['detail'][:200]}")
        bad += any(args.strict_time or c not in TIMING_CHECKS for c in out.checks)
        if args.minimize and out.failures:
            first = next((f for f in out.failures if f["check"] not in TIMING_CHECKS), out.failures[0])
            small = minimize(inp, rec.get("tools"), first["check"], first["variant"], min(args.hang_s, 3.0), args.time_limit_ms / 1e3)
            print(f"  minimized ({first['check']}, {first['variant']}): {small!r}")
    return 1 if bad else 0


# -- main --------------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], epilog=EXIT, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--count", type=int, default=10_000, help="inputs to run (default 10000)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--start", type=int, default=0, help="first input index (default 0)")
    ap.add_argument("--max-size", type=int, default=32_768, help="largest input, characters (default 32768)")
    ap.add_argument("--out", default=str(ROOT / "fuzz-failures"), help="failure files go here (default fuzz-failures/)")
    ap.add_argument("--time-limit-ms", type=float, default=50.0, help="slow_parse above this (default 50)")
    ap.add_argument("--hang-s", type=float, default=20.0, help="an input using more CPU time is a hang (default 20)")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="worker processes (0: in this process)")
    ap.add_argument("--max-memory-mb", type=int, default=4096, help="address-space limit per worker (0: none)")
    ap.add_argument("--stream-factor", type=float, default=3.0, help="slow_stream: over this x parse (default 3) ...")
    ap.add_argument("--stream-us-per-delta", type=float, default=10.0, help="... + this many µs a delta (default 10)")
    ap.add_argument("--stream-floor-ms", type=float, default=1.0,
                    help="... and over this many ms of CPU (default 1: a stream's own fixed cost, a page fault or a "
                         "collection pass is more than the budget of an input of a few characters)")  # fmt: skip
    ap.add_argument("--retime", type=int, default=3,
                    help="a parse or stream over its limit is timed this many times more, warm, in the same worker, "
                         "and the best counts (default 3; 0: the first reading)")  # fmt: skip
    ap.add_argument("--max-files-per-check", type=int, default=0,
                    help="write at most this many failure files per check (default 0: all)")  # fmt: skip
    ap.add_argument("--strict-time", action="store_true",
                    help="a timing failure (slow_parse, slow_stream) fails the run too (exit 1)")  # fmt: skip
    ap.add_argument("--top", type=int, default=10, help="slowest inputs to list")
    ap.add_argument("--resume", metavar="STATE",
                    help="keep the run's state in STATE (JSON: its arguments, the next input, the counts, times "
                         "and slowest lists so far), written every 2 minutes and at the end or ^C; where STATE "
                         "exists, go on from it (its seed, sizes and end; --count and --start are its)")  # fmt: skip
    ap.add_argument("--replay", nargs="+", metavar="FILE", help="rerun failure files instead")
    ap.add_argument("--minimize", action="store_true", help="with --replay: shrink each failing input")
    args = ap.parse_args(argv)

    global STREAM_FACTOR, STREAM_PER_DELTA_S, STREAM_FLOOR_S, RETIME
    STREAM_FACTOR, STREAM_PER_DELTA_S = args.stream_factor, args.stream_us_per_delta * 1e-6
    STREAM_FLOOR_S, RETIME = args.stream_floor_ms * 1e-3, max(0, args.retime)
    if args.replay:
        warm_up()
        return replay(args.replay, args)

    opts = {
        "seed": args.seed, "max_size": args.max_size, "limit_s": args.time_limit_ms / 1e3, "hang_s": args.hang_s,
        "max_memory_mb": args.max_memory_mb, "stream_factor": STREAM_FACTOR, "stream_per_delta_s": STREAM_PER_DELTA_S,
        "stream_floor_s": STREAM_FLOOR_S, "retime": RETIME,
    }  # fmt: skip
    t0 = time.monotonic()
    # A run started in the background (`nohup … &`) ignores SIGINT, and `kill` sends
    # SIGTERM: either stops the run as ^C does, with the report of the inputs run so far.
    def _interrupt(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGINT, _interrupt)
    signal.signal(signal.SIGTERM, _interrupt)
    warm_up()  # (before the fork: the workers inherit the built grammars and the corpus)
    print(f"[fuzz] seed {args.seed}, {args.count} inputs, max size {args.max_size}, jobs {args.jobs}, "
          f"warm-up {time.monotonic() - t0:.1f} s", file=sys.stderr)  # fmt: skip
    report = Report(Path(args.out), args.top, args.max_files_per_check)
    start, stop = args.start, args.start + args.count
    done: set = set()  # (inputs run past `start`, the first not run: workers finish out of order)
    resume = Path(args.resume) if args.resume else None
    if resume is not None and resume.exists():
        state = json.loads(resume.read_text(encoding="utf-8"))
        if (state["seed"], state["max_size"]) != (args.seed, args.max_size):
            print(f"{resume}: a run of seed {state['seed']}, max size {state['max_size']}: give those", file=sys.stderr)
            return 2
        start, stop, done = state["next"], state["stop"], set(state["done"])
        report.restore(state["report"])
        print(f"[fuzz] resumed from {resume}: {report.n} inputs run, going on at {start}", file=sys.stderr)
    total = stop - args.start if resume is None else stop - start + report.n
    skip = set(done)
    indexes = (i for i in range(start, stop) if i not in skip)
    last = [time.monotonic(), time.monotonic()]

    def save() -> None:
        if resume is None:
            return
        state = {"seed": args.seed, "max_size": args.max_size, "next": start, "stop": stop,
                 "done": sorted(done), "report": report.state()}  # fmt: skip
        tmp = resume.with_name(resume.name + ".tmp")
        tmp.write_text(json.dumps(state), encoding="utf-8")
        tmp.replace(resume)  # (a run killed while writing keeps the state before)

    def on_result(s: Summary) -> None:
        nonlocal start
        report.add(s)
        done.add(s.index)
        while start in done:
            done.discard(start)
            start += 1
        if time.monotonic() - last[0] > 15:
            last[0] = time.monotonic()
            print(report.progress(total), file=sys.stderr, flush=True)
        if time.monotonic() - last[1] > 120:
            last[1] = time.monotonic()
            save()

    try:
        if args.jobs <= 0:
            for i in indexes:
                on_result(summarize(run_input(make_input(args.seed, i, args.max_size), opts["limit_s"], args.hang_s)))
        else:
            Pool(args.jobs, opts).run(indexes, on_result)
    except KeyboardInterrupt:
        print("[fuzz] interrupted", file=sys.stderr)
    save()
    report.print()
    return 1 if report.failed(args.strict_time) else 0


if __name__ == "__main__":
    sys.exit(main())
