"""Agreement with reference decodings of real model output in ../shared/corpus.

The same computation as `python benchmarks/corpus_agreement.py` (see its docstring for the
definitions). The captures are third-party: read from ../shared at test time, never copied
into the repo; the tests skip when that folder is absent.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

import pytest

from conftest import REPO_ROOT

SCRIPT = REPO_ROOT / "benchmarks" / "corpus_agreement.py"

# Floors the figures must not fall below (the targets are 90%).
BFCL_AGREEMENT = 0.90
ISSUES_AGREEMENT = 0.90
BFCL_RECOVERED = 80  # records the leaderboard's decoder failed on that yield an offered call


def _load() -> Any:
    spec = importlib.util.spec_from_file_location("corpus_agreement", SCRIPT)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(spec.name, module)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def agreement() -> Any:
    return _load()


@pytest.fixture(scope="module")
def corpus(shared_dir: Path) -> Path:
    return shared_dir / "corpus"


def _report(fig: Any) -> str:
    return f"{fig.agree}/{fig.total}; disagreements:\n" + "\n".join(fig.disagreements)


def test_bfcl_agreement_with_the_leaderboard_decoder(agreement: Any, corpus: Path) -> None:
    fig = agreement.bfcl_figures(corpus)
    assert fig.total >= 100  # the records the leaderboard decoded
    assert fig.rate >= BFCL_AGREEMENT, _report(fig)
    assert fig.recovered >= BFCL_RECOVERED, f"{fig.recovered}/{fig.failed}"


def test_github_issues_agreement_with_the_labels(agreement: Any, corpus: Path) -> None:
    fig = agreement.issues_figures(corpus)
    assert fig.total >= 25
    assert fig.rate >= ISSUES_AGREEMENT, _report(fig)


def test_reference_normalisation(agreement: Any) -> None:
    ref = agreement.bfcl_reference
    assert ref("[]") == [] and ref([]) == [] and ref(["No function is called"]) == []
    assert ref("None") is None and ref("\n{\"tool_calls\": []}") is None  # the decoder echoed the text
    assert ref(["geo.area(w=3,h=4)", "f(x='a, b')"]) == [("geo.area", {"w": 3, "h": 4}), ("f", {"x": "a, b"})]
    assert ref([{"name": "f", "arguments": {"a": (1, 2)}}]) == [("f", {"a": (1, 2)})]
    norm = agreement.normal_calls
    assert norm([("requests.get", {"a": (1, 2)})]) == [{"requests_get": {"a": [1, 2]}}]
    assert norm([("f", {"xs": [30, 60], "s": "x"})], "javascript") == [{"f": {"xs": "[30, 60]", "s": "x"}}]
    assert agreement.offered_as_seen(["requests.get", "f"]) == ["requests.get", "f", "requests_get"]


def test_verdicts(agreement: Any) -> None:
    def rec(note: str, decoded: Any = None) -> dict:
        return {"note": note, "expected": {"bfcl_decoded": decoded}}

    assert agreement.verdict(rec("…; error_type=ast_decoder:decoder_failed; …")) == "failed"
    assert agreement.verdict(rec("error_type=executable_decoder:wrong_output_format;", "[]")) == "failed"
    assert agreement.verdict(rec("error_type=value_error:string;", [])) == "decoded"
    assert agreement.verdict(rec("BFCL result file entry")) == "none"
