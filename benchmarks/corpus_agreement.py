"""How parse() agrees with reference decodings of real model output in ../shared/corpus.

    python benchmarks/corpus_agreement.py              # the figures
    python benchmarks/corpus_agreement.py --verbose    # and every record that disagrees

The captures are third-party: they are read from ../shared/corpus (or --corpus DIR) and never
copied into this repository. tests/test_shared_corpus.py runs the same computation.

bfcl_result_2024.jsonl (Berkeley Function Calling Leaderboard result files, 2024)
    Each record's `note` carries the leaderboard's verdict (`error_type=…`). Where that verdict
    is about the answer (`*_checker:…`, `value_error:…`, `type_error:…`), the leaderboard's own
    decoder read the text, and `expected.bfcl_decoded` is what it read: those records are
    *decoded*. Where the verdict is `ast_decoder:…` or `executable_decoder:…`, its decoder
    *failed* on the text (whatever bfcl_decoded then holds: nothing, "[]", "None", the raw
    text). Records with no verdict (plain result-file entries) are neither.

    agreement, on the decoded records: parse(raw, tools) gives the same list of
    {name: {argument: value}} as bfcl_decoded, normalised as the leaderboard compares them:
      - bfcl_decoded is a list of {"name", "arguments"} objects, or of call strings
        "f(a=1,b='x')" (the executable categories), read with Python's ast as the
        leaderboard does; "[]", [] and ["No function is called"] are no calls;
      - names compare with "." read as "_": the leaderboard gives function-calling models
        the names with dots replaced (their APIs forbid dots) and maps them back;
      - tuples are lists, and in the java/javascript categories, where the leaderboard's
        decoder keeps an argument's source text, a non-string value compares as its JSON text.
    tools: the record's tools_offered, each name also as the model saw it ("." -> "_").

    recovered, on the failed records: how many yield at least one call to an offered tool
    (and how many calls in all), by the capture's descriptive format label. Not every such
    call is right -- some of these texts are prose about calls -- so --verbose lists them.

github_issues.jsonl (outputs users reported as failing to parse in inference servers)
    agreement, on the records with a hand-labelled `expected` (a list of {name, arguments}):
    the same list of {name: arguments}, in order. No tools are given (the captures have none).
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import toolgram

DEFAULT_CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpus"
BFCL_FILE = "bfcl_result_2024.jsonl"
ISSUES_FILE = "github_issues.jsonl"

_ERROR_TYPE = re.compile(r"error_type=([A-Za-z_]+):")
_DECODER_ERRORS = ("ast_decoder", "executable_decoder")
_SOURCE_TEXT_CATEGORIES = ("java", "javascript")


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


# -- normalisation -------------------------------------------------------------------------


def _plain(value: Any, source_text: bool) -> Any:
    if isinstance(value, dict):
        return {str(k): _plain(v, source_text) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        value = [_plain(v, False) for v in value]
    if source_text and not isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    return value


def normal_calls(calls: list[tuple[str, Any]], category: str | None = None) -> list[dict[str, Any]]:
    """[(name, arguments)] -> [{name: arguments}] as the leaderboard compares them."""
    source_text = category in _SOURCE_TEXT_CATEGORIES
    out = []
    for name, args in calls:
        args = args if isinstance(args, dict) else {}
        out.append({name.replace(".", "_"): {str(k): _plain(v, source_text) for k, v in args.items()}})
    return out


def _ast_value(node: ast.AST) -> Any:
    try:
        return ast.literal_eval(node)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return ast.unparse(node)


def _call_from_string(text: str) -> tuple[str, dict[str, Any]] | None:
    """"f(a=1,b='x')" -> ("f", {"a": 1, "b": "x"}), as the leaderboard's executable decoder wrote it."""
    try:
        node = ast.parse(text.strip(), mode="eval").body
    except SyntaxError:
        return None
    if not isinstance(node, ast.Call):
        return None
    return ast.unparse(node.func), {kw.arg: _ast_value(kw.value) for kw in node.keywords if kw.arg}


def bfcl_reference(decoded: Any) -> list[tuple[str, Any]] | None:
    """bfcl_decoded as [(name, arguments)]; None when it is not a list of calls."""
    if isinstance(decoded, str):
        try:
            decoded = ast.literal_eval(decoded)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            return None
    if not isinstance(decoded, list):
        return None
    calls = []
    for item in decoded:
        if isinstance(item, dict) and "name" in item:
            calls.append((str(item["name"]), item.get("arguments")))
        elif item == "No function is called":  # what it reads Granite's no_function call as
            continue
        elif isinstance(item, str) and (call := _call_from_string(item)) is not None:
            calls.append(call)
        else:
            return None
    return calls


def verdict(record: dict[str, Any]) -> str:
    """"decoded", "failed" or "none": what the leaderboard's decoder made of the record."""
    m = _ERROR_TYPE.search(record.get("note") or "")
    if m is None:
        return "none"
    if m.group(1) in _DECODER_ERRORS:
        return "failed"
    return "decoded" if (record.get("expected") or {}).get("bfcl_decoded") is not None else "none"


