"""`toolgram check` over logs as eval teams keep them: every input kind written to a real
file (or piped in), run as `python -m toolgram check` in a subprocess; bad records;
baselines and the kinds of difference; --jobs; --max-chars.

toolgram.parse() is the oracle: the command must report, for every record, the calls
parse() gives for its reply.
"""

from __future__ import annotations

import csv
import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import toolgram

CORPUS = Path(__file__).resolve().parent / "corpus"
SRC = Path(__file__).resolve().parent.parent / "src"


def corpus_raw(rel: str) -> str:
    return (CORPUS / rel).read_bytes().decode("utf-8")


# Replies of several shapes, and characters str.splitlines() takes for line ends.
REPLIES = [
    ("two_calls", corpus_raw("hermes/prose_before_between_after.txt"), None),
    ("repaired", corpus_raw("hermes/python_literals.txt"), ["get_weather", "search_web"]),
    ("unreadable", corpus_raw("hermes/missing_name.txt"), None),
    ("separators", 'Line\u2028two\u0085three\x1c <tool_call>{"name": "note", "arguments": {"t": "a\u2028b"}}</tool_call>', None),
    ("lfm2", '<|tool_call_start|>[lookup(term="Ōsaka")]<|tool_call_end|>', ["lookup"]),
]


def run(*args: str, stdin: bytes | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "TOOLGRAM_GRAMMAR_PATH")}
    env["PYTHONPATH"] = str(SRC) + os.pathsep + env.get("PYTHONPATH", "")
    return subprocess.run(
        [sys.executable, "-m", "toolgram", "check", *args],
        input=stdin,
        capture_output=True,
        cwd=cwd,
        env=env,
        timeout=120,
    )


def cases_of(proc: subprocess.CompletedProcess) -> dict[str, list]:
    data = json.loads(proc.stdout)
    return {c["id"]: [(call["name"], call["arguments"]) for call in c["calls"]] for c in data["cases"]}


def oracle(raw: str, tools: list | None = None, **kw) -> list:
    result = toolgram.parse(raw, tools, **kw)
    return json.loads(json.dumps([(c.name, c.arguments) for c in result.calls]))


def expected_by_name(prefix: str) -> dict[str, list]:
    return {f"{prefix}/{name}": [list(c) for c in oracle(raw, tools)] for name, raw, tools in REPLIES}


def records() -> list[dict]:
    return [{"id": name, "raw": raw, "tools": tools, "model": "m"} for name, raw, tools in REPLIES]


def as_lists(cases: dict[str, list]) -> dict[str, list]:
    return {k: [list(c) for c in v] for k, v in cases.items()}


# -- every kind of input ----------------------------------------------------------------------


def write_jsonl(path: Path, recs: list[dict], bom: bool = False) -> None:
    # ensure_ascii=False writes U+2028 and U+0085 as they are: the lines must be split on \n alone
    text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in recs)
    path.write_bytes((b"\xef\xbb\xbf" if bom else b"") + text.encode("utf-8"))


def write_csv(path: Path, recs: list[dict]) -> None:
    with open(path, "w", encoding="utf-8-sig", newline="") as f:  # (Excel writes a BOM)
        writer = csv.writer(f)
        writer.writerow(["id", "raw", "tools"])
        for r in recs:
            writer.writerow([r["id"], r["raw"], json.dumps(r["tools"]) if r["tools"] is not None else ""])


def write_parquet(path: Path, recs: list[dict]) -> None:
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    rows = [dict(r, tools=json.dumps(r["tools"]) if r["tools"] is not None else None) for r in recs]
    pq.write_table(pa.Table.from_pylist(rows), str(path), row_group_size=2)


