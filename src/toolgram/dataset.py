"""Parse a column of replies in Arrow record batches: `parse_batch(table, ...) -> table`.

A plain function of one batch, so that whatever maps batches runs it: a loop over a
Parquet file's batches on one machine, or Ray Data over a cluster (needs pyarrow:
`pip install 'toolgram[parquet]'`; Ray: `pip install 'toolgram[ray]'`):

    import ray
    from toolgram.dataset import parse_batch

    ds = ray.data.read_parquet("s3://bucket/replies/")
    ds = ds.map_batches(parse_batch, batch_format="pyarrow", fn_kwargs={"raw_column": "response"})
    ds.write_parquet("s3://bucket/parsed/")

Columns added (RESULT_COLUMNS; a column of the same name in the input is replaced):
`calls` (a list of {name, arguments (JSON text: arguments have no fixed schema), id, kind,
format, span, repairs}), `text`, `reasoning`, `errors` (list of strings), `repairs` (every
repair of the reply's calls, once each). A null reply gives nulls.
"""

from __future__ import annotations

import json
from typing import Any

RESULT_COLUMNS = ("calls", "text", "reasoning", "errors", "repairs")


def _types() -> dict[str, Any]:
    import pyarrow as pa

    call = pa.struct(
        [
            ("name", pa.string()),
            ("arguments", pa.string()),
            ("id", pa.string()),
            ("kind", pa.string()),
            ("format", pa.string()),
            ("span", pa.list_(pa.int64())),
            ("repairs", pa.list_(pa.string())),
        ]
    )
    return {
        "calls": pa.list_(call),
        "text": pa.string(),
        "reasoning": pa.string(),
        "errors": pa.list_(pa.string()),
        "repairs": pa.list_(pa.string()),
    }


def _clean(text: Any) -> Any:
    """Arrow strings are UTF-8: a lone surrogate (a reply's "\\ud800" decoded) becomes U+FFFD."""
    if isinstance(text, str) and not text.isascii():
        return text.encode("utf-8", "replace").decode("utf-8")
    return text


def _row(data: dict) -> dict:
    """A result (toolgram._audit.cases.result_data) as a row of RESULT_COLUMNS."""
    calls = [
        {
            "name": _clean(c["name"]),
            "arguments": json.dumps(c["arguments"]),  # (ASCII JSON: any value survives)
            "id": _clean(c["id"]) if isinstance(c["id"], str) or c["id"] is None else str(c["id"]),
            "kind": c["kind"],
            "format": c["format"],
            "span": list(c["span"]),
            "repairs": list(c["repairs"]),
        }
        for c in data["calls"]
    ]
    repairs: list[str] = []
    for c in data["calls"]:
        repairs += [r for r in c["repairs"] if r not in repairs]
    return {
        "calls": calls,
        "text": _clean(data["text"]),
        "reasoning": _clean(data["reasoning"]),
        "errors": [_clean(e) for e in data["errors"]],
        "repairs": repairs,
    }


def parse_batch(
    table: Any,
    raw_column: str = "raw",
    tools: Any = None,
    tools_column: str | None = None,
    formats: list[str] | None = None,
    grammar_paths: Any = None,
    in_think: bool = False,
    max_chars: int | None = 32_768,
    truncated: str = "repair",
) -> Any:
    """The batch (a pyarrow Table or RecordBatch) with each reply of `raw_column` parsed:
    the RESULT_COLUMNS added. `tools`: the tools offered for every row (anything
    parse()'s tools= accepts), or `tools_column`: a column of each row's tools (JSON text
    or nested values). The other arguments are parse()'s."""
    import pyarrow as pa

    from ._audit.cases import result_data
    from ._pipeline import parse

    if raw_column not in table.column_names:
        raise KeyError(f"no column {raw_column!r} (the columns: {', '.join(table.column_names)})")
    raws = table.column(raw_column).to_pylist()
    row_tools = table.column(tools_column).to_pylist() if tools_column else None
    out: dict[str, list] = {name: [] for name in RESULT_COLUMNS}
    for i, raw in enumerate(raws):
        if not isinstance(raw, str):
            for name in RESULT_COLUMNS:
                out[name].append(None)
            continue
        offered = tools
        if row_tools is not None:
            offered = row_tools[i]
            if isinstance(offered, str) and offered.strip()[:1] in ("[", "{"):
                offered = json.loads(offered)
        result = parse(
            raw, offered, formats=formats, grammar_paths=grammar_paths, in_think=in_think,
            max_chars=max_chars, truncated=truncated,
        )  # fmt: skip
        row = _row(dict(result_data(result)))
        for name in RESULT_COLUMNS:
            out[name].append(row[name])
    types = _types()
    for name in RESULT_COLUMNS:
        if name in table.column_names:
            table = table.drop_columns([name]) if hasattr(table, "drop_columns") else table.drop([name])
    arrays = [pa.array(out[name], type=types[name]) for name in RESULT_COLUMNS]
    if isinstance(table, pa.RecordBatch):
        return pa.RecordBatch.from_arrays(
            [*table.columns, *arrays], names=[*table.schema.names, *RESULT_COLUMNS]
        )
    for name, array in zip(RESULT_COLUMNS, arrays):
        table = table.append_column(name, array)
    return table


# -- baselines (toolgram._audit.baseline) -----------------------------------------------------


def baseline_table(records: list[dict]) -> Any:
    """Baseline records ({"id", "source", text, reasoning, errors, calls}) as a Table."""
    import pyarrow as pa

    types = _types()
    rows = [_row(r) for r in records]
    columns = {
        "id": pa.array([r["id"] for r in records], type=pa.string()),
        "source": pa.array([_clean(r["source"]) for r in records], type=pa.string()),
    }
    for name in RESULT_COLUMNS:
        columns[name] = pa.array([r[name] for r in rows], type=types[name])
    return pa.table(columns)


def rows_of(batch: Any) -> list[dict]:
    """A baseline table's rows back as records (arguments decoded)."""
    out = []
    for r in batch.to_pylist():
        calls = [dict(c, arguments=json.loads(c["arguments"])) for c in r["calls"] or []]
        out.append(
            {
                "id": r["id"],
                "source": r["source"],
                "text": r["text"] or "",
                "reasoning": r["reasoning"] or "",
                "errors": list(r["errors"] or []),
                "calls": calls,
            }
        )
    return out
