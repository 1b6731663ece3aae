"""Mutation check: does the test suite catch the bugs it is meant to catch?

    python benchmarks/mutation_check.py [--only NAME ...] [--list] [--keep]
                                        [--pytest-args "..."] [--timeout 900]
                                        [--probes-only] [--deselect-baseline-failures]

It copies the project's tracked files (`git ls-files`, as they are in the work
tree) into a temporary folder, beside a symlink to ../shared (the tests read
it), and plants a fixed set of deliberate bugs (MUTANTS below) in that copy, one
at a time. Each mutant is a named, documented edit: the exact old text of a file
(it must occur exactly once: otherwise the mutant is "stale", the code moved)
and the text that replaces it. For each mutant:

  1. its probe (a small expression on parse()/StreamParser) is evaluated on the
     unmutated copy and on the mutant: a mutant that changes nothing there is
     "inert" (fix or drop it; it would survive for no fault of the tests) and no
     tests run for it;
  2. `python -m pytest -x -q -p no:cacheprovider <test files>` runs in the copy,
     with PYTHONPATH=<copy>/src (a small pytest plugin of this script checks, in
     every run, that `toolgram` is imported from the copy, not from the editable
     install, and notes the first failing test);
  3. the file is restored.

A test that fails: "caught" (with the first failing test's node id); the whole
suite passes: "survived"; the run exceeds --timeout: "timeout". The test files
are passed in an order that runs the quick, most sensitive ones first (the
corpus snapshots, the joiner, the stream), then every other tests/test_*.py:
-x stops at the first failure, but only the full suite decides "survived".

Before the mutants, a sanity pass runs the full suite on the unmutated copy: it
must pass (and import toolgram from the copy). If it does not, the check stops
(exit 2) and names the failing tests; --deselect-baseline-failures deselects
them in every mutant run instead (the report says so: those tests cannot catch
anything then).

Hypothesis runs with a fixed seed (--hypothesis-seed) and no example database
(the copy's .hypothesis is removed before each run), so that a rerun decides the
same. No bytecode is written in the copy (a restored file is never shadowed by a
mutant's .pyc).

Output: a table (mutant, kind, file, result, first failing test, seconds) and
`caught N of M`. Exit code: 0 when every mutant is caught, 1 otherwise, 2 when
the check itself could not run (the sanity pass failed, an unknown --only name).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from dataclasses import dataclass, field
from pathlib import Path

DEFAULT_REPO = Path(__file__).resolve().parent.parent
PROBE_TIMEOUT = 120  # seconds for one child process evaluating probes

# The test files that run first (quick, and sensitive to most mutants); every other
# tests/test_*.py follows, in name order.
FIRST_TESTS = (
    "tests/test_corpus.py",
    "tests/test_joiner.py",
    "tests/test_repair.py",
    "tests/test_typing.py",
    "tests/test_frame.py",
    "tests/test_stream.py",
    "tests/test_stream_announce.py",
    "tests/test_properties.py",
)

# pytest options that take a value as the next argument (so that value is not taken
# for a test path in --pytest-args).
_VALUE_OPTIONS = frozenset({
    "-k", "-m", "-p", "-o", "-c", "-W", "-r", "--deselect", "--ignore", "--ignore-glob", "--rootdir",
    "--hypothesis-seed", "--maxfail", "--durations", "--tb", "--confcutdir", "--basetemp", "--junitxml",
    "--override-ini", "--import-mode", "--log-level", "--timeout",
})  # fmt: skip


@dataclass(frozen=True)
class Edit:
    file: str  # relative to the repo root
    old: str  # must occur exactly once in the file
    new: str


@dataclass(frozen=True)
class Mutant:
    name: str
    kind: str
    doc: str  # the bug, as a reviewer would describe it
    edits: tuple[Edit, ...]
    # A Python expression evaluated with the probe prelude (parse, StreamParser,
    # stream(), events_of()); its repr must differ between the original and the mutant.
    probe: str

    @property
    def file(self) -> str:
        return ", ".join(dict.fromkeys(e.file.rpartition("/")[2] for e in self.edits))


def _m(name: str, kind: str, doc: str, file: str, old: str, new: str, probe: str) -> Mutant:
    return Mutant(name, kind, " ".join(doc.split()), (Edit(file, old, new),), probe)


P = "src/toolgram/"

# -- the mutants ----------------------------------------------------------------------
#
# Kinds: repair-dropped, message-changed, flush-skipped, whitespace-stripped,
# segment-kind, string-open, separator, limit-ignored, and a few more (other).
# Where the code has two twin paths (parse's fast frame and the general way; the
# stream's Joiner and parse's WholeJoiner), a mutant in only one of them is a fair
# test too: the suite should notice that the two disagree.

MUTANTS: tuple[Mutant, ...] = (
    # -- a repair name dropped --------------------------------------------------------
    _m(
        "repair-trailing-comma",
        "repair-dropped",
        """The lenient JSON pass accepts a trailing comma but no longer names the repair
        "trailing_comma" (call.repairs).""",
        P + "_recover/repair.py",
        '                    if comma:\n                        note("trailing_comma")\n                        comma = False\n',
        "                    if comma:\n                        comma = False\n",
        """parse('<tool_call>{"name": "f", "arguments": {"a": 1,}}</tool_call>').calls[0].repairs""",
    ),
    _m(
        "repair-cut-by-max-chars",
        "repair-dropped",
        """finish_call no longer adds "cut_by_max_chars" to a repaired call that max_chars cut
        off (the call looks as if the model had broken it).""",
        P + "_pipeline.py",
        '    if cut and repairs:\n        repairs += ("cut_by_max_chars",)\n',
        "    if cut and repairs:\n        pass\n",
        """parse('<tool_call>{"name": "f", "arguments": {"a": 1}}</tool_call> tail tail', max_chars=45).calls[0].repairs""",
    ),
    _m(
        "repair-escaped-underscores",
        "repair-dropped",
        """A Markdown-escaped name (get\\_weather) is still unescaped, but the repair
        "escaped_underscores" is no longer recorded.""",
        P + "_build/builder.py",
        '    _add(repairs, ["escaped_underscores"])\n',
        "",
        """parse('[get\\\\_weather(city="Paris")]', ["get_weather"]).calls[0].repairs""",
    ),
    # -- the wording of a message the model gets -------------------------------------
    _m(
        "message-unknown-tool",
        "message-changed",
        """The error for a tool that is not offered says "Available:" instead of
        "Available now:".""",
        P + "_pipeline.py",
        "Available now: {available}.",
        "Available: {available}.",
        """parse('<tool_call>{"name": "x", "arguments": {}}</tool_call>', ["f"]).errors""",
    ),
    _m(
        "message-not-an-object",
        "message-changed",
        """Arguments that are not an object: "must be an object." instead of "must be a
        JSON object.".""",
        P + "_build/builder.py",
        """draft.error = f'Arguments for "{draft.name}" must be a JSON object.'""",
        """draft.error = f'Arguments for "{draft.name}" must be an object.'""",
        """parse('<tool_call>{"name": "f", "arguments": [1]}</tool_call>').errors""",
    ),
    _m(
        "message-unexpected-character",
        "message-changed",
        """The lenient JSON pass's reason "unexpected character '@' after …" loses the word
        "character".""",
        P + "_recover/repair.py",
        'return RepairError(f"unexpected character {m.string[start]!r} {where}")',
        'return RepairError(f"unexpected {m.string[start]!r} {where}")',
        """parse('<tool_call>{"name": "f", "arguments": {"q": @}}</tool_call>').errors""",
    ),
    # -- the stream's flush not emitting what remains ---------------------------------
    _m(
        "flush-no-final-scan",
        "flush-skipped",
        """StreamParser.flush() no longer finishes the scanner: a call cut off by the end
        of the reply (or any held-back text) is never emitted, and close() lacks it.""",
        P + "_stream/parser.py",
        '        if self._state is _OPEN:\n            events += self._scan("", True)\n        self._stop(_DONE)\n',
        "        self._stop(_DONE)\n",
        """stream('Hi <tool_call>{"name": "f", "arguments": {"a": 1}}', n=4)[1].calls""",
    ),
    _m(
        "flush-run-not-ended",
        "flush-skipped",
        """StreamParser.flush() no longer writes the fast path's pending run of text: the
        last text segment is missing from close().segments.""",
        P + "_stream/parser.py",
        "        self._stop(_DONE)\n        self._end_run()\n",
        "        self._stop(_DONE)\n",
        """stream('Just some prose, no calls at all.', n=5)[1].segments""",
    ),
    # -- XML-ish parameter values stripped -------------------------------------------
    _m(
        "xml-value-stripped",
        "whitespace-stripped",
        """A raw parameter value (Qwen3-Coder <parameter=k>, GLM <arg_value>, …) is
        .strip()ped after its framing newlines are dropped: indented code loses its
        indentation, ", " its trailing space.""",
        P + "_build/coerce.py",
        "    return _scalar(frame(raw, framing), _hint(typ), kinds_of(prop, root))\n",
        "    return _scalar(frame(raw, framing).strip(), _hint(typ), kinds_of(prop, root))\n",
        r"""parse('<tool_call>\n<function=run>\n<parameter=code>\n    x = 1\n    y = 2\n</parameter>\n</function>\n</tool_call>').calls[0].arguments""",
    ),
    _m(
        "xml-element-stripped",
        "whitespace-stripped",
        """The same in nested XML elements (MiniMax-M3, BFCL, Cohere): a leaf element's
        text is .strip()ped.""",
        P + "_build/coerce.py",
        "        text = node.text if node.exact else frame(node.text, framing)\n",
        "        text = node.text if node.exact else frame(node.text, framing).strip()\n",
        r"""parse(']<]minimax[>[<tool_call>\n]<]minimax[>[<invoke name="run">]<]minimax[>[<code>\n    x = 1\n    y = 2\n]<]minimax[>[</code>\n]<]minimax[>[</invoke>\n]<]minimax[>[</tool_call>').calls[0].arguments""",
    ),
    # -- a refused call's segment kind ------------------------------------------------
    _m(
        "segment-kind-region",
        "segment-kind",
        """A region read by a grammar whose every call was refused (a name not offered)
        is a "call" segment instead of an "error" segment (Assembler.add: the general
        way, for parse and the stream).""",
        P + "_pipeline.py",
        '            kind = "error" if only_errors else "call"\n',
        '            kind = "call"\n',
        r"""parse('<tool_call>\n<function=x>\n<parameter=a>\n1\n</parameter>\n</function>\n</tool_call>', ["f"]).segments""",
    ),
    _m(
        "segment-kind-fast",
        "segment-kind",
        """A call the fast frame read, refused (a name not offered), is a "call" segment
        instead of an "error" segment (Assembler.take: the fast path, for parse and the
        stream).""",
        P + "_pipeline.py",
        '            segments.append(_new(Segment, ("error", *call.span)))\n',
        '            segments.append(_new(Segment, ("call", *call.span)))\n',
        """parse('<tool_call>{"name": "x", "arguments": {}}</tool_call>', ["f"]).segments""",
    ),
    # -- a string left open / closed too soon -----------------------------------------
    _m(
        "string-lenient-escaped-quote",
        "string-open",
        """The lenient JSON pass's "double-quoted" string token stops at an escaped quote
        (\\" closes the string).""",
        P + "_recover/repair.py",
        '      | "([^"\\\\]*(?:\\\\.[^"\\\\]*)*)(")?               # 5 "body", 6 closing quote\n',
        '      | "([^"]*)(")?               # 5 "body", 6 closing quote\n',
        """parse(r'<tool_call>{"name": "f", "arguments": {"q": "say \\"hi\\" now",}}</tool_call>').calls""",
    ),
    _m(
        "string-extent-escaped-quote",
        "string-open",
        """The driver's incremental bracket scan (_Extent: where a Python argument or a
        JSON value ends) ends a "double-quoted" string at an escaped quote.""",
        P + "_lalr/extent.py",
        """    '"': re.compile(r'[^"\\\\]*(?:\\\\.[^"\\\\]*)*', re.S),\n""",
        """    '"': re.compile(r'[^"]*', re.S),\n""",
        """parse(r'[f(q="a\\", b", n=1)]', ["f"]).calls""",
    ),
    _m(
        "string-bracket-scan-quote",
        "string-open",
        """The bracket scanner (value_end, scalar_end, BracketIndex: where a payload
        ends) ends a "double-quoted" string at an escaped quote.""",
        P + "_lalr/extent.py",
        '    "[^"\\\\]*(?:\\\\.[^"\\\\]*)*(")?\n',
        '    "[^"]*(")?\n',
        """parse(r'<TOOLCALL>[{"name": "f", "arguments": {"q": "x\\" }}] tail", "n": 1,}}]</TOOLCALL>').calls""",
    ),
    # -- a separator changed -----------------------------------------------------------
    _m(
        "joiner-separator",
        "separator",
        """Joiner (the stream's prose, a piece at a time) joins text on both sides of
        removed markup with a space instead of a newline when neither side had
        whitespace (parse's WholeJoiner still uses a newline).""",
        P + "_pipeline.py",
        '            value = (sep or "\\n") + body\n',
        '            value = (sep or " ") + body\n',
        """stream('Hello<tool_call>{"name": "f", "arguments": {}}</tool_call>world', n=3)[1].text""",
    ),
    _m(
        "wholejoiner-separator",
        "separator",
        """WholeJoiner (parse's prose) joins text on both sides of removed markup with a
        space instead of a newline when neither side had whitespace.""",
        P + "_pipeline.py",
        '                    out.append((run if len(run) > len(best) else best) or "\\n")\n',
        '                    out.append((run if len(run) > len(best) else best) or " ")\n',
        """parse('Hello<tool_call>{"name": "f", "arguments": {}}</tool_call>world').text""",
    ),
    _m(
        "grammar-list-separator",
        "separator",
        """The pythonic grammar's list takes ";" between calls instead of ",".""",
        "grammars/pythonic.lark",
        '_list: "[" _elem ("," (_elem | not_call))* [","] "]"\n',
        '_list: "[" _elem (";" (_elem | not_call))* [","] "]"\n',
        """parse('[f(a=1), g(b=2)]', ["f", "g"]).calls""",
    ),
    # -- a limit ignored ----------------------------------------------------------------
    _m(
        "max-chars-ignored-parse",
        "limit-ignored",
        """parse() ignores max_chars: the whole reply is parsed.""",
        P + "_pipeline.py",
        "    if max_chars is None:\n        max_chars = len(raw)\n",
        "    if True:\n        max_chars = len(raw)\n",
        """parse('Some prose first. <tool_call>{"name": "f", "arguments": {}}</tool_call>', max_chars=10).calls""",
    ),
    _m(
        "max-chars-ignored-stream",
        "limit-ignored",
        """StreamParser ignores max_chars: the whole reply is parsed.""",
        P + "_stream/parser.py",
        "        self._limit = sys.maxsize if max_chars is None else max_chars\n",
        "        self._limit = sys.maxsize\n",
        """stream('Some prose first. <tool_call>{"name": "f", "arguments": {}}</tool_call>', n=7, max_chars=10)[1].calls""",
    ),
    _m(
        "max-depth-ignored",
        "limit-ignored",
        """_repair.loads no longer refuses payloads nested deeper than MAX_DEPTH (512) that
        json.loads reads.""",
        P + "_recover/repair.py",
        '    if _too_deep(text):\n        raise RepairError("nested too deeply")\n    return value, repairs\n',
        "    return value, repairs\n",
        """parse('<tool_call>{"name": "f", "arguments": {"a": ' + '[' * 600 + ']' * 600 + '}}</tool_call>').errors""",
    ),
    _m(
        "frame-depth-ignored",
        "limit-ignored",
        """The fast frame reads deeply nested payloads itself instead of leaving them to the
        general way (which refuses those over MAX_DEPTH).""",
        P + "_scan/fastpath.py",
        '        if len(payload) > _half and payload.count("{") + payload.count("[") > _half:\n            return None\n',
        "",
        """parse('<tool_call>{"name": "f", "arguments": {"a": ' + '[' * 600 + ']' * 600 + '}}</tool_call>').errors""",
    ),
    # -- more ------------------------------------------------------------------------------
    _m(
        "tools-filter-ignored",
        "other",
        """accept() no longer refuses a call to a tool that is not offered.""",
        P + "_pipeline.py",
        "        if call.name not in tools:\n            return unknown_tool(call.name, tools)\n",
        "        if False:\n            return unknown_tool(call.name, tools)\n",
        """parse('<tool_call>{"name": "x", "arguments": {}}</tool_call>', ["f"]).calls""",
    ),
    _m(
        "frame-offered-only-ignored",
        "other",
        """The fast frame of an offered_only format (fenced_plain) reads a call to a tool
        that is not offered (the general way leaves it prose: an error appears).""",
        P + "_scan/fastpath.py",
        "        if self.offered_only and tools is not None and name not in tools:\n            return None\n",
        "",
        """parse('```\\n{"name": "x", "arguments": {}}\\n```', ["f"]).errors""",
    ),
    _m(
        "frame-extra-keys",
        "other",
        """The fast frame reads a call object with more than a name and arguments (an "id")
        and drops the rest; the general way keeps the id.""",
        P + "_scan/fastpath.py",
        "        if stop != len(text) or type(value) is not _dict or len(value) != 2:\n",
        "        if stop != len(text) or type(value) is not _dict:\n",
        """parse('<tool_call>{"name": "f", "arguments": {}, "id": "c1"}</tool_call>').calls[0].id""",
    ),
    Mutant(
        "stream-calldone-late",
        "other",
        """The stream holds each call's CallDone back until flush(), instead of sending it
        with the feed() that completes the call's region.""",
        (
            Edit(
                P + "_stream/parser.py",
                "        self._result: ParseResult | None = None\n",
                "        self._result: ParseResult | None = None\n        self._late: list = []\n",
            ),
            Edit(
                P + "_stream/parser.py",
                "                    events.append(ArgumentsDelta(index, arguments_json(value.arguments)))\n"
                "                    events.append(CallDone(index, value))\n",
                "                    events.append(ArgumentsDelta(index, arguments_json(value.arguments)))\n"
                "                    self._late.append(CallDone(index, value))\n",
            ),
            Edit(
                P + "_stream/parser.py",
                "        self._stop(_DONE)\n        self._end_run()\n",
                "        self._stop(_DONE)\n        self._end_run()\n        events += self._late\n",
            ),
        ),
        """[type(e).__name__ for e in StreamParser().feed('<tool_call>{"name": "f", "arguments": {}}</tool_call> ok')]""",
    ),
    _m(
        "run-inline-code",
        "other",
        """fastpath.run (parse's run of fast-frame calls) no longer skips a marker in inline
        code (`<tool_call>…`) after a call of the same format.""",
        P + "_scan/fastpath.py",
        '        if again is not None and i >= 0 and buf.startswith(again, i) and buf[i - 1] != "`":\n',
        "        if again is not None and i >= 0 and buf.startswith(again, i):\n",
        """parse('<tool_call>{"name": "f", "arguments": {}}</tool_call> x `<tool_call>{"name": "g", "arguments": {}}</tool_call>`', formats=["hermes"]).calls""",
    ),
    _m(
        "stream-trim-think",
        "other",
        """The stream's buffer trim keeps one character before the last it keeps, not a
        whole </think>: a line-anchored list right after a </think> that the trim cut
        into is read as prose.""",
        P + "_scan/scanner.py",
        "        keep -= len(THINK_CLOSE) - 1\n",
        "        keep -= 1\n",
        """stream('a' * 232 + ' ' * 17 + '</think>[get_weather(city="Paris")]', ["get_weather"])[1].calls""",
    ),
)