@pytest.mark.parametrize("kind", ["jsonl", "jsonl_bom", "jsonl_gz", "json_array", "csv", "parquet"])
def test_every_input_kind_gives_parse_results(tmp_path: Path, kind: str) -> None:
    recs = records()
    name = {"jsonl_bom": "log.jsonl", "jsonl_gz": "log.jsonl.gz", "json_array": "log.json", "csv": "log.csv", "parquet": "log.parquet"}.get(kind, "log.jsonl")
    path = tmp_path / name
    if kind in ("jsonl", "jsonl_bom"):
        write_jsonl(path, recs, bom=kind == "jsonl_bom")
    elif kind == "jsonl_gz":
        plain = tmp_path / "plain.jsonl"
        write_jsonl(plain, recs)
        path.write_bytes(gzip.compress(plain.read_bytes()))
    elif kind == "json_array":
        path.write_text(json.dumps(recs, indent=2, ensure_ascii=False), encoding="utf-8")
    elif kind == "csv":
        write_csv(path, recs)
    else:
        write_parquet(path, recs)
    proc = run("--json", str(path))
    assert proc.returncode == 0, proc.stderr.decode()
    assert as_lists(cases_of(proc)) == expected_by_name("log")
    data = json.loads(proc.stdout)
    assert data["bad_records"]["count"] == 0
    # every record's place is its file and line (or row)
    sources = [c["source"] for c in data["cases"]]
    assert all(s.startswith(str(path) + ":") for s in sources), sources


@pytest.mark.parametrize("compress", [False, True])
@pytest.mark.parametrize("shape", ["jsonl", "json_array"])
def test_standard_input(tmp_path: Path, compress: bool, shape: str) -> None:
    recs = records()
    if shape == "jsonl":
        data = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in recs).encode("utf-8")
    else:
        data = json.dumps(recs, ensure_ascii=False).encode("utf-8")
    proc = run("--json", "-", stdin=gzip.compress(data) if compress else data)
    assert proc.returncode == 0, proc.stderr.decode()
    assert as_lists(cases_of(proc)) == expected_by_name("stdin")


def test_standard_input_csv_needs_its_kind_named(tmp_path: Path) -> None:
    path = tmp_path / "log.csv"
    write_csv(path, records())
    proc = run("--json", "--input-format", "csv", "-", stdin=path.read_bytes())
    assert proc.returncode == 0, proc.stderr.decode()
    assert as_lists(cases_of(proc)) == expected_by_name("stdin")


def test_nested_fields_by_dotted_path(tmp_path: Path) -> None:
    recs = [
        {"request": {"rid": f"r-{name}", "offered": tools}, "choices": [{"message": {"role": "assistant", "content": raw}}]}
        for name, raw, tools in REPLIES
    ]
    path = tmp_path / "openai.jsonl"
    write_jsonl(path, recs)
    args = ["--raw-field", "choices.0.message.content", "--id-field", "request.rid", "--tools-field", "request.offered"]
    proc = run("--json", *args, str(path))
    assert proc.returncode == 0, proc.stderr.decode()
    assert as_lists(cases_of(proc)) == {f"openai/r-{name}": [list(c) for c in oracle(raw, tools)] for name, raw, tools in REPLIES}
    # Parquet's nested structs are read by the same paths
    pytest.importorskip("pyarrow")
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.Table.from_pylist(recs), str(tmp_path / "openai.parquet"))
    proc = run("--json", *args, str(tmp_path / "openai.parquet"))
    assert proc.returncode == 0, proc.stderr.decode()
    assert as_lists(cases_of(proc)) == {f"openai/r-{name}": [list(c) for c in oracle(raw, tools)] for name, raw, tools in REPLIES}
    # without the option, no record has a reply: each is a bad record, said
    proc = run(str(path))
    assert proc.returncode == 3
    assert f'{path}:1: no "raw" field' in proc.stdout.decode()


