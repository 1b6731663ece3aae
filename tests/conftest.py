"""Test helpers: the corpus cases (tests/corpus/) and the optional ../shared folder.

Corpus layout (see tests/corpus/README.md):
    tests/corpus/<format>/<case>.txt           the raw reply, byte for byte (UTF-8)
    tests/corpus/<format>/<case>.tools.json    optional: tools offered (JSON list); absent -> tools=None
    tests/corpus/<format>/<case>.formats.json  optional: formats= (JSON list of names); absent -> None
    tests/corpus/<format>/<case>.in_think.json optional: in_think= (true or false); absent -> False
    tests/corpus/<format>/<case>.truncated.json optional: truncated= ("repair" or "error"); absent -> "repair"
    snapshots/<format>/<case>.json             its snapshot (tests/test_corpus.py)
"""

from __future__ import annotations

import json
import re
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

TESTS_DIR = Path(__file__).resolve().parent
REPO_ROOT = TESTS_DIR.parent
CORPUS_DIR = TESTS_DIR / "corpus"
SNAPSHOT_DIR = REPO_ROOT / "snapshots"
SHARED_DIR = REPO_ROOT.parent / "shared"

# tests/ is not a package: make `import _snapshot` work under any --import-mode.
if str(TESTS_DIR) not in sys.path:
    sys.path.insert(0, str(TESTS_DIR))

from _snapshot import CorpusSnapshotExtension  # noqa: E402

import toolgram._guard  # noqa: E402

# A bug of ours raises in the tests, where a user gets an "internal error" result: a test
# that meets one fails there rather than passing on a reply kept as prose (see
# toolgram._guard.raise_bugs). The tests of that result itself use the fixture below.
toolgram._guard.raise_bugs = True


@pytest.fixture
def bugs_as_results(monkeypatch: pytest.MonkeyPatch) -> None:
    """A bug of ours becomes an error result, as it does for users."""
    monkeypatch.setattr(toolgram._guard, "raise_bugs", False)

FORMAT_FOLDERS = (
    "hermes",
    "fenced_plain",
    "glm45_bare",
    "gemma4_bare",
    "lfm2",
    "fenced_json",
    "json_reply",
    "mfcs",
    "pythonic",
    "llama3_json",
    "mistral",
    "qwen3_coder_xml",
    # pythonic formats and the drift shapes of real models
    "llama4_pythonic",
    "olmo3_pythonic",
    "bare_pythonic",
    "fenced_python",
    "fenced_xml",
    "hermes_im_start",
    "hermes_function_tag",
    "hermes_response_tools",
    # XML-ish / key-value parameter formats
    "glm45_arg_kv",
    "hy_v3_tool_sep_kv",
    "seed_oss_xml",
    "minimax_m2_invoke",
    "minimax_m3_nested_xml",
    "step3_steptml",
    "deepseek_v32_dsml",
    "deepseek_v4_dsml",
    "deepseek_v41_dsml",
    "kimi_k3_open_close",
    "cohere_cofl_xml",
    "minicpm5_function_param",
    "dots_invoke",
    "functiongemma_call",
    "gemma4_call",
    "bfcl_verbose_xml",
    # JSON-payload formats (llama3_json and mistral are above)
    "xlam",
    "longcat",
    "harmony",
    "functionary_v32",
    "functionary_v31",
    "llama3_builtin",
    "granite",
    "jamba",
    "apriel",
    "deepseek_v3",
    "deepseek_v31",
    "kimi_k2",
    "internlm",
    "nemotron",
    "functools",
    "granite_20b_fc",
    "cohere",
    "command_r",
    "gigachat",
    "apertus",
    "plamo3",
)
CASE_NAME = re.compile(r"[a-z0-9][a-z0-9_]*\Z")
SIDECARS = (".tools.json", ".formats.json", ".in_think.json", ".truncated.json")
CORPUS_TOP_LEVEL_FILES = {"README.md", "import_smollm2.py"}


@dataclass(frozen=True, eq=False)
class CorpusCase:
    path: Path  # the .txt file
    format: str  # its folder
    name: str  # file name without .txt
    raw: str
    tools: list[Any] | None
    formats: list[str] | None
    in_think: bool = False
    truncated: str = "repair"

    @property
    def id(self) -> str:
        return f"{self.format}/{self.name}"

    def __repr__(self) -> str:  # short, for pytest output
        return f"CorpusCase({self.id})"