# -- the probe --------------------------------------------------------------------------

PROBE_PRELUDE = textwrap.dedent(
    """
    import json, sys
    import toolgram
    from toolgram import StreamParser, parse

    def stream(raw, tools=None, n=1, **kw):
        sp = StreamParser(tools, **kw)
        events = []
        for i in range(0, len(raw), n):
            events += sp.feed(raw[i : i + n])
        events += sp.flush()
        return events, sp.close()

    out = {"toolgram": toolgram.__file__}
    for name, expr in json.loads(sys.stdin.read()):
        try:
            out[name] = repr(eval(expr))
        except BaseException as exc:
            out[name] = f"raised {type(exc).__name__}: {exc}"
    print("PROBE-JSON" + json.dumps(out))
    """
)

# -- the pytest plugin that runs inside every pytest run ------------------------------

PLUGIN = textwrap.dedent(
    '''
    """mutation_check's plugin: toolgram must come from the copy; note failing tests."""
    import json
    import os

    import pytest

    _OUT = os.environ["MUTATION_CHECK_OUT"]
    _failed = []

    def _write(extra=None):
        data = {"failed": _failed}
        if extra:
            data.update(extra)
        with open(_OUT, "w", encoding="utf-8") as f:
            json.dump(data, f)

    def pytest_sessionstart(session):
        import toolgram

        where = os.path.realpath(toolgram.__file__)
        want = os.path.realpath(os.environ["MUTATION_CHECK_SRC"])
        _write({"toolgram": where})
        if not where.startswith(want + os.sep):
            pytest.exit(f"mutation_check: toolgram imported from {where}, not from {want}", returncode=3)

    def pytest_runtest_logreport(report):
        if report.failed:
            _failed.append(report.nodeid if report.when == "call" else f"{report.nodeid} ({report.when})")
            import toolgram

            _write({"toolgram": os.path.realpath(toolgram.__file__)})

    def pytest_collectreport(report):
        if report.failed:
            _failed.append(f"{report.nodeid or '<collection>'} (collection)")
            _write()
    '''
)


