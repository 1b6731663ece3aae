"""parse() and StreamParser on replies built to be slow: every format's start markers
repeated, each left broken or each a valid call, at growing sizes.

    python benchmarks/bench_pathological.py [--sizes 4,8,16,32] [--formats hermes,lfm2]
                                            [--quick] [--timeout 20] [--top 25] [--all]
                                            [--match TEXT]

Shapes, for every built-in format and each of its start markers M (a marker several
formats share is one shape, named after the first of them):

    M*k              the marker alone, repeated
    (M+"{")*k        each a JSON payload that never closes
    (M+"x")*k        each followed by a character that is no payload
    (M+payload)*k    a valid call repeated: the shortest reply of the format's corpus
                     folder (tests/corpus/<format>/) that contains M and that parse()
                     reads as calls of that format without an error, with its tools;
                     with none, M + '{"name": "f", "arguments": {"a": 1}}' + its first end
                     marker. (A format without start markers gets only this shape, from
                     its corpus: json_reply, bare_pythonic, glm45_bare, gemma4_bare.)

one call whose value nests deeper and deeper, left open (the reply cut inside it) and, for
the XML-ish ones, closed too (QA6 D7/D8: a stack copied at each token, 3 s and 150 MB at
32 KB): JSON brackets (hermes), Gemma braces (gemma4_call), a Python list (pythonic),
nested elements (minimax_m3_nested_xml, cohere_cofl_xml, bfcl_verbose_xml); a pythonic
call with a keyword repeated, cut by the end and closed (QA6 D10); a MiniMax M3 call of
many elements, 1.5 times the size, so that max_chars cuts it at 32 KB; a MiniMax value of
`<parameter name="a">x</parameter>` lines and a Kimi K3 call with prose after its argument's
close then `</parameter>` lines (QA11 D7: streams); for each format whose header declares
stream_param, a call of parameters whose closes are all left out (`<parameter=q>x\n`
repeated: open parameters), then the call's closers, or cut there (Q11, Q12), and calls
of it each cut in their one value, the values all different, each written three times
(`Nanj0` three times, `Nanj1` ...: cut calls, distinct values; the storm memo shares
none), that storm on one line for MiniCPM5 and Qwen3-Coder, and Hermes's JSON cut so
(issue 17); and pythonic lists repeated with their tools: "[calc_absolute_pressure(gauge_pressure=2.5,
atm_pressure=1.0)]\\n", and each tests/corpus/pythonic/*.txt (--quick: the hand-written
ones, not smollm2_*).

Each is built at each size (KB = 1024 characters; k = size // len(unit)) and timed:
parse() (formats=None, the default max_chars), the stream in 8-character deltas, and
the stream in 1-character deltas, which only runs up to --stream1-max-kb (default 16:
a 1-character stream of 32 KB costs seconds on the slow shapes). Times are CPU time
(time.process_time) of a child process that freezes the heap it was forked with (the
least of 3 runs when one takes under 0.2 s); the timeout (--timeout, wall clock, per measurement) kills the child, which is
shown as ">Ns", and the larger sizes of that shape and measurement are skipped
(shown as "-").

Printed: the slowest shapes at the largest size (times per size, the growth ratio of
the two largest sizes: linear is about 2x), the worst growth ratios and stream/parse
ratios, the streams over their budget (3x the parse + 10 µs a delta; each one found
over it is measured again twice with its parse, keeping the least; so is a parse over
50 ms at 32 KB), the peak memory
of one parse at the largest size (tracemalloc, bytes a character of the reply), and a
summary line: shapes whose parse takes over 50 ms at 32 KB, the worst
growth ratio (over parse and the 8-character stream, of times of at least 2 ms), the
worst stream/parse ratio (the 8-character stream at the largest size; the 1-character
one at its largest; of parses of at least 1 ms). The machine's noise moves a growth ratio by a quarter or more:
check a suspect one at more sizes (--formats X --sizes 4,8,16,32,64).

--match TEXT: only the shapes whose name holds TEXT ("distinct values").

--quick: sizes 16 and 32 KB, so the 1-character stream runs at 16 KB only (its growth
is not measured), the hand-written pythonic cases only, timeout 10 s.
"""

from __future__ import annotations

import argparse
import gc
import json
import multiprocessing
import sys
import time
import tracemalloc
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT / "src") not in sys.path:
    sys.path.insert(0, str(ROOT / "src"))

import toolgram  # noqa: E402
from toolgram._grammar.registry import default_registry  # noqa: E402
from toolgram._stream.parser import StreamParser  # noqa: E402