def _read_json_list(path: Path) -> list[Any] | None:
    if not path.exists():
        return None
    value = json.loads(path.read_bytes().decode("utf-8"))
    if not isinstance(value, list):
        raise ValueError(f"{path}: expected a JSON list, got {type(value).__name__}")
    return value


def load_case(path: Path) -> CorpusCase:
    name = path.name[: -len(".txt")]
    formats = _read_json_list(path.with_name(name + ".formats.json"))
    if formats is not None and not all(isinstance(f, str) for f in formats):
        raise ValueError(f"{path}: formats.json must list strings")
    think = path.with_name(name + ".in_think.json")
    in_think = json.loads(think.read_bytes().decode("utf-8")) if think.exists() else False
    if not isinstance(in_think, bool):
        raise ValueError(f"{think}: expected true or false")
    cut = path.with_name(name + ".truncated.json")
    truncated = json.loads(cut.read_bytes().decode("utf-8")) if cut.exists() else "repair"
    if truncated not in ("repair", "error"):
        raise ValueError(f'{cut}: expected "repair" or "error"')
    return CorpusCase(
        path=path,
        format=path.parent.name,
        name=name,
        # bytes, not read_text(): text mode would turn "\r\n" into "\n"
        raw=path.read_bytes().decode("utf-8"),
        tools=_read_json_list(path.with_name(name + ".tools.json")),
        formats=formats,
        in_think=in_think,
        truncated=truncated,
    )


def corpus_cases(corpus_dir: Path = CORPUS_DIR) -> list[CorpusCase]:
    """Every case under tests/corpus/<format>/<case>.txt, sorted by format then name."""
    cases = []
    for folder in sorted(p for p in corpus_dir.iterdir() if p.is_dir() and not p.name.startswith((".", "_"))):
        for path in sorted(folder.glob("*.txt")):
            cases.append(load_case(path))
    return cases


def corpus_layout_problems(corpus_dir: Path = CORPUS_DIR) -> list[str]:
    """Stray or misnamed files in tests/corpus/ (each would otherwise be silently ignored)."""
    problems = []
    for entry in sorted(corpus_dir.iterdir()):
        if entry.name.startswith(".") or entry.name == "__pycache__":
            continue
        if entry.is_file():
            if entry.name not in CORPUS_TOP_LEVEL_FILES:
                problems.append(f"unexpected file {entry.relative_to(corpus_dir)}")
            continue
        if entry.name not in FORMAT_FOLDERS:
            problems.append(f"unknown format folder {entry.name}/ (known: {', '.join(FORMAT_FOLDERS)})")
        cases = {p.name[: -len(".txt")] for p in entry.glob("*.txt")}
        for file in sorted(entry.iterdir()):
            rel = file.relative_to(corpus_dir)
            if file.name.startswith("."):
                continue
            if not file.is_file():
                problems.append(f"unexpected directory {rel}/")
                continue
            stem = next(
                (file.name[: -len(s)] for s in (".txt", *SIDECARS) if file.name.endswith(s)), None
            )
            if stem is None:
                problems.append(f"unexpected file {rel} (expected <case>.txt or a sidecar)")
            elif not CASE_NAME.match(stem):
                problems.append(f"{rel}: case names are snake_case ([a-z0-9_])")
            elif stem not in cases:
                problems.append(f"{rel}: sidecar without {stem}.txt")
        for path in sorted(entry.glob("*.txt")):
            problems += [f"{path.relative_to(corpus_dir)}: {p}" for p in _case_problems(path)]
    return problems


def _case_problems(path: Path) -> list[str]:
    try:
        case = load_case(path)
    except (ValueError, UnicodeDecodeError) as exc:  # JSONDecodeError is a ValueError
        return [f"unreadable: {exc}"]
    problems = []
    for tool in case.tools or []:
        fn = tool.get("function", tool) if isinstance(tool, dict) else None
        if not isinstance(tool, str) and not (isinstance(fn, dict) and isinstance(fn.get("name"), str)):
            problems.append(f"tools.json: {tool!r} is neither a name nor a function definition")
    return problems


def orphan_snapshots(cases: list[CorpusCase] | None = None) -> list[Path]:
    """Files under snapshots/ that are not the snapshot of an existing corpus case."""
    if not SNAPSHOT_DIR.is_dir():
        return []
    cases = corpus_cases() if cases is None else cases
    expected = {SNAPSHOT_DIR / c.format / f"{c.name}.json" for c in cases}
    return sorted(
        p
        for p in SNAPSHOT_DIR.rglob("*")
        if p.is_file() and not p.name.startswith(".") and p not in expected
    )


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    # Any test that takes a `corpus_case` argument runs once per case, id "<format>/<case>".
    if "corpus_case" in metafunc.fixturenames:
        cases = corpus_cases()
        metafunc.parametrize("corpus_case", cases, ids=[c.id for c in cases])