# -- the copy ---------------------------------------------------------------------------


class Workspace:
    def __init__(self, repo: Path, keep: bool) -> None:
        self.repo = repo
        self.keep = keep
        self.root = Path(tempfile.mkdtemp(prefix="toolgram-mutation-"))
        self.project = self.root / "project"
        self.plugin_dir = self.root / "plugin"
        self.out_file = self.root / "pytest-out.json"

    def build(self) -> str:
        files = subprocess.run(
            ["git", "ls-files", "-z"], cwd=self.repo, check=True, capture_output=True
        ).stdout.decode("utf-8", "surrogateescape").split("\0")
        copied = 0
        for rel in filter(None, files):
            src = self.repo / rel
            if not src.exists() and not src.is_symlink():
                continue  # (deleted in the work tree)
            dst = self.project / rel
            dst.parent.mkdir(parents=True, exist_ok=True)
            if src.is_symlink():
                os.symlink(os.readlink(src), dst)
            elif src.is_file():
                shutil.copy2(src, dst)
            else:
                continue
            copied += 1
        shared = self.repo.parent / "shared"
        note = f"{copied} tracked files copied to {self.project}"
        if shared.is_dir():
            os.symlink(shared.resolve(), self.root / "shared")
            note += f"; {self.root / 'shared'} -> {shared.resolve()}"
        else:
            note += f"; no {shared} (the tests that read it are skipped)"
        self.plugin_dir.mkdir()
        (self.plugin_dir / "mutation_check_plugin.py").write_text(PLUGIN, encoding="utf-8")
        return note

    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        paths = [str(self.project / "src"), str(self.plugin_dir)]
        if env.get("PYTHONPATH"):
            paths.append(env["PYTHONPATH"])
        env["PYTHONPATH"] = os.pathsep.join(paths)
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        env["MUTATION_CHECK_OUT"] = str(self.out_file)
        env["MUTATION_CHECK_SRC"] = str(self.project / "src")
        env.pop("PYTEST_ADDOPTS", None)
        return env

    def cleanup(self) -> None:
        if self.keep:
            print(f"kept: {self.root}")
        else:
            shutil.rmtree(self.root, ignore_errors=True)


