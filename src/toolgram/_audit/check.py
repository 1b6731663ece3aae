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
from collections import OrderedDict, deque
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from itertools import islice
from typing import Any, Iterable, Iterator, TextIO

from .cases import Case, mismatch, result_data
from .logs import Bad, Fields, Unit, to_case
from .._grammar.registry import UnknownFormat
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
    data: dict | None = None  # the whole result (cases.result_data): calls with arguments, text, spans…
    expected_other: bool = False  # an `expected` not compared (not a list of calls)


class InternalError(Exception):
    """parse() raised on a record: a bug of ours, reported with the record's place."""


# Settings a worker process needs; set by _init in each worker (and in-process).
_settings: dict[str, Any] = {}


def _init(settings: dict[str, Any]) -> None:
    _settings.clear()
    _settings.update(settings)


def run_case(case: Case) -> Outcome:
    tools = case.tools if case.tools is not None else _settings.get("tools")
    formats = list(case.formats) if case.formats is not None else _settings.get("formats")
    try:
        result = parse(
            case.raw,
            tools,
            formats=formats,
            grammar_paths=_settings.get("grammar_paths"),
            in_think=case.in_think or _settings.get("in_think", False),
            max_chars=_settings.get("max_chars", 32_768),
            truncated=case.truncated or _settings.get("truncated", "repair"),
        )
    except (KeyboardInterrupt, MemoryError):
        raise
    except Exception as exc:  # noqa: BLE001 - said with the record's place (exit status 70)
        raise InternalError(f"{case.source}: {type(exc).__name__}: {exc}") from exc
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
        # (only when asked: sending it back from a worker is a fair share of --jobs' overhead)
        data=dict(result_data(result)) if _settings.get("keep_data", True) else None,
        expected_other=case.expected_other,
    )


def run_unit(unit: Unit) -> Outcome | Bad:
    case = to_case(unit, _settings.get("fields") or Fields())
    if isinstance(case, Bad):
        return case
    try:
        return run_case(case)
    except InternalError as exc:
        # A record's own "formats" naming no format is the record's fault, not ours: a bad
        # record, skipped like a "formats" that is not a list (docs/cli.md, "Bad records").
        # Which names exist is known only with --grammar-path's formats loaded, so it is
        # found here, where parse() looks them up.
        if case.formats is not None and isinstance(exc.__cause__, UnknownFormat):
            return Bad(case.source, f'"formats" names an unknown format: {exc.__cause__}')
        raise


def run_chunk(chunk: list[Unit]) -> list[Outcome | Bad]:
    return [run_unit(u) for u in chunk]


def run_stream(units: Iterable[Unit], settings: dict[str, Any], jobs: int = 1, chunk: int = 64) -> Iterator[Outcome | Bad]:
    """Every unit's outcome (or Bad record), in input order, as they come. With jobs > 1,
    chunks of units go to `jobs` processes, a bounded number at a time, so that memory
    stays flat whatever the input's length; the workers decode the records too (JSON
    decoding is a fair share of the work)."""
    _init(settings)
    if jobs <= 1:
        for unit in units:
            yield run_unit(unit)
        return
    it = iter(units)
    # The first chunk is parsed here, before the workers start: where they are forked,
    # they inherit the grammars it compiled rather than each compiling them again.
    for unit in islice(it, chunk):
        yield run_unit(unit)
    window = jobs * 4
    with ProcessPoolExecutor(max_workers=jobs, mp_context=_context(), initializer=_init, initargs=(settings,)) as pool:
        pending: deque = deque()
        try:
            while True:
                batch = list(islice(it, chunk))
                if batch:
                    pending.append(pool.submit(run_chunk, batch))
                if pending and (len(pending) >= window or not batch):
                    yield from pending.popleft().result()
                elif not batch:
                    return
        finally:
            for future in pending:
                future.cancel()


def _context() -> Any:
    """fork where the platform has it (Linux: workers start warm, see run_stream), else the default."""
    import multiprocessing

    if sys.platform.startswith("linux") and "fork" in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("fork")
    return None


def run_all(cases: list[Case], settings: dict[str, Any], jobs: int = 1) -> list[Outcome]:
    """Every case's outcome, in the order of `cases`."""
    return [o for o in run_stream((Unit("case", c) for c in cases), settings, jobs) if isinstance(o, Outcome)]


COLUMNS = ("cases", "clean", "repaired", "errors", "mismatches")


class Tally:
    """The summary's counts, one outcome at a time (nothing else is kept)."""

    def __init__(self, by: str = "format") -> None:
        self.by = by
        self._rows: dict[str, dict[str, int]] = {}

    def add(self, o: Outcome) -> None:
        key = (o.label or "?") if self.by == "label" else o.format
        row = self._rows.setdefault(key, dict.fromkeys(COLUMNS, 0) | {"checked": 0})
        row["cases"] += 1
        row[{"clean": "clean", "repaired": "repaired", "error": "errors"}[o.status]] += 1
        row["checked"] += o.checked
        row["mismatches"] += o.mismatch is not None

    def rows(self) -> "OrderedDict[str, dict[str, int]]":
        ordered = OrderedDict(sorted(self._rows.items(), key=lambda kv: (kv[0] == NO_CALL, kv[0])))
        total = dict.fromkeys(COLUMNS, 0) | {"checked": 0}
        for row in ordered.values():
            for k in total:
                total[k] += row[k]
        ordered["total"] = total
        return ordered


def summarize(outcomes: Iterable[Outcome], by: str = "format") -> "OrderedDict[str, dict[str, int]]":
    tally = Tally(by)
    for o in outcomes:
        tally.add(o)
    return tally.rows()


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


def progress_bar(total: int | None, stream: TextIO | None = None) -> Any:
    """A progress bar (tqdm: records, records per second, and the time left when the
    total is known) on a terminal; None when the stream is no terminal or tqdm is not
    installed (`pip install 'toolgram[progress]'`)."""
    stream = stream if stream is not None else sys.stderr
    if not _isatty(stream):
        return None
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    # (No monitor thread: the workers are forked, which a thread makes unsafe.)
    tqdm.monitor_interval = 0
    return tqdm(total=total, file=stream, unit=" records", mininterval=0.25, dynamic_ncols=True)


def _isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):
        return False