def offered_as_seen(names: list[str] | None) -> list[str] | None:
    """tools_offered, plus each dotted name as function-calling models were given it."""
    if names is None:
        return None
    out = list(names)
    out += [n.replace(".", "_") for n in names if "." in n and n.replace(".", "_") not in out]
    return out


# -- the figures ---------------------------------------------------------------------------


@dataclass
class Figures:
    agree: int = 0
    total: int = 0
    failed: int = 0  # records the reference decoder failed on
    recovered: int = 0  # ... of which parse() yields a call to an offered tool
    recovered_calls: int = 0
    recovered_by_label: Counter = field(default_factory=Counter)
    failed_by_label: Counter = field(default_factory=Counter)
    disagreements: list[str] = field(default_factory=list)
    recoveries: list[str] = field(default_factory=list)

    @property
    def rate(self) -> float:
        return self.agree / self.total if self.total else 0.0


def _ours(result: Any) -> list[tuple[str, Any]]:
    return [(c.name, c.arguments) for c in result.calls]


def _show(record: dict[str, Any], ours: Any, theirs: Any) -> str:
    raw = record["raw"]
    raw = raw if len(raw) <= 300 else raw[:300] + "…"
    return f"[{record.get('format')}] {record.get('model')}\n  raw:    {raw!r}\n  parse:  {ours}\n  theirs: {theirs}"


def bfcl_figures(corpus: Path, as_seen: bool = True) -> Figures:
    """as_seen=False passes tools_offered verbatim (dotted names only)."""
    fig = Figures()
    for record in read_jsonl(corpus / BFCL_FILE):
        kind = verdict(record)
        if kind == "none":
            continue
        tools = offered_as_seen(record.get("tools_offered")) if as_seen else record.get("tools_offered")
        result = toolgram.parse(record["raw"], tools)
        if kind == "decoded":
            reference = bfcl_reference(record["expected"]["bfcl_decoded"])
            category = record.get("test_category")
            ours = normal_calls(_ours(result), category)
            theirs = normal_calls(reference, category) if reference is not None else None
            fig.total += 1
            if ours == theirs:
                fig.agree += 1
            else:
                fig.disagreements.append(_show(record, ours, theirs))
            continue
        fig.failed += 1
        label = record.get("format") or "?"
        fig.failed_by_label[label] += 1
        offered = [c for c in result.calls if tools is not None and c.name in tools]
        if offered:
            fig.recovered += 1
            fig.recovered_calls += len(offered)
            fig.recovered_by_label[label] += 1
            fig.recoveries.append(_show(record, normal_calls(_ours(result)), "(decoder failed)"))
    return fig


def issues_figures(corpus: Path) -> Figures:
    fig = Figures()
    for record in read_jsonl(corpus / ISSUES_FILE):
        expected = record.get("expected")
        if not isinstance(expected, list):
            continue
        result = toolgram.parse(record["raw"], record.get("tools_offered"))
        ours = [{c.name: c.arguments} for c in result.calls]
        theirs = [{c["name"]: c.get("arguments", {})} for c in expected]
        fig.total += 1
        if ours == theirs:
            fig.agree += 1
        else:
            fig.disagreements.append(_show(record, ours, theirs))
    return fig


def _pct(n: int, d: int) -> str:
    return f"{n}/{d} = {100 * n / d:.1f}%" if d else f"{n}/0"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS, help="the shared corpus folder")
    ap.add_argument("--verbose", "-v", action="store_true", help="list disagreements and recoveries")
    args = ap.parse_args(argv)
    if not (args.corpus / BFCL_FILE).is_file():
        print(f"{args.corpus}: no {BFCL_FILE} here (the shared corpus is not shipped)", file=sys.stderr)
        return 2
    bfcl = bfcl_figures(args.corpus)
    issues = issues_figures(args.corpus)
    print(f"{BFCL_FILE}")
    verbatim = bfcl_figures(args.corpus, as_seen=False)
    print(f"  agreement with the leaderboard decoder (records it decoded): {_pct(bfcl.agree, bfcl.total)}")
    print(f"    (with tools_offered verbatim, no underscore spellings: {_pct(verbatim.agree, verbatim.total)})")
    print(
        f"  records its decoder failed on that yield a call to an offered tool: "
        f"{_pct(bfcl.recovered, bfcl.failed)} ({bfcl.recovered_calls} calls)"
    )
    for label, n in bfcl.failed_by_label.most_common():
        print(f"    {label}: {bfcl.recovered_by_label[label]}/{n}")
    print(f"{ISSUES_FILE}")
    print(f"  agreement with the hand labels (labelled records): {_pct(issues.agree, issues.total)}")
    if args.verbose:
        for title, items in (
            (f"{BFCL_FILE}: disagreements", bfcl.disagreements),
            (f"{BFCL_FILE}: calls recovered where the decoder failed", bfcl.recoveries),
            (f"{ISSUES_FILE}: disagreements", issues.disagreements),
        ):
            print(f"\n== {title} ({len(items)})")
            for item in items:
                print(item)
    return 0


if __name__ == "__main__":
    sys.exit(main())