CORPUS = ROOT / "tests" / "corpus"
KB = 1024
SYNTHETIC_PAYLOAD = '{"name": "f", "arguments": {"a": 1}}'
PYTHONIC_LINE = "[calc_absolute_pressure(gauge_pressure=2.5, atm_pressure=1.0)]\n"
OPS = ("parse", "stream8", "stream1")
_M3 = "]<]minimax[>["
# (format, prefix, unit, closer): a value nesting one level more with each unit. A closed
# shape's end markers are left out: the end of the reply closes the call.
DEEP = [
    ("hermes", '<tool_call>{"name": "run", "arguments": {"a": ', "[", ""),
    ("gemma4_call", "<|tool_call>call:run{a:", "{b:", ""),
    ("pythonic", "[run(a=", "[", ""),
    ("minimax_m3_nested_xml", _M3 + "<tool_call>\n" + _M3 + '<invoke name="run">', _M3 + "<a>", _M3 + "</a>"),
    ("cohere_cofl_xml", '<cofl:tool_calls><cofl:tool_call id="0" name="run">', '<cofl:value name="a" type="dict">', "</cofl:value>"),
    ("bfcl_verbose_xml", '<functions><function name="run"><params>', '<param name="a"><dict>', "</dict></param>"),
]

_DSML32, _DSML41 = "<\uff5cDSML\uff5c", "<\uff5cDSML\uff5c "
# (format, the call and value opened, one opener line, the real closers)
OPENER_LINES = [
    ("minimax_m2_invoke", '<minimax:tool_call>\n<invoke name="write">\n<parameter name="content">', '<invoke name="f">\n',
     "</parameter>\n</invoke>\n</minimax:tool_call>"),
    ("qwen3_coder_xml", "<tool_call>\n<function=write>\n<parameter=content>\n", "<function=f>\n",
     "\n</parameter>\n</function>\n</tool_call>"),
    ("seed_oss_xml", "<seed:tool_call>\n<function=write>\n<parameter=content>\n", "<function=f>\n",
     "\n</parameter>\n</function>\n</seed:tool_call>"),
    ("dots_invoke", '<dots_function_call>\n<invoke name="write">\n<parameter name="content">', '<invoke name="f">\n',
     "</parameter>\n</invoke>\n</dots_function_call>"),
    ("deepseek_v32_dsml", _DSML32 + 'function_calls>\n' + _DSML32 + 'invoke name="write">\n' + _DSML32
     + 'parameter name="content" string="true">', _DSML32 + 'invoke name="f">\n',
     "</\uff5cDSML\uff5cparameter>\n</\uff5cDSML\uff5cinvoke>\n</\uff5cDSML\uff5cfunction_calls>"),
    ("deepseek_v41_dsml", _DSML41 + 'calls>\n' + _DSML41 + 'invoke name="write">\n' + _DSML41
     + 'parameter name="content" string="true">', _DSML41 + 'invoke name="f">\n',
     "</\uff5cDSML\uff5c parameter>\n</\uff5cDSML\uff5c invoke>\n</\uff5cDSML\uff5c calls>"),
]

# Calls cut in their value, one a unit, the value's `%d` counted (Shape.distinct).
DISTINCT = [
    ("minicpm5_function_param", '<function name="get_weather"><param name="city">Nanj%d'),
    ("qwen3_coder_xml", "<function=get_weather><parameter=city>Nanj%d"),
    ("hermes", '<tool_call>{"name":"get_weather","arguments":{"city":"Nanj%d'),
]

_K3_CALL = '<|open|>tools<|sep|><|open|>call tool="write" index="1"<|sep|><|open|>argument key="content" type="string"<|sep|>'