def test_a_folder_of_logs_and_cases(tmp_path: Path) -> None:
    folder = tmp_path / "captures"
    (folder / "sub").mkdir(parents=True)
    write_jsonl(folder / "a.jsonl", records()[:2])
    (folder / "b.jsonl.gz").write_bytes(gzip.compress((json.dumps(records()[2]) + "\n").encode()))
    write_csv(folder / "sub" / "c.csv", records()[3:])
    (folder / "one.txt").write_text(REPLIES[0][1], encoding="utf-8")
    proc = run("--json", str(folder))
    assert proc.returncode == 0, proc.stderr.decode()
    assert sorted(cases_of(proc)) == sorted(
        ["captures/a/two_calls", "captures/a/repaired", "captures/b/unreadable", "captures/sub/c/separators", "captures/sub/c/lfm2", "captures/one"]
    )


# -- bad records ----------------------------------------------------------------------------------


def test_bad_records_are_said_and_skipped(tmp_path: Path) -> None:
    good = json.dumps({"id": "good", "raw": REPLIES[0][1]})
    lines = [
        good,
        '{"id": "not_json", "raw": "x"',  # 2
        json.dumps({"raw": 5}),  # 3
        json.dumps({"raw": "x", "tools": 5}),  # 4
        "[" * 100_000 + "]" * 100_000,  # 5: deeper than json.loads goes
        json.dumps({"raw": "x", "expected": ["get_weather"]}),  # 6: a list of strings
        json.dumps({"raw": "x", "in_think": "yes"}),  # 7
        json.dumps({"id": "answer_key", "raw": "x", "expected": {"possible_answer": {"f": {}}}}),  # 8: not ours, not bad
        "",
        json.dumps({"id": "last", "raw": REPLIES[4][1]}),  # 10
        '{"id": "cut", "raw": "<tool_call>{\\"na',  # 11: the log cut mid-line
    ]
    path = tmp_path / "log.jsonl"
    path.write_text("\n".join(lines), encoding="utf-8")
    proc = run(str(path))
    out = proc.stdout.decode()
    assert proc.returncode == 3, out + proc.stderr.decode()
    total = next(line for line in out.splitlines() if line.startswith("total")).split()
    assert total[1] == "3"  # good, answer_key, last
    assert "bad records (7, skipped)" in out
    for n, what in [(2, "not JSON"), (3, '"raw" must be a string'), (4, '"tools" is not tools'), (5, "nested too deeply"),
                    (6, '"expected" must be a list of {"name", "arguments"} objects'), (7, '"in_think" must be true or false'), (11, "not JSON")]:  # fmt: skip
        assert f"{path}:{n}: {what}" in out, (n, out)
    assert "1 record(s) have an `expected` that is not a list of calls" in out
    assert "internal error" not in proc.stderr.decode()

    strict = run("--strict", str(path))
    assert strict.returncode == 2
    assert strict.stderr.decode().startswith(f"toolgram: error: {path}:2: not JSON")

    data = json.loads(run("--json", str(path)).stdout)
    assert data["bad_records"]["count"] == 7 and data["expected_not_compared"] == 1
    assert [c["id"] for c in data["cases"]] == ["log/good", "log/answer_key", "log/last"]


def test_unknown_format_in_a_record_is_a_bad_record(tmp_path: Path) -> None:
    """A record's "formats" naming no format is that record's fault: skipped and said, the
    run goes on (QA: the whole run stopped as an internal error, exit status 70). So is a
    case folder's .formats.json sidecar; with --jobs the workers find it too."""
    log = tmp_path / "log.jsonl"
    log.write_text("\n".join([
        json.dumps({"id": "typo", "raw": "hi", "formats": ["hermess"]}),
        json.dumps({"id": "good", "raw": REPLIES[4][1], "formats": ["lfm2"]}),
    ]), encoding="utf-8")  # fmt: skip
    folder = tmp_path / "cases"
    folder.mkdir()
    (folder / "one.txt").write_text("ok", encoding="utf-8")
    (folder / "one.formats.json").write_text('["nope"]', encoding="utf-8")
    for jobs in ("1", "2"):
        proc = run("-j", jobs, str(log), str(folder))
        out = proc.stdout.decode()
        assert proc.returncode == 3, out + proc.stderr.decode()
        assert "internal error" not in proc.stderr.decode()
        assert "bad records (2, skipped)" in out
        assert f"""{log}:1: "formats" names an unknown format: unknown format 'hermess' (did you mean hermes?""" in out
        assert "\"formats\" names an unknown format: unknown format 'nope'" in out
        assert next(line for line in out.splitlines() if line.startswith("lfm2")).split()[1] == "1"
    strict = run("--strict", str(log))
    assert strict.returncode == 2 and "unknown format 'hermess'" in strict.stderr.decode()


