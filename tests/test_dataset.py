"""toolgram.dataset.parse_batch over Arrow batches, and the same function under Ray Data
(local, 2 CPUs) reading Parquet and writing Parquet, as docs/cli.md shows it.

toolgram.parse() is the oracle for every row.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import toolgram

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

from toolgram.dataset import RESULT_COLUMNS, parse_batch  # noqa: E402 - after the importorskip

CORPUS = Path(__file__).resolve().parent / "corpus"
SRC = Path(__file__).resolve().parent.parent / "src"


def corpus_replies() -> list[str]:
    paths = sorted(CORPUS.glob("*/*.txt"))[::23]  # a spread of formats, repaired and broken replies among them
    return [p.read_bytes().decode("utf-8") for p in paths]


def expected_row(raw: str, tools=None) -> dict:
    result = toolgram.parse(raw, tools)
    repairs: list[str] = []
    for c in result.calls:
        repairs += [r for r in c.repairs if r not in repairs]
    return {
        "calls": [(c.name, json.loads(json.dumps(c.arguments)), list(c.span), list(c.repairs), c.format) for c in result.calls],
        "text": result.text,
        "reasoning": result.reasoning,
        "errors": list(result.errors),
        "repairs": repairs,
    }


def got_row(row: dict) -> dict:
    return {
        "calls": [(c["name"], json.loads(c["arguments"]), c["span"], c["repairs"], c["format"]) for c in row["calls"]],
        **{k: row[k] for k in ("text", "reasoning", "errors", "repairs")},
    }


def test_parse_batch_adds_the_result_columns() -> None:
    raws = corpus_replies()
    assert len(raws) > 20
    table = pa.table({"rid": list(range(len(raws) + 1)), "response": [*raws, None]})
    out = parse_batch(table, raw_column="response")
    assert out.column_names == ["rid", "response", *RESULT_COLUMNS]
    rows = out.to_pylist()
    assert [got_row(r) for r in rows[:-1]] == [expected_row(r) for r in raws]
    assert all(rows[-1][k] is None for k in RESULT_COLUMNS)  # a null reply: null results
    # a RecordBatch in, a RecordBatch out; per-row tools from a column of JSON text
    tools = [json.dumps(["get_weather"]) if i % 2 else None for i in range(len(raws))]
    batch = pa.RecordBatch.from_pydict({"raw": raws, "tools": tools})
    out = parse_batch(batch, tools_column="tools")
    assert isinstance(out, pa.RecordBatch)
    assert [got_row(r) for r in out.to_pylist()] == [
        expected_row(r, json.loads(t) if t else None) for r, t in zip(raws, tools)
    ]
    with pytest.raises(KeyError, match="no column 'raw'"):
        parse_batch(table)


RAY_SCRIPT = textwrap.dedent(
    """
    import sys
    import ray
    from toolgram.dataset import parse_batch

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        ds = ray.data.read_parquet(sys.argv[1])
        ds = ds.map_batches(parse_batch, batch_format="pyarrow", batch_size=8, fn_kwargs={"raw_column": "response"})
        ds.write_parquet(sys.argv[2])
    finally:
        ray.shutdown()
    """
)


def test_ray_data_map_batches_reads_and_writes_parquet(tmp_path: Path) -> None:
    pytest.importorskip("ray")
    raws = corpus_replies()
    source = tmp_path / "replies"
    source.mkdir()
    half = len(raws) // 2
    for i, part in enumerate((raws[:half], raws[half:])):
        ids = list(range(i * half, i * half + len(part)))
        pq.write_table(pa.table({"rid": ids, "response": part}), str(source / f"part-{i}.parquet"))
    script = tmp_path / "pipeline.py"
    script.write_text(RAY_SCRIPT, encoding="utf-8")
    env = dict(os.environ, PYTHONPATH=str(SRC) + os.pathsep + os.environ.get("PYTHONPATH", ""), RAY_USAGE_STATS_ENABLED="0")
    proc = subprocess.run(
        [sys.executable, str(script), str(source), str(tmp_path / "parsed")], capture_output=True, text=True, env=env, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = sorted(pq.read_table(str(tmp_path / "parsed")).to_pylist(), key=lambda r: r["rid"])
    assert [r["rid"] for r in rows] == list(range(len(raws)))
    assert [got_row(r) for r in rows] == [expected_row(r) for r in raws]