# -- applying a mutant ------------------------------------------------------------------


class Stale(Exception):
    pass


def apply(ws: Workspace, mutant: Mutant) -> dict[Path, str]:
    """Apply the mutant's edits; return the original texts (to restore). Raises Stale
    (nothing changed) when an old text does not occur exactly once."""
    texts: dict[Path, str] = {}
    for edit in mutant.edits:
        path = ws.project / edit.file
        if path not in texts:
            if not path.is_file():
                raise Stale(f"{edit.file} is missing")
            texts[path] = path.read_text(encoding="utf-8")
    current = dict(texts)
    for edit in mutant.edits:
        path = ws.project / edit.file
        count = current[path].count(edit.old)
        if count != 1:
            raise Stale(f"{edit.file}: old text found {count} times: {edit.old.strip()[:60]!r}")
        current[path] = current[path].replace(edit.old, edit.new)
    for path, text in current.items():
        path.write_text(text, encoding="utf-8")
    return texts


def restore(texts: dict[Path, str]) -> None:
    for path, text in texts.items():
        path.write_text(text, encoding="utf-8")


# -- running ------------------------------------------------------------------------------


def run_probes(ws: Workspace, mutants: list[Mutant]) -> dict[str, str]:
    """Each mutant's probe, evaluated in one child process on the copy as it is now:
    {name: repr of the value, or "raised …"}, and "toolgram": where it was imported
    from; {"error": …} when the child failed. A probe that hangs (a mutant may loop)
    gives "timed out" for each."""
    payload = json.dumps([(m.name, m.probe) for m in mutants])
    try:
        proc = subprocess.run(
            [sys.executable, "-c", PROBE_PRELUDE],
            input=payload, capture_output=True, text=True, cwd=ws.project, env=ws.env(), timeout=PROBE_TIMEOUT,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return {m.name: f"timed out after {PROBE_TIMEOUT} s" for m in mutants}
    for line in proc.stdout.splitlines():
        if line.startswith("PROBE-JSON"):
            return json.loads(line[len("PROBE-JSON") :])
    return {"error": (proc.stderr or proc.stdout)[-2000:]}


def split_args(extra: list[str]) -> tuple[list[str], list[str]]:
    """--pytest-args: (the test paths given, the other arguments)."""
    paths, rest = [], []
    takes_value = False
    for arg in extra:
        if takes_value:
            rest.append(arg)
            takes_value = False
        elif arg.startswith("-"):
            rest.append(arg)
            takes_value = arg in _VALUE_OPTIONS
        else:
            paths.append(arg)
    return paths, rest


def ordered_test_files(ws: Workspace, paths: list[str]) -> list[str]:
    if paths:
        return paths
    present = sorted(str(p.relative_to(ws.project)) for p in (ws.project / "tests").glob("test_*.py"))
    first = [t for t in FIRST_TESTS if t in present]
    return first + [t for t in present if t not in first]


def run_pytest(ws: Workspace, args: list[str], timeout: float, stop_first: bool = True) -> tuple[str, dict, float, str]:
    """(status, the plugin's notes, seconds, the output's tail): status "passed", "failed",
    "timeout", or "error" (pytest could not run the tests: its exit code)."""
    shutil.rmtree(ws.project / ".hypothesis", ignore_errors=True)
    ws.out_file.unlink(missing_ok=True)
    cmd = [sys.executable, "-m", "pytest", *(["-x"] if stop_first else []), "-q", "-p", "no:cacheprovider"]
    cmd += ["-p", "mutation_check_plugin", *args]
    t0 = time.monotonic()
    proc = subprocess.Popen(
        cmd, cwd=ws.project, env=ws.env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        text=True, errors="replace", start_new_session=True,
    )
    try:
        output, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill(proc)
        output = ""
        status = "timeout"
    except BaseException:  # (Ctrl-C: the run is in its own session, which the signal does not reach)
        _kill(proc)
        raise
    else:
        rc = proc.returncode
        status = {0: "passed", 1: "failed"}.get(rc, f"error (pytest exit code {rc})")
    seconds = time.monotonic() - t0
    notes: dict = {}
    if ws.out_file.is_file():
        try:
            notes = json.loads(ws.out_file.read_text(encoding="utf-8"))
        except ValueError:
            notes = {}
    tail = "\n".join(output.strip().splitlines()[-15:])
    return status, notes, seconds, tail


def _kill(proc: subprocess.Popen) -> None:
    """End the pytest run and every process it started (its own session)."""
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(10)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    proc.communicate()


@dataclass
class Row:
    mutant: Mutant
    result: str
    detail: str = ""
    seconds: float = 0.0
    before: str = ""
    after: str = ""
    extra: dict = field(default_factory=dict)


def check_mutant(ws: Workspace, mutant: Mutant, baseline: dict[str, str], args: list[str], timeout: float, probes_only: bool) -> Row:
    t0 = time.monotonic()
    try:
        texts = apply(ws, mutant)
    except Stale as exc:
        return Row(mutant, "stale", f"the code moved: {exc}")
    try:
        after = run_probes(ws, [mutant]).get(mutant.name, "?")
        before = baseline.get(mutant.name, "?")
        row = Row(mutant, "", before=before, after=after)
        if after == before:
            row.result, row.detail = "inert", "the probe gives the same result: the mutant changes nothing there"
        elif probes_only:
            row.result = "changes"
        else:
            status, notes, _, tail = run_pytest(ws, args, timeout)
            failed = notes.get("failed") or []
            if status == "failed" and failed:
                row.result, row.detail = "caught", failed[0]
            elif status == "passed":
                row.result = "survived"
            elif status == "timeout":
                row.result, row.detail = "timeout", f"no result within {timeout:g} s"
            else:
                row.result = "error"
                row.detail = f"{status}: {tail.splitlines()[-1] if tail else ''}"
                row.extra["tail"] = tail
    finally:
        restore(texts)
    row.seconds = time.monotonic() - t0
    return row


def print_table(rows: list[Row]) -> None:
    head = ("mutant", "kind", "file", "result", "first failing test", "s")
    data = [(r.mutant.name, r.mutant.kind, r.mutant.file, r.result, r.detail, f"{r.seconds:.0f}") for r in rows]
    widths = [max(len(h), *(len(d[i]) for d in data)) if data else len(h) for i, h in enumerate(head)]
    widths[4] = min(widths[4], 160)

    def line(cells) -> str:
        return "| " + " | ".join(str(c)[:w].ljust(w) for c, w in zip(cells, widths)) + " |"

    print(line(head))
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for d in data:
        print(line(d))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], epilog=__doc__.split("\n\n", 2)[2],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument("--repo", type=Path, default=DEFAULT_REPO, help="the repository root (default: %(default)s)")
    ap.add_argument("--only", action="append", metavar="NAME", help="run only this mutant (repeatable)")
    ap.add_argument("--list", action="store_true", help="list the mutants and exit")
    ap.add_argument("--keep", action="store_true", help="keep the temporary copy")
    ap.add_argument("--pytest-args", default="", help='more pytest arguments, e.g. "tests/test_corpus.py -k hermes" (test paths given replace the default list of test files)')
    ap.add_argument("--timeout", type=float, default=900.0, help="seconds per pytest run (default: %(default)s)")
    ap.add_argument("--probes-only", action="store_true", help="only check that each mutant changes its probe's result (no pytest)")
    ap.add_argument("--skip-sanity", action="store_true", help="skip the sanity pass on the unmutated copy (not recommended)")
    ap.add_argument("--deselect-baseline-failures", action="store_true", help="tests that fail on the unmutated copy are deselected in the mutant runs, instead of stopping the check")
    opts = ap.parse_args(argv)

    if opts.list:
        for m in MUTANTS:
            print(f"{m.name}  [{m.kind}]  {', '.join(dict.fromkeys(e.file for e in m.edits))}\n    {m.doc}\n    probe: {m.probe}\n")
        return 0
    names = {m.name for m in MUTANTS}
    unknown = [n for n in opts.only or () if n not in names]
    if unknown:
        print(f"unknown mutant(s): {', '.join(unknown)} (see --list)", file=sys.stderr)
        return 2
    mutants = [m for m in MUTANTS if not opts.only or m.name in opts.only]

    repo = opts.repo.resolve()
    ws = Workspace(repo, opts.keep)
    try:
        print(ws.build())
        paths, extra = split_args(shlex.split(opts.pytest_args))
        targets = ordered_test_files(ws, paths)
        if "--hypothesis-seed" not in " ".join(extra):
            extra = ["--hypothesis-seed=20240", *extra]
        args = [*extra, *targets]
        print(f"pytest arguments: {' '.join(args)}")

        baseline = run_probes(ws, mutants)
        src = os.path.realpath(ws.project / "src")
        where = os.path.realpath(baseline.get("toolgram", "?"))
        print(f"probe imports toolgram from {where}")
        if "error" in baseline or not where.startswith(src + os.sep):
            print(f"the probes could not run on the copy: {baseline.get('error', where)}", file=sys.stderr)
            return 2

        if not opts.skip_sanity and not opts.probes_only:
            print("sanity pass: the full suite on the unmutated copy ...", flush=True)
            status, notes, seconds, tail = run_pytest(ws, args, opts.timeout, stop_first=False)
            print(f"  {status} in {seconds:.0f} s; toolgram imported from {notes.get('toolgram', '?')}")
            if status == "failed" and notes.get("failed") and opts.deselect_baseline_failures:
                bad = [n for n in notes["failed"] if " (" not in n]
                if len(bad) != len(notes["failed"]):
                    print("  a setup, teardown or collection failed: cannot deselect it", file=sys.stderr)
                    print(tail, file=sys.stderr)
                    return 2
                for node in bad:
                    print(f"  DESELECTED (fails on the unmutated copy): {node}")
                args = [*(f"--deselect={n}" for n in bad), *args]
            elif status != "passed":
                print(tail, file=sys.stderr)
                for node in notes.get("failed") or []:
                    print(f"  fails on the unmutated copy: {node}", file=sys.stderr)
                print(
                    "the suite must pass on the unmutated copy (fix it, deselect with --pytest-args "
                    '"--deselect NODE", or pass --deselect-baseline-failures)',
                    file=sys.stderr,
                )
                return 2

        rows: list[Row] = []
        for m in mutants:
            print(f"mutant {m.name} ...", flush=True)
            row = check_mutant(ws, m, baseline, args, opts.timeout, opts.probes_only)
            rows.append(row)
            print(f"  {row.result} ({row.seconds:.0f} s) {row.detail}", flush=True)
            if row.extra.get("tail"):
                print(textwrap.indent(row.extra["tail"], "    | "))
            if opts.probes_only and row.result != "stale":
                print(f"    original: {row.before[:300]}\n    mutant:   {row.after[:300]}")
        print()
        print_table(rows)
        print()
        if opts.probes_only:
            changed = sum(r.result == "changes" for r in rows)
            print(f"changes {changed} of {len(rows)}")
            return 0 if changed == len(rows) else 1
        for r in rows:
            if r.result in ("survived", "timeout"):
                print(f"{r.mutant.name} {r.result}: {r.mutant.doc}")
                print(f"  probe:    {r.mutant.probe}")
                print(f"  original: {r.before}")
                print(f"  mutant:   {r.after}")
        caught = sum(r.result == "caught" for r in rows)
        print(f"caught {caught} of {len(rows)}")
        return 0 if caught == len(rows) else 1
    finally:
        ws.cleanup()


if __name__ == "__main__":
    sys.exit(main())