@pytest.fixture
def corpus_snapshot(snapshot: Any) -> Any:
    """syrupy's `snapshot`, stored at snapshots/<format>/<case>.json."""
    return snapshot.use_extension(CorpusSnapshotExtension)


def best_cpu_time(fn: Any, repeat: int = 3) -> float:
    """The least CPU time of `repeat` runs of fn() (the timing tests compare two sizes;
    CPU time, not wall time, which on a shared machine measures the neighbours)."""
    best = float("inf")
    for _ in range(repeat):
        t0 = time.process_time()
        fn()
        best = min(best, time.process_time() - t0)
    return best


def cpu_time_per_call(fn: Any) -> float:
    """The CPU time of one fn() call, from the best of three runs of a loop long enough
    (5 ms or more) for the clock: a ratio of two of these, measured in one test, says
    how a cost grows (the tests assert ratios, never times)."""
    loops = 1
    while True:
        t0 = time.process_time()
        for _ in range(loops):
            fn()
        if time.process_time() - t0 >= 0.005 or loops >= 1 << 16:
            break
        loops *= 4
    return best_cpu_time(lambda: [fn() for _ in range(loops)]) / loops


def streamed(raw: str, size: int, tools: Any = None, **options: Any) -> Any:
    """The ParseResult of a StreamParser (made with tools and options) fed raw in deltas
    of `size` characters."""
    import toolgram

    sp = toolgram.StreamParser(tools, **options)
    for i in range(0, len(raw), size):
        sp.feed(raw[i : i + size])
    return sp.close()


def assert_done_by(raw: str, tools: Any, end: int, want: Any) -> None:
    """A StreamParser made with tools, fed raw in deltas of 1, 2, 3, 7, 8 and 64
    characters, gives its first CallDone by the delta that brings `end` (8 characters
    of slack), not at flush(), and after flush() reads want (parse()'s result)."""
    import toolgram

    for size in (1, 2, 3, 7, 8, 64):
        sp, done = toolgram.StreamParser(tools), []
        for i in range(0, len(raw), size):
            done += [min(i + size, len(raw)) for e in sp.feed(raw[i : i + size]) if isinstance(e, toolgram.CallDone)]
        assert done and done[0] <= end + 8 + size, (size, done)
        sp.flush()
        assert sp.close() == want, size


def result_key(result: Any) -> tuple:
    """Every field of a ParseResult that parse and a stream must agree on."""
    return result.text, result.calls, result.errors, result.reasoning, result.segments


def shared_path() -> Path | None:
    """../shared relative to the repo root, or None when absent (e.g. on a user's machine).

    Its third-party captures are read from there at test time and never copied into the repo.
    """
    return SHARED_DIR if SHARED_DIR.is_dir() else None


def format_example_params(id_of: Callable[[dict], str]) -> list[Any]:
    """One pytest.param per row of ../shared/reference/format-examples.jsonl, its id
    `NN-<id_of(row)>`; a single skipped param when the file is absent."""
    shared = shared_path()
    path = shared / "reference" / "format-examples.jsonl" if shared is not None else None
    if path is None or not path.is_file():
        reason = "../shared/reference/format-examples.jsonl is absent (not shipped with the project)"
        return [pytest.param(None, id="shared-absent", marks=pytest.mark.skip(reason=reason))]
    lines = path.read_bytes().decode("utf-8").splitlines()
    rows = [json.loads(line) for line in lines if line.strip()]
    return [pytest.param(row, id=f"{n:02d}-{id_of(row)}") for n, row in enumerate(rows, 1)]


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    """../shared relative to the repo root; the test is skipped when the folder is absent."""
    path = shared_path()
    if path is None:
        pytest.skip(f"{SHARED_DIR} is absent (shared corpus is not shipped with the project)")
    return path


@pytest.fixture(scope="session")
def corpus_dir() -> Path:
    return CORPUS_DIR


@pytest.fixture(scope="session")
def snapshot_dir() -> Path:
    return SNAPSHOT_DIR


@pytest.fixture
def corpus_orphan_snapshots() -> list[Path]:
    return orphan_snapshots()


@pytest.fixture
def corpus_layout() -> list[str]:
    return corpus_layout_problems()