def test_bad_rows_of_csv_and_json_arrays(tmp_path: Path) -> None:
    path = tmp_path / "log.csv"
    path.write_text('id,raw\na,"hello"\nb,"x",extra\nc,"bye"\n', encoding="utf-8")
    proc = run(str(path))
    assert proc.returncode == 3
    assert f"{path}:3: 3 cells, the header has 2" in proc.stdout.decode()
    array = tmp_path / "log.json"
    array.write_text('[\n  {"raw": "one"},\n  {"raw": 2},\n  {"raw": "three"}\n', encoding="utf-8")  # ']' missing
    data = json.loads(run("--json", str(array)).stdout)
    assert [c["id"] for c in data["cases"]] == ["log/item_1", "log/item_3"]
    assert [(b["where"], b["message"]) for b in data["bad_records"]["shown"]] == [
        (f"{array}:3", '"raw" must be a string, not a number'),
        (f"{array}:5", "the file ends inside the array (no closing ']')"),
    ]


def test_unreadable_inputs_are_one_line_errors(tmp_path: Path) -> None:
    for args in (["-", "-"], [str(tmp_path / "missing.jsonl")], [str(tmp_path)]):
        proc = run(*args, stdin=b"")
        assert proc.returncode == 2, args
        assert proc.stderr.decode().count("\n") == 1 and "Traceback" not in proc.stderr.decode()
    odd = tmp_path / "log.xlsx"
    odd.write_text("x", encoding="utf-8")
    assert "not a kind of log" in run(str(odd)).stderr.decode()


# -- --max-chars -----------------------------------------------------------------------------------


def test_max_chars(tmp_path: Path) -> None:
    raw = "word " * 8000 + '<tool_call>{"name": "late", "arguments": {"n": 1}}</tool_call>'
    path = tmp_path / "long.jsonl"
    write_jsonl(path, [{"id": "long", "raw": raw}])
    assert len(raw) > 32_768
    for args, kw in (([], {}), (["--max-chars", "none"], {"max_chars": None}), (["--max-chars", "100"], {"max_chars": 100})):
        proc = run("--json", *args, str(path))
        assert proc.returncode == 0
        assert as_lists(cases_of(proc)) == {"long/long": [list(c) for c in oracle(raw, max_chars=kw.get("max_chars", 32_768))]}
    assert cases_of(run("--json", "--max-chars", "none", str(path)))["long/long"] == [("late", {"n": 1})]
    assert cases_of(run("--json", str(path)))["long/long"] == []


# -- --jobs ----------------------------------------------------------------------------------------


def test_jobs_give_the_same_results_in_order(tmp_path: Path) -> None:
    recs = [dict(r, id=f"{r['id']}_{i}") for i in range(60) for r in records()]
    path = tmp_path / "many.jsonl"
    write_jsonl(path, recs)
    one = run("--json", str(path))
    three = run("--json", "--jobs", "3", str(path))
    assert one.returncode == three.returncode == 0
    assert one.stdout == three.stdout
    assert len(json.loads(one.stdout)["cases"]) == 300


# -- baselines ----------------------------------------------------------------------------------------


def call(name: str, args: str) -> str:
    return f'<tool_call>{{"name": "{name}", "arguments": {args}}}</tool_call>'


