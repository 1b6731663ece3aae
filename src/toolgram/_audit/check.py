"""`toolgram check`: run captured outputs through parse() and count, per format, what
parsed cleanly, what needed repairs, what produced errors and what differs from the
case's `expected` calls.

A case's row is the format of its first call ("(no call)" when none), or with
`by="label"` the folder name / the record's descriptive `format`.
Statuses: "clean" (no repairs, no errors), "repaired" (a call was repaired, no errors),
"error" (result.errors is not empty). A mismatch is counted on its own, on top.
"""

from __future__ import annotations

import sys
import time
from collections import OrderedDict
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, TextIO

from .cases import Case, mismatch
from .._pipeline import parse

NO_CALL = "(no call)"


@dataclass
class Outcome:
    id: str
    source: str
    label: str
    format: str
    status: str  # "clean", "repaired", "error"
    calls: list[str] = field(default_factory=list)  # names
    repairs: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    mismatch: str | None = None
    checked: bool = False  # the case had an expectation


# Settings a worker process needs; set by _init in each worker (and in-process).
_settings: dict[str, Any] = {}


def _init(settings: dict[str, Any]) -> None:
    _settings.clear()
    _settings.update(settings)


def run_case(case: Case) -> Outcome:
    tools = case.tools if case.tools is not None else _settings.get("tools")
    formats = list(case.formats) if case.formats is not None else _settings.get("formats")
    result = parse(
        case.raw,
        tools,
        formats=formats,
        grammar_paths=_settings.get("grammar_paths"),
        in_think=case.in_think or _settings.get("in_think", False),
        truncated=case.truncated or _settings.get("truncated", "repair"),
    )
    repairs: list[str] = []
    for call in result.calls:
        repairs += [r for r in call.repairs if r not in repairs]
    status = "error" if result.errors else ("repaired" if repairs else "clean")
    return Outcome(
        id=case.id,
        source=case.source,
        label=case.label,
        format=result.calls[0].format if result.calls else NO_CALL,
        status=status,
        calls=[c.name for c in result.calls],
        repairs=repairs,
        errors=list(result.errors),
        mismatch=mismatch(case.expected, result.calls),
        checked=case.expected is not None,
    )


def run_all(
    cases: list[Case],
    settings: dict[str, Any],
    jobs: int = 1,
    progress: Callable[[int], None] | None = None,
) -> list[Outcome]:
    """Every case's outcome, in the order of `cases`."""
    _init(settings)
    out: list[Outcome] = []
    if jobs <= 1 or len(cases) < 2:
        for case in cases:
            out.append(run_case(case))
            if progress:
                progress(len(out))
        return out
    chunk = max(1, min(64, len(cases) // (jobs * 8)))
    with ProcessPoolExecutor(max_workers=jobs, initializer=_init, initargs=(settings,)) as pool:
        for outcome in pool.map(run_case, cases, chunksize=chunk):
            out.append(outcome)
            if progress:
                progress(len(out))
    return out


COLUMNS = ("cases", "clean", "repaired", "errors", "mismatches")


def summarize(outcomes: Iterable[Outcome], by: str = "format") -> "OrderedDict[str, dict[str, int]]":
    rows: dict[str, dict[str, int]] = {}
    for o in outcomes:
        key = (o.label or "?") if by == "label" else o.format
        row = rows.setdefault(key, dict.fromkeys(COLUMNS, 0) | {"checked": 0})
        row["cases"] += 1
        row[{"clean": "clean", "repaired": "repaired", "error": "errors"}[o.status]] += 1
        row["checked"] += o.checked
        row["mismatches"] += o.mismatch is not None
    ordered = OrderedDict(sorted(rows.items(), key=lambda kv: (kv[0] == NO_CALL, kv[0])))
    total = dict.fromkeys(COLUMNS, 0) | {"checked": 0}
    for row in ordered.values():
        for k in total:
            total[k] += row[k]
    ordered["total"] = total
    return ordered


def table(rows: "OrderedDict[str, dict[str, int]]", title: str = "format") -> list[str]:
    """The summary as aligned text; `mismatches` reads `n/checked`."""
    header = [title, *COLUMNS]
    body = [
        [name, *(str(r[c]) if c != "mismatches" else f"{r[c]}/{r['checked']}" for c in COLUMNS)]
        for name, r in rows.items()
    ]
    widths = [max(len(row[i]) for row in [header, *body]) for i in range(len(header))]

    def fmt(cells: list[str]) -> str:
        return "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths))).rstrip()

    lines = [fmt(header), fmt(["-" * w for w in widths])]
    lines += [fmt(row) for row in body[:-1]]
    lines += [fmt(["-" * w for w in widths]), fmt(body[-1])]
    return lines


class Progress:
    """A one-line progress bar on a terminal: `[#####.....] 120/350 cases`. Silent when
    the stream is not a TTY or the run is short."""

    def __init__(self, total: int, stream: TextIO | None = None, min_total: int = 20) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.total = total
        self.on = total >= min_total and _isatty(self.stream)
        self.last = 0.0

    def __call__(self, done: int) -> None:
        if not self.on:
            return
        now = time.monotonic()
        if done < self.total and now - self.last < 0.1:
            return
        self.last = now
        width = 30
        filled = width * done // max(self.total, 1)
        self.stream.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{self.total} cases")
        self.stream.flush()

    def close(self) -> None:
        if self.on:
            self.stream.write("\r" + " " * 60 + "\r")
            self.stream.flush()


def _isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):
        return False
