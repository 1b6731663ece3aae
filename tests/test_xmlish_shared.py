"""Real malformed outputs of the XML-ish formats, read from ../shared at test time.

github_issues.jsonl holds replies that users reported as failing to parse in
inference servers (GLM with a missing <arg_value>, zero-argument GLM calls,
Qwen3-Coder without its wrapper or close tags, MiniMax-M3, Gemma 4 with broken
string delimiters). It is a third-party capture: it is read in place and never
copied into the repository; the test is skipped when ../shared is absent.

Some records are only the body of a call block, because the server had already
stripped the wrapper tokens; the test puts the wrapper back, as the model wrote it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import toolgram

from conftest import shared_path

# label prefix -> (format, wrapper put back around a body-only record)
LABELS = {
    "glm_xml_arg_key": ("glm45_arg_kv", ("<tool_call>", "</tool_call>")),
    "qwen3_coder_xml": ("qwen3_coder_xml", None),
    "minimax_m3_namespaced_xml": ("minimax_m3_nested_xml", None),
    "gemma4_call": ("gemma4_call", ("<|tool_call>", "<tool_call|>")),
}


def _records() -> list[tuple[str, dict[str, Any]]]:
    base = shared_path()
    path = base / "corpus" / "github_issues.jsonl" if base is not None else None
    if path is None or not path.exists():
        return []
    out = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines()):
        record = json.loads(line)
        label = record.get("format", "")
        for prefix in LABELS:
            if label.startswith(prefix) and record.get("expected") is not None:
                out.append((f"{n}:{prefix}", record))
    return out


RECORDS = _records()


@pytest.mark.skipif(not RECORDS, reason="../shared/corpus/github_issues.jsonl is absent")
@pytest.mark.parametrize("record", [r for _, r in RECORDS], ids=[i for i, _ in RECORDS])
def test_reported_outputs_parse(record: dict[str, Any]) -> None:
    label = record["format"]
    fmt, wrapper = next(v for k, v in LABELS.items() if label.startswith(k))
    raw = record["raw"]
    if wrapper is not None and wrapper[0] not in raw:
        raw = wrapper[0] + raw + wrapper[1]
    for formats in ([fmt], None):
        result = toolgram.parse(raw, formats=formats)
        got = [{"name": c.name, "arguments": c.arguments} for c in result.calls]
        assert got == record["expected"], (formats, result.errors)
        assert all(c.format == fmt for c in result.calls)
        assert result.errors == []


def test_shared_dir_layout(shared_dir: Path) -> None:
    """When ../shared is there, the records this file relies on are too."""
    labels = {prefix for _, record in RECORDS for prefix in LABELS if record["format"].startswith(prefix)}
    assert labels == set(LABELS)