BEFORE = {
    "args": (call("get_weather", '{"city": "Paris"}'), None),
    "lost": ("Checking. " + call("get_weather", '{"city": "Oslo"}'), None),
    "wording": (call("book_hotel", '{"n": 2}'), ["get_weather"]),
    "repair": ("On it. " + call("set_alarm", '{"at": "7:00",}'), None),
    "prose": ("Hello there.", None),
    "same": (call("ping", "{}"), None),
    "gone": ("Bye.", None),
}
AFTER = dict(
    BEFORE,
    args=(call("get_weather", '{"city": "Lyon"}'), None),
    lost=("Checking. ", None),
    wording=(call("book_hotel", '{"n": 2}'), ["get_weather", "search_web"]),
    repair=("On it. " + call("set_alarm", '{"at": "7:00"}'), None),
    prose=("Hello there!", None),
    fresh=("New.", None),
)
del AFTER["gone"]
DESIGNED = {
    "args": {"calls"},
    "lost": {"added_lost"},  # (the call goes; the prose around it stays the same text)
    "wording": {"errors"},
    "repair": {"details"},
    "prose": {"text"},
    "same": set(),
    "fresh": {"new"},
}


def log_of(path: Path, replies: dict) -> Path:
    write_jsonl(path, [{"id": k, "raw": raw, "tools": tools} for k, (raw, tools) in replies.items()])
    return path


def test_the_designed_differences_are_what_parse_gives() -> None:
    # (the oracle: each pair differs in the designed parts of parse()'s result only)
    for key in ("wording", "repair"):
        a, b = toolgram.parse(*BEFORE[key]), toolgram.parse(*AFTER[key])
        assert a.text == b.text and [(c.name, c.arguments) for c in a.calls] == [(c.name, c.arguments) for c in b.calls]
        assert (a.errors != b.errors) == (key == "wording")
        assert ([c.repairs for c in a.calls] != [c.repairs for c in b.calls]) == (key == "repair")


@pytest.mark.parametrize("kind", ["parquet", "jsonl"])
def test_baseline_saved_then_compared_by_kind(tmp_path: Path, kind: str) -> None:
    if kind == "parquet":
        pytest.importorskip("pyarrow")
    base = tmp_path / f"base.{kind}"
    before = log_of(tmp_path / "run.jsonl", BEFORE)
    saved = run(str(before), "--save-baseline", str(base))
    assert saved.returncode == 0, saved.stderr.decode()
    assert base.read_bytes()[:4] == (b"PAR1" if kind == "parquet" else b'{"id')
    # the same build on the same log: no difference
    again = run(str(before), "--baseline", str(base), "--compare", "all")
    assert again.returncode == 0, again.stdout.decode()
    assert "no difference in calls, calls added or lost" not in again.stdout.decode()  # (kinds said by their names)
    assert "no mismatch, no difference in calls, added_lost, text, errors, details, new, missing" in again.stdout.decode()

    after = log_of(tmp_path / "run.jsonl", AFTER)  # (same file name: the same case ids)
    proc = run("--json", str(after), "--baseline", str(base))
    assert proc.returncode == 1
    data = json.loads(proc.stdout)
    assert {c["id"].split("/")[1]: set(c["differences"]) for c in data["cases"]} == DESIGNED
    kinds = data["baseline"]["kinds"]
    counts = {k: v["count"] for k, v in kinds.items()}
    assert counts == {"calls": 1, "added_lost": 1, "text": 1, "errors": 1, "details": 1, "new": 1, "missing": 1}
    assert [k for k, v in kinds.items() if v["fails"]] == ["calls", "added_lost", "text"]
    assert kinds["missing"]["examples"][0]["id"] == "run/gone"
    assert kinds["calls"]["examples"][0]["difference"] == 'call 1: get_weather({"city": "Paris"}) -> get_weather({"city": "Lyon"})'
    assert data["baseline"]["failing_records"] == 3  # args, lost, prose
    # --json's calls carry their arguments
    assert next(c for c in data["cases"] if c["id"] == "run/args")["calls"][0]["arguments"] == {"city": "Lyon"}

    table = run(str(after), "--baseline", str(base)).stdout.decode()
    assert "calls changed (name or arguments)" in table and "spans or repairs only" in table
    assert 'run/args (' in table and "(not compared)" in table

    # what fails the run is a choice
    only_quiet = {k: AFTER[k] for k in ("wording", "repair", "same")} | {k: BEFORE[k] for k in ("args", "lost", "prose", "gone")}
    quiet = log_of(tmp_path / "run.jsonl", only_quiet)
    assert run(str(quiet), "--baseline", str(base)).returncode == 0  # default: calls, text
    assert run(str(quiet), "--baseline", str(base), "--compare", "errors").returncode == 1
    assert run(str(quiet), "--baseline", str(base), "--compare", "calls,text").returncode == 0
    assert run(str(quiet), "--baseline", str(base), "--compare", "all").returncode == 1
    bad = run(str(quiet), "--baseline", str(base), "--compare", "spans")
    assert bad.returncode == 2 and "choose among calls, text, errors, all" in bad.stderr.decode()