@dataclass
class Shape:
    name: str  # what the table shows
    unit: str
    tools: Any = None
    times: dict[str, dict[int, float | None]] = field(default_factory=dict)  # op -> size -> s (None: timeout)
    notes: str = ""
    memory: float | None = None  # bytes a character at the peak of one parse, at the largest size
    prefix: str = ""  # written once before the units (a call the units nest in)
    suffix: str = ""  # a closer written once for each unit, after them all (a nesting closed)
    tail: str = ""  # written once at the end (a call's close)
    over: float = 1.0  # the reply is this many times the size (past max_chars: cut by it)
    # Where > 0: the unit holds a `%d`, and the k-th unit is written with k // distinct
    # there (each value written `distinct` times, all of them different), cut to the size.
    distinct: int = 0

    def raw(self, size: int) -> str:
        size = int(size * self.over)
        if self.distinct:
            units, n, k = [], len(self.prefix) + len(self.tail), 0
            while n < size:
                units.append(self.unit % (k // self.distinct))
                n += len(units[-1])
                k += 1
            return (self.prefix + "".join(units))[: size - len(self.tail)] + self.tail
        k = max(1, (size - len(self.prefix) - len(self.tail)) // max(1, len(self.unit) + len(self.suffix)))
        return self.prefix + self.unit * k + self.suffix * k + self.tail


# Hosts whose value reads a run of openers without `>` as text (QA11 D9).
OPENERS_IN_VALUE = [
    ("step3_steptml", '<｜tool_calls_begin｜><｜tool_call_begin｜><steptml:invoke name="write"><steptml:parameter name="content">',
     "</steptml:parameter></steptml:invoke><｜tool_call_end｜><｜tool_calls_end｜>"),
    ("minicpm5_function_param", '<function name="write"><param name="content">', "</param></function>"),
]


def _sidecar(path: Path) -> Any:
    return json.loads(path.read_bytes().decode("utf-8")) if path.exists() else None


def corpus_example(fmt: str, marker: str) -> tuple[str, Any, str] | None:
    """The shortest case of tests/corpus/<fmt>/ that holds `marker` and parses (formats=None)
    to calls of fmt and no error: (raw, tools, case name)."""
    folder = CORPUS / fmt
    if not folder.is_dir():
        return None
    best = None
    for path in sorted(folder.glob("*.txt")):
        stem = path.name[:-4]
        if path.with_name(stem + ".formats.json").exists() or _sidecar(path.with_name(stem + ".in_think.json")):
            continue
        raw = path.read_bytes().decode("utf-8")
        if marker not in raw or (best is not None and len(raw) >= len(best[0])):
            continue
        tools = _sidecar(path.with_name(stem + ".tools.json"))
        result = toolgram.parse(raw, tools)
        if result.calls and not result.errors and all(c.format == fmt for c in result.calls):
            best = (raw, tools, stem)
    return best


def olmo_mix() -> tuple[str, list[str]]:
    """tests/corpus/olmo3_pythonic/'s cases joined, each followed by one of four
    separators in turn, and the names of the tools they are offered."""
    seps = ("\n", "", " ", "\n\n")
    parts, names = [], []
    for k, path in enumerate(sorted((CORPUS / "olmo3_pythonic").glob("*.txt"))):
        parts.append(path.read_bytes().decode("utf-8") + seps[k % len(seps)])
        for tool in _sidecar(path.with_name(path.name[:-4] + ".tools.json")) or ():
            name = tool if isinstance(tool, str) else tool.get("function", tool).get("name")
            if name and name not in names:
                names.append(name)
    return "".join(parts), names


def open_parameters(fmt: Any) -> tuple[str, str, str]:
    """A call of the format as its header's stream_call and stream_param write it: (its
    start marker and call opener, one parameter opener and a short value, its closers)."""
    call_open, call_close = fmt.stream_call
    call_open = call_open.split(" | ")[0].replace("{call}", "").replace("{attrs}", "").replace("{name}", "search")
    param = fmt.stream_param[0].replace("{key}", "q").replace("{type}", "string" if "type=" in fmt.stream_param[0] else "true")
    start = fmt.starts[0] if fmt.starts and not call_open.startswith(fmt.starts[0]) else ""
    end = fmt.ends[0] if fmt.ends and not call_close.endswith(fmt.ends[0]) else ""
    return (start + "\n" if start else "") + call_open + "\n", param + "x\n", call_close + ("\n" + end if end else "")


def cut_call(fmt: Any) -> str:
    """A call of the format as open_parameters writes it, named get_weather, up to its one
    parameter's value (`city`)."""
    call_open = fmt.stream_call[0].split(" | ")[0].replace("{call}", "").replace("{attrs}", "").replace("{name}", "get_weather")
    param = fmt.stream_param[0].replace("{key}", "city").replace("{type}", "string" if "type=" in fmt.stream_param[0] else "true")
    start = fmt.starts[0] if fmt.starts and not call_open.startswith(fmt.starts[0]) else ""
    return (start + "\n" if start else "") + call_open + "\n" + param


def build_shapes(formats: list[str] | None, quick: bool) -> list[Shape]:
    shapes: list[Shape] = []
    seen: dict[tuple, Shape] = {}

    def add(name: str, unit: str, tools: Any = None, prefix: str = "", suffix: str = "", tail: str = "", over: float = 1.0, distinct: int = 0) -> None:
        key = (prefix, unit, suffix, tail, over, distinct, json.dumps(tools, sort_keys=True))
        if key in seen:
            first = seen[key]
            fmt = name.split(" ", 1)[0]
            if fmt not in first.notes and fmt != first.name.split(" ", 1)[0]:
                first.notes = (first.notes + ", " if first.notes else "also ") + fmt
            return
        seen[key] = Shape(name, unit, tools, prefix=prefix, suffix=suffix, tail=tail, over=over, distinct=distinct)
        shapes.append(seen[key])

    for fmt in default_registry().select(None):
        if formats and fmt.name not in formats:
            continue
        end = fmt.ends[0] if fmt.ends else ""
        for m in fmt.starts:
            add(f"{fmt.name} M*k M={m!r}", m)
            add(f'{fmt.name} (M+"{{")*k M={m!r}', m + "{")
            add(f'{fmt.name} (M+"x")*k M={m!r}', m + "x")
            example = corpus_example(fmt.name, m)
            if example:
                raw, tools, stem = example
                add(f"{fmt.name} (M+payload)*k M={m!r} [{stem}]", raw + "\n", tools)
            else:
                add(f"{fmt.name} (M+payload)*k M={m!r} [synthetic]", m + SYNTHETIC_PAYLOAD + end + "\n")
        if not fmt.starts:
            example = corpus_example(fmt.name, "")
            if example:
                raw, tools, stem = example
                add(f"{fmt.name} payload*k (no start marker) [{stem}]", raw + "\n", tools)
    if not formats:
        # One long word: every marker-less format's name token reads it all (a pattern
        # that backtracks over it at each step is slow here, not in marker storms).
        for word in ("a", "é", "名"):
            add(f"prose word {word!r}*k", word)
    for fmt, prefix, unit, suffix in DEEP:
        if not formats or fmt in formats:
            add(f"{fmt} deep value, left open", unit, ["run"], prefix)
            if suffix:
                add(f"{fmt} deep value, closed", unit, ["run"], prefix, suffix)
    for fmt, prefix, unit, tail in OPENER_LINES:
        if not formats or fmt in formats:
            # A value of the format's own call openers one a line, then the real closers:
            # each opener reads as a call, an opener alone, and the salvage read the region
            # again before each of them (issue 17: 16 KB took 13 s).
            add(f"{fmt} value of own openers one a line, then the closers", unit, ["write"], prefix, tail=tail)
    for fmt in default_registry().select(None):
        if (formats and fmt.name not in formats) or fmt.stream_param is None:
            continue
        # A call of parameters whose closes are all left out, each opener after a short
        # value (`<parameter=q>\nx\n` repeated), then the call's closers, or none (the
        # reply cut): each close left out was repaired by looking through the call's
        # parts, and its value read the next dozen openers as its text (Q11: quadratic,
        # 831 ms at 32 KB; Q12: 111 ms, a stream 5x).
        prefix, unit, tail = open_parameters(fmt)
        add(f"{fmt.name} open parameters, then the closers", unit, ["search"], prefix, tail=tail)
        add(f"{fmt.name} open parameters, cut", unit, ["search"], prefix)
        # Calls each cut in their one value, the values all different, each written three
        # times (`<function=get_weather>\n<parameter=city>\nNanj7` ...), no tools: the
        # storm memo shares none of them, and each call's driver walked the dozen openers
        # after its value again, and four dozen more (150-380 ms at 32 KB, issue 17).
        add(f"{fmt.name} cut calls, distinct values", cut_call(fmt).replace("%", "%%") + "Nanj%d", distinct=3)
    # The same storm as the distinct values' above, written on one line, and JSON's.
    for fmt, unit in DISTINCT:
        if not formats or fmt in formats:
            add(f"{fmt} cut calls on one line, distinct values", unit, distinct=3)
    if not formats or "minimax_m3_nested_xml" in formats:
        # One call of many elements, 1.5 times the size: past 32 KB max_chars cuts it,
        # at a close tag or the `]<]` of one (a salvage read it all again: ~100 ms).
        add("minimax_m3_nested_xml call of elements x1.5, cut by max_chars", _M3 + "<a>v" + _M3 + "</a>", ["run"],
            _M3 + "<tool_call>\n" + _M3 + '<invoke name="run">', tail=_M3 + "</invoke>\n" + _M3 + "</tool_call>", over=1.5)
    for fmt, prefix, suffix in OPENERS_IN_VALUE:
        if not formats or fmt in formats:
            # A value of openers without `>` (`<param <param …`), then its closes: no tag
            # of them settles, so a stream re-read the value at each delta (QA11 D9).
            for unit in ("<param ", "<invoke "):
                add(f"{fmt} value of {unit.strip()!r} openers, closed", unit, ["write"], prefix, tail=suffix)
    if not formats or "olmo3_pythonic" in formats:
        # The format's corpus cases in turn, each after a separator of its own (QA12 N7: a
        # fuzz mix of them, 31 KB, took 100 ms): each block is a region whose memo key is
        # not seen again within the storm memo's look, and a block with a name that has a
        # space in it is read by the salvage and the spaced-name reading again.
        unit, names = olmo_mix()
        add("olmo3_pythonic corpus cases in turn*k", unit, names)
    if not formats or "minimax_m2_invoke" in formats:
        # A value of markup lines, closed: a stream's look before the end of its text
        # was followed anew at each delta (QA11 D7: 16 KB in 64-character deltas, 18 ms).
        add("minimax_m2_invoke value of <parameter> lines, closed", '<parameter name="a">x</parameter>\n', ["write"],
            OPENER_LINES[0][1], tail=OPENER_LINES[0][3])
    if not formats or "kimi_k3_open_close" in formats:
        # A call, prose after its argument's close (the value runs on), then lines of
        # XML closers: the value's pattern may look 1,579 characters on from each `<`, and
        # a 1-character stream matched that much again at each character (QA11 D7).
        add("kimi_k3_open_close call, prose after the argument's close, then </parameter> lines", "\n</parameter>", None,
            _K3_CALL + "hello<|close|>argument<|sep|> then prose " + "x " * 200)
    if not formats or "pythonic" in formats:
        add("pythonic cut call, keyword repeated", "x', b='", ["run"], "[run(cmd='a', b='")
        add("pythonic call, keyword repeated, closed", "x', b='", ["run"], "[run(cmd='a', b='", tail="')]")
        add("pythonic calc_absolute_pressure list*k", PYTHONIC_LINE, ["calc_absolute_pressure"])
        # Plain lists, one a line (pyframe reads them), the reply cut inside the last: the
        # salvage replayed the region from its start, and read it again up to each point,
        # by the driver's own lexer (1 s at 32 KB for the first).
        add("pythonic plain list*k, the last cut after its call's )", "[f(1, 2)]\n", tail="[f(1, 2)")
        add("pythonic plain list*k, the last cut inside its call", "[f(1, 2)]\n", tail="[f(1")
        add("pythonic plain list of two calls*k, the last cut", "[f(a=1), g(b=2)]\n", ["f", "g"], tail="[f(a=1), g(b=2)")
        # A bare word as a value (`unquoted_string`), or as a positional argument: pyframe
        # hands each such list to the driver, which reads it at 3-4x a plain list's cost.
        add("pythonic list with a bare-word value*k", "[f(a=x.y)]\n")
        add("pythonic list with a bare-word positional argument*k", "[f(g)]\n")
        for path in sorted((CORPUS / "pythonic").glob("*.txt")):
            stem = path.name[:-4]
            if quick and stem.startswith("smollm2_"):
                continue
            tools = _sidecar(path.with_name(stem + ".tools.json"))
            add(f"pythonic case*k [{stem}]", path.read_bytes().decode("utf-8") + "\n", tools)
    return shapes


# -- measuring, in a child process ----------------------------------------------------------
def _best(fn: Any) -> float:
    t0 = time.process_time()
    fn()
    best = time.process_time() - t0
    if best < 0.2:  # (least of 3: one run may meet a collection, or the machine's load)
        for _ in range(2):
            t0 = time.process_time()
            fn()
            best = min(best, time.process_time() - t0)
    return best


def _stream(raw: str, tools: Any, size: int) -> None:
    sp = StreamParser(tools)
    for i in range(0, len(raw), size):
        sp.feed(raw[i : i + size])
    sp.close()


def _child(conn: Any, raw: str, tools: Any, ops: list[str], max_memory_mb: int) -> None:
    # The heap forked from the parent (every shape's text, the corpus read) is no parse's:
    # left to the collector, the first full collection walks it all, and copies each of
    # its pages, inside the first measurement (a 45 ms parse measured 160 ms).
    gc.freeze()
    if max_memory_mb:
        try:
            import resource

            limit = max_memory_mb * 1024 * 1024
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        except (ImportError, ValueError, OSError):
            pass
    for op in ops:
        try:
            if op == "parse":
                t = _best(lambda: toolgram.parse(raw, tools))
            elif op == "memory":  # (bytes at the peak of one parse, traced)
                tracemalloc.start()
                toolgram.parse(raw, tools)
                t = float(tracemalloc.get_traced_memory()[1])
                tracemalloc.stop()
            else:
                t = _best(lambda: _stream(raw, tools, 8 if op == "stream8" else 1))
            conn.send((op, t, None))
        except BaseException as exc:  # noqa: BLE001 - (MemoryError, a bug): reported
            conn.send((op, None, f"{type(exc).__name__}"))
            return


def measure(raw: str, tools: Any, ops: list[str], timeout: float, max_memory_mb: int) -> dict[str, Any]:
    """{op: seconds, or None for a timeout, or "Error" for an exception}; ops after a
    timeout are not run (absent)."""
    ctx = multiprocessing.get_context("fork")
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(child, raw, tools, ops, max_memory_mb), daemon=True)
    proc.start()
    child.close()
    out: dict[str, Any] = {}
    try:
        for op in ops:
            if not parent.poll(timeout):
                if proc.is_alive():
                    out[op] = None  # timed out
                break
            try:
                name, t, err = parent.recv()
            except EOFError:
                out[op] = "crash"
                break
            out[name] = t if err is None else err
            if err is not None:
                break
    finally:
        if proc.is_alive():
            proc.kill()  # (the child this call started, by its handle)
        proc.join(5)
        parent.close()
    return out


# -- the report -------------------------------------------------------------------------------
def fmt_time(t: Any, timeout: float) -> str:
    if t is None:
        return f">{timeout:g}s"
    if isinstance(t, str):
        return t
    return f"{t * 1e3:.1f}" if t < 10 else f"{t:.1f}s"


def growth(times: dict[int, Any], sizes: list[int], floor: float = 0.002) -> float | None:
    have = [s for s in sizes if isinstance(times.get(s), float)]
    if len(have) < 2:
        return None
    a, b = have[-2], have[-1]
    if times[a] < floor:
        return None
    return (times[b] / times[a]) / (b / a) * 2  # (normalised to a doubling: linear = 2)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default=None, help="sizes in KB, comma-separated (default 4,8,16,32)")
    ap.add_argument("--formats", default=None, help="only these formats' markers, comma-separated")
    ap.add_argument("--quick", action="store_true", help="sizes 16,32; 1-char stream at 16 KB; fewer pythonic cases")
    ap.add_argument("--timeout", type=float, default=None, help="seconds per measurement (default 20, --quick 10)")
    ap.add_argument("--stream1-max-kb", type=int, default=16, help="1-character stream up to this size (default 16)")
    ap.add_argument("--max-memory-mb", type=int, default=4096, help="address-space limit of the child (0: none)")
    ap.add_argument("--top", type=int, default=25, help="slowest shapes to show")
    ap.add_argument("--all", action="store_true", help="show every shape")
    ap.add_argument("--match", default=None, help="only the shapes whose name holds this text")
    args = ap.parse_args(argv)

    sizes_kb = [int(s) for s in args.sizes.split(",")] if args.sizes else ([16, 32] if args.quick else [4, 8, 16, 32])
    sizes = [s * KB for s in sorted(sizes_kb)]
    timeout = args.timeout if args.timeout is not None else (10.0 if args.quick else 20.0)
    formats = args.formats.split(",") if args.formats else None
    if formats:
        known = {f.name for f in default_registry().select(None)}
        unknown = [f for f in formats if f not in known]
        if unknown:
            ap.error(f"unknown format(s): {', '.join(unknown)} (`toolgram formats` lists them)")
    stream1_max = args.stream1_max_kb * KB

    toolgram.parse("<tool_call>{}</tool_call>")  # build the grammars before the children fork
    for fmt in default_registry().select(None):
        for m in fmt.starts or ("",):
            toolgram.parse(m + SYNTHETIC_PAYLOAD)
            _stream(m + SYNTHETIC_PAYLOAD, None, 8)
    shapes = build_shapes(formats, args.quick)
    if args.match:
        shapes = [shape for shape in shapes if args.match in shape.name]
    print(
        f"{len(shapes)} shapes, sizes {','.join(str(s // KB) for s in sizes)} KB, 1-char stream up to "
        f"{stream1_max // KB} KB; CPU time (time.process_time) in a child process; timeout {timeout:g} s wall "
        "per measurement",
        file=sys.stderr,
    )
    t_start = time.monotonic()
    for n, shape in enumerate(shapes, 1):
        shape.times = {op: {} for op in OPS}
        dead: set[str] = set()
        for size in sizes:
            ops = [op for op in OPS if op not in dead and (op != "stream1" or size <= stream1_max)]
            if not ops:
                continue
            if size == sizes[-1] and "parse" in ops:
                ops.append("memory")
            got = measure(shape.raw(size), shape.tools, ops, timeout, args.max_memory_mb)
            if isinstance(got.get("memory"), float):
                shape.memory = got.pop("memory") / max(1, len(shape.raw(size)))
            for op in ops:
                # (A traced parse that timed out or failed has no time to keep: "memory" is
                # no column of the times.)
                if op in got and op in shape.times:
                    shape.times[op][size] = got[op]
                # A timeout or an error ends this op for the larger sizes; an op the child
                # did not reach (after another's timeout) is not run again either.
                if not isinstance(got.get(op), float):
                    dead.add(op)
        if n % 25 == 0:
            print(f"[{n}/{len(shapes)}] {time.monotonic() - t_start:.0f} s", file=sys.stderr, flush=True)

    confirm_over_budget(shapes, sizes, stream1_max, timeout, args.max_memory_mb)
    confirm_slow_parses(shapes, timeout, args.max_memory_mb)
    report(shapes, sizes, timeout, args.top if not args.all else len(shapes), stream1_max)
    print(f"(total {time.monotonic() - t_start:.0f} s wall)")
    return 0


def budget(parse: float, size: int, step: int) -> float:
    """The stream's budget (the issue "Bounded"): 3x its parse plus 10 µs a delta."""
    return 3 * parse + 10e-6 * (-(-size // step))


def _over_budget(shape: Shape, sizes: list[int], stream1_max: int) -> list[tuple[str, int, int]]:
    """(op, size, delta size) of each stream of `shape` over its budget."""
    over = []
    p = shape.times["parse"]
    for op, step in (("stream8", 8), ("stream1", 1)):
        for s in sizes:
            st, pt = shape.times[op].get(s), p.get(s)
            if (op != "stream1" or s <= stream1_max) and isinstance(st, float) and isinstance(pt, float):
                if st > budget(pt, s, step):
                    over.append((op, s, step))
    return over


def confirm_over_budget(shapes: list[Shape], sizes: list[int], stream1_max: int, timeout: float, max_memory_mb: int) -> None:
    """Measure a stream found over its budget again, twice, with its parse, keeping the
    least of each: a stream of over 0.2 s is timed once (see _best), and one child's runs
    share its moment of the machine's load, which alone listed streams at 1.4x their
    budget that were under half of it."""
    for shape in shapes:
        for op, s, _ in _over_budget(shape, sizes, stream1_max):
            for _ in range(2):
                got = measure(shape.raw(s), shape.tools, ["parse", op], timeout, max_memory_mb)
                for k in ("parse", op):
                    if isinstance(got.get(k), float):
                        shape.times[k][s] = min(shape.times[k][s], got[k])


def confirm_slow_parses(shapes: list[Shape], timeout: float, max_memory_mb: int) -> None:
    """Time a parse found over 50 ms at 32 KB again, twice, each in a new child, keeping
    the least: one child's runs (see _best) share its moment of the machine's load (a
    full run listed `<function=` repeated at 80 ms that takes 41 ms alone)."""
    for shape in shapes:
        t = shape.times["parse"].get(32 * KB)
        if isinstance(t, float) and t > 0.05:
            for _ in range(2):
                got = measure(shape.raw(32 * KB), shape.tools, ["parse"], timeout, max_memory_mb)
                if isinstance(got.get("parse"), float):
                    shape.times["parse"][32 * KB] = min(shape.times["parse"][32 * KB], got["parse"])


def _largest(times: dict[int, Any]) -> tuple[int, Any]:
    if not times:
        return 0, 0.0
    size = max(times)
    return size, times[size]


def _sort_key(shape: Shape, op: str = "parse") -> tuple:
    """Slowest first: a timeout or an error (at the smallest size first), then the time
    at the largest size measured."""
    times = shape.times[op]
    bad = [s for s, t in times.items() if not isinstance(t, float)]
    if bad:
        return (1, -min(bad))
    size, t = _largest(times)
    return (0, size, t)


def report(shapes: list[Shape], sizes: list[int], timeout: float, top: int, stream1_max: int) -> None:
    big = sizes[-1]
    s1_sizes = [s for s in sizes if s <= stream1_max]
    head = (
        f"{'parse ms at ' + '/'.join(str(s // KB) for s in sizes) + ' KB':<30} {'grow':>5}  "
        f"{'8-char ms at ' + '/'.join(str(s // KB) for s in sizes):<30} {'grow':>5}  "
        f"{'1-char ms at ' + '/'.join(str(s // KB) for s in s1_sizes):<22} {'s8/p':>5} {'s1/p':>5}  shape"
    )
    print(f"slowest {top} of {len(shapes)} shapes by parse (CPU ms; grow: the time ratio of the two largest sizes, per")
    print("doubling: linear 2.0; s8/p, s1/p: stream time / parse time at the stream's largest size):")
    print(head)

    def row(shape: Shape) -> str:
        p, s8, s1 = (shape.times[op] for op in OPS)
        cells = []
        for times, its in ((p, sizes), (s8, sizes)):
            cells.append("/".join(fmt_time(times[s], timeout) if s in times else "-" for s in its))
            g = growth(times, its)
            cells.append(f"{g:.1f}" if g else "")
        cells.append("/".join(fmt_time(s1[s], timeout) if s in s1 else "-" for s in s1_sizes))
        ratio8 = ratio1 = ""
        if isinstance(p.get(big), float) and isinstance(s8.get(big), float) and p[big] > 0:
            ratio8 = f"{s8[big] / p[big]:.1f}"
        s1s = max((s for s in s1 if isinstance(s1[s], float)), default=None)
        if s1s and isinstance(p.get(s1s), float) and p[s1s] > 0:
            ratio1 = f"{s1[s1s] / p[s1s]:.0f}"
        name = shape.name + (f" ({shape.notes})" if shape.notes else "")
        return (
            f"{cells[0]:<30} {cells[1]:>5}  {cells[2]:<30} {cells[3]:>5}  {cells[4]:<22} {ratio8:>5} {ratio1:>5}  {name}"
        )

    for shape in sorted(shapes, key=_sort_key, reverse=True)[:top]:
        print(row(shape))
    print(f"\nslowest {min(top, 10)} by the 8-character stream at the largest size:")
    print(head)
    for shape in sorted(shapes, key=lambda sh: _sort_key(sh, "stream8"), reverse=True)[: min(top, 10)]:
        print(row(shape))

    # growth ranking
    grows = []
    for shape in shapes:
        for op, its in (("parse", sizes), ("stream8", sizes), ("stream1", s1_sizes)):
            g = growth(shape.times[op], its)
            if g:
                grows.append((g, op, shape))
    grows.sort(key=lambda x: -x[0])
    print("\nworst growth (per doubling, of times >= 2 ms; linear 2.0, quadratic 4.0):")
    for g, op, shape in grows[:10]:
        times = shape.times[op]
        have = [s for s in sizes if isinstance(times.get(s), float)][-2:]
        print(f"  {g:5.1f}  {op:<8} {' -> '.join(f'{times[s] * 1e3:.1f} ms at {s // KB} KB' for s in have)}  {shape.name}")

    timeouts = [(op, s, shape) for shape in shapes for op in OPS for s, t in shape.times[op].items() if t is None]
    errors = [(op, s, t, shape) for shape in shapes for op in OPS for s, t in shape.times[op].items() if isinstance(t, str)]
    if timeouts:
        print(f"\ntimeouts (>{timeout:g} s):")
        for op, s, shape in timeouts:
            print(f"  {op:<8} {s // KB} KB  {shape.name}")
    if errors:
        print("\nerrors:")
        for op, s, t, shape in errors:
            print(f"  {op:<8} {s // KB} KB {t}  {shape.name}")

    over = [sh for sh in shapes if isinstance(sh.times["parse"].get(32 * KB), float) and sh.times["parse"][32 * KB] > 0.05]
    over_t = [sh for sh in shapes if sh.times["parse"].get(32 * KB, 0.0) is None]
    worst_g = max(((g, op, sh) for g, op, sh in grows if op in ("parse", "stream8")), default=None, key=lambda x: x[0])
    ratios = []
    for sh in shapes:
        p = sh.times["parse"]
        for op, its in (("stream8", sizes), ("stream1", s1_sizes)):
            st = sh.times[op]
            s = max((s for s in its if isinstance(st.get(s), float) and isinstance(p.get(s), float)), default=None)
            if s and p[s] >= 0.001:  # (a parse of microseconds makes any stream look slow)
                ratios.append((st[s] / p[s], op, s, sh))
    ratios.sort(key=lambda x: -x[0])
    print("\nworst stream/parse ratios (each stream at its largest size; parses of at least 1 ms):")
    for r, op, s, sh in ratios[:8]:
        print(f"  {r:6.0f}x  {op:<8} {sh.times[op][s] * 1e3:.1f} ms / {sh.times['parse'][s] * 1e3:.2f} ms at {s // KB} KB  {sh.name}")
    # The stream's budget: 3x its parse plus 10 µs a delta (the issue "Bounded").
    over_budget = [
        (sh.times[op][s] / budget(sh.times["parse"][s], s, step), op, s, sh)
        for sh in shapes
        for op, s, step in _over_budget(sh, sizes, stream1_max)
    ]
    over_budget.sort(key=lambda x: -x[0])
    if over_budget:
        print("\nstreams over their budget (3x the parse + 10 µs a delta):")
        for r, op, s, sh in over_budget if top >= len(shapes) else over_budget[:8]:  # (--all: each)
            print(f"  {r:5.2f}x the budget  {op:<8} {sh.times[op][s] * 1e3:.1f} ms at {s // KB} KB  {sh.name}")
    mem = sorted(((sh.memory, sh) for sh in shapes if sh.memory is not None), key=lambda x: -x[0])
    if mem:
        print(f"\npeak memory of one parse at {big // KB} KB, bytes per character of the reply (traced):")
        for b, sh in mem[:5]:
            print(f"  {b:7.0f}  {sh.name}")
    worst_r8 = next((x for x in ratios if x[1] == "stream8"), None)
    worst_r1 = next((x for x in ratios if x[1] == "stream1"), None)
    parts = [
        f"parse over 50 ms at 32 KB: {len(over)}" + (f" (+{len(over_t)} timed out)" if over_t else "")
        if 32 * KB in sizes
        else "parse over 50 ms at 32 KB: (32 not measured)",
        f"worst growth: {worst_g[0]:.1f}x per doubling ({worst_g[1]}, {worst_g[2].name})" if worst_g else "worst growth: -",
        *(
            f"worst {op}/parse: {x[0]:.0f}x (at {x[2] // KB} KB, {x[3].name})" if x else f"worst {op}/parse: -"
            for op, x in (("stream8", worst_r8), ("stream1", worst_r1))
        ),
        f"streams over budget: {len(over_budget)}",
        f"peak memory: {mem[0][0]:.0f} bytes a character" if mem else "peak memory: -",
        f"timeouts: {len(timeouts)}",
    ]
    print("\nsummary: " + "; ".join(parts))


if __name__ == "__main__":
    sys.exit(main())