def test_baseline_with_jobs_and_out_of_order_records(tmp_path: Path) -> None:
    recs = [{"id": f"r{i}", "raw": call("f", json.dumps({"i": i}))} for i in range(200)]
    log = tmp_path / "run.jsonl"
    write_jsonl(log, recs)
    base = tmp_path / "base.jsonl.gz"
    assert run(str(log), "--save-baseline", str(base), "-j", "2").returncode == 0
    write_jsonl(log, list(reversed(recs)))  # (matched by id, not by position)
    proc = run("--json", str(log), "--baseline", str(base), "-j", "2")
    assert proc.returncode == 0, proc.stdout.decode()[-2000:]
    assert json.loads(proc.stdout)["baseline"]["records"] == 200


# -- streaming ------------------------------------------------------------------------------------


PEAK = """
import resource, subprocess, sys
subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, check=True)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
"""


def peak_kib(log: Path, *args: str) -> int:
    env = dict(os.environ, PYTHONPATH=str(SRC) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    cmd = [sys.executable, "-c", PEAK, sys.executable, "-m", "toolgram", "check", str(log), *args]
    return int(subprocess.run(cmd, capture_output=True, text=True, env=env, check=True, timeout=300).stdout)


def test_records_stream_memory_stays_flat(tmp_path: Path) -> None:
    # Ten times the records, the same peak (within a few MiB): nothing holds them all. Holding
    # 16,000 records (20 MB of JSON) would take tens of MiB.
    pool = [p.read_bytes().decode("utf-8") for p in sorted(CORPUS.glob("*/*.txt"))]
    # (The smaller log holds every case of the pool, so the larger one meets no format the
    # smaller did not: a format's first use builds its tables, a cold cache's megabytes,
    # which is no growth with the records. With 1,600 records and a pool of more, it was.)
    small = max(1_600, len(pool))
    peaks = {}
    for n in (small, 10 * small):
        log = tmp_path / f"log_{n}.jsonl"
        write_jsonl(log, [{"id": f"r{i}", "raw": pool[i % len(pool)] + " " * 1000} for i in range(n)])
        if n > small:
            assert log.stat().st_size > 20 * 10**6
        peaks[n] = peak_kib(log)
    assert peaks[10 * small] - peaks[small] < 6 * 1024, peaks


def test_the_plugins_reader_splits_on_newlines_only_and_skips_a_bom(tmp_path: Path) -> None:
    # (toolgram_cases and the pytest plugin read .jsonl files through cases.load_cases)
    from toolgram._audit.cases import load_cases

    path = tmp_path / "caps.jsonl"
    write_jsonl(path, records(), bom=True)
    cases = load_cases([path])
    assert [(c.id, c.raw) for c in cases] == [(f"caps/{name}", raw) for name, raw, _ in REPLIES]
