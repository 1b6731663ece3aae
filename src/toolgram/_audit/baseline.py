"""Baselines: every record's parse result saved by one build (`toolgram check
--save-baseline FILE`), compared by another (`--baseline FILE`), the differences grouped
by kind.

A baseline file is Parquet when pyarrow is installed (the columns of
toolgram.dataset.RESULT_COLUMNS, plus `id` and `source`; a call's arguments as JSON
text), else JSON lines of `{"id", "source", "text", "reasoning", "errors", "calls"}`
(`.jsonl` / `.jsonl.gz` in the name ask for JSON lines anyway). Reading tells them apart
by their first bytes.

Records are matched by case id, in order: the baseline is read alongside the run, so
memory stays flat when the run reads the records in the baseline's order (the same
inputs); a record out of order waits in memory until its turn.
"""

from __future__ import annotations

import gzip
import json
from collections import OrderedDict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .cases import _calls_text, _dumps

# Kinds of difference, in the order they are shown. A record may show several; "details"
# is only counted when nothing else differs.
KINDS: OrderedDict[str, str] = OrderedDict(
    calls="calls changed (name or arguments)",
    added_lost="calls added or lost",
    text="text changed",
    errors="errors changed",
    details="spans or repairs only",
    new="new records (not in the baseline)",
    missing="records lost (in the baseline only)",
)
# What each --compare choice makes fail the run.
CHOICES = {
    "calls": ("calls", "added_lost"),
    "text": ("text",),
    "errors": ("errors",),
    "all": tuple(KINDS),
}
DEFAULT_COMPARE = ("calls", "text")


class BaselineError(Exception):
    """A baseline that cannot be written or read (exit status 2)."""


def failing_kinds(choices: list[str] | tuple[str, ...]) -> set[str]:
    kinds: set[str] = set()
    for choice in choices:
        if choice not in CHOICES:
            raise BaselineError(f"--compare {choice!r}: choose among {', '.join(CHOICES)}")
        kinds.update(CHOICES[choice])
    return kinds


def record(case_id: str, source: str, data: dict) -> dict:
    """A baseline record: the case's id and place, and its result (cases.result_data)."""
    return {"id": case_id, "source": source, **data}


# -- writing ---------------------------------------------------------------------------------


def _wants_jsonl(path: Path) -> bool:
    name = path.name.lower()
    return name.endswith((".jsonl", ".jsonl.gz", ".ndjson", ".json"))


class Writer:
    """Writes baseline records as they come (Parquet row groups of 1024, or JSON lines)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.rows: list[dict] = []
        self._parquet = None
        self._file: Any = None
        try:
            if not _wants_jsonl(self.path) and _has_pyarrow():
                self.kind = "parquet"
            elif self.path.suffix.lower() in (".parquet", ".pq"):
                raise BaselineError(f"{path}: writing Parquet needs pyarrow: pip install 'toolgram[parquet]' (or name a .jsonl file)")
            else:
                self.kind = "jsonl"
                raw = open(self.path, "wb")  # noqa: SIM115 - closed in close()
                self._file = gzip.GzipFile(fileobj=raw, mode="wb") if self.path.name.lower().endswith(".gz") else raw
                self._raw = raw
        except OSError as exc:
            raise BaselineError(f"cannot write {path}: {exc.strerror or exc}") from None

    def write(self, rec: dict) -> None:
        if self.kind == "jsonl":
            self._file.write(json.dumps(rec).encode("ascii") + b"\n")  # (ASCII: lone surrogates survive)
            return
        self.rows.append(rec)
        if len(self.rows) >= 1024:
            self._flush()

    def _flush(self) -> None:
        if not self.rows:
            return
        import pyarrow.parquet as pq

        from ..dataset import baseline_table

        table = baseline_table(self.rows)
        self.rows = []
        try:
            if self._parquet is None:
                self._parquet = pq.ParquetWriter(str(self.path), table.schema)
            self._parquet.write_table(table)
        except OSError as exc:
            raise BaselineError(f"cannot write {self.path}: {exc}") from None

    def close(self) -> None:
        if self.kind == "jsonl":
            self._file.close()
            if self._file is not self._raw:
                self._raw.close()
            return
        if self._parquet is None and not self.rows:  # no record at all: an empty file still
            import pyarrow.parquet as pq

            from ..dataset import baseline_table

            pq.write_table(baseline_table([]), str(self.path))
            return
        self._flush()
        self._parquet.close()


def _has_pyarrow() -> bool:
    try:
        import pyarrow.parquet  # noqa: F401
    except ImportError:
        return False
    return True


# -- reading ---------------------------------------------------------------------------------


def read(path: str | Path) -> Iterator[dict]:
    """The records of a baseline file, in order (the shape `record()` writes)."""
    path = Path(path)
    try:
        with open(path, "rb") as f:
            head = f.read(4)
    except OSError as exc:
        raise BaselineError(f"cannot read {path}: {exc.strerror or exc}") from None
    if head == b"PAR1":
        return _read_parquet(path)
    return _read_jsonl(path, gz=head[:2] == b"\x1f\x8b")


def _read_parquet(path: Path) -> Iterator[dict]:
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise BaselineError(f"{path}: reading a Parquet baseline needs pyarrow: pip install 'toolgram[parquet]'") from None
    from ..dataset import rows_of

    try:
        for batch in pq.ParquetFile(str(path)).iter_batches(batch_size=1024):
            yield from rows_of(batch)
    except (OSError, ValueError, KeyError) as exc:
        raise BaselineError(f"{path}: not a toolgram baseline ({exc})") from None


def _read_jsonl(path: Path, gz: bool) -> Iterator[dict]:
    opener: Any = gzip.open if gz else open
    try:
        with opener(path, "rb") as f:
            for n, line in enumerate(f, 1):
                if not line.strip():
                    continue
                rec = json.loads(line)
                if not isinstance(rec, dict) or not {"id", "text", "calls", "errors"} <= rec.keys():
                    raise BaselineError(f"{path}:{n}: not a toolgram baseline record")
                rec.setdefault("reasoning", "")
                yield rec
    except (OSError, EOFError, ValueError) as exc:
        raise BaselineError(f"{path}: not a toolgram baseline ({exc})") from None


class Matcher:
    """Baseline records by case id, read alongside the run (see the module's docstring)."""

    def __init__(self, records: Iterator[dict]) -> None:
        self._it = iter(records)
        self._waiting: dict[str, dict] = {}
        self.count = 0

    def take(self, case_id: str) -> dict | None:
        if case_id in self._waiting:
            return self._waiting.pop(case_id)
        for rec in self._it:
            self.count += 1
            if rec["id"] == case_id:
                return rec
            self._waiting.setdefault(rec["id"], rec)
        return None

    def rest(self) -> Iterator[dict]:
        """The baseline records no run record took (lost records)."""
        yield from self._waiting.values()
        self._waiting = {}
        for rec in self._it:
            self.count += 1
            yield rec


# -- comparing -----------------------------------------------------------------------------


def _same(a: Any, b: Any) -> bool:
    # (== first; JSON text second, for what a round trip changes: NaN, int-valued floats' keys…)
    return a == b or json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def _clean(text: str) -> str:
    """A string as Parquet stores it: lone surrogates (from "\\ud800" in a JSON reply) as U+FFFD."""
    return text.encode("utf-8", "replace").decode("utf-8") if not text.isascii() else text


def _same_text(old: str, new: str) -> bool:
    return old == new or old == _clean(new)


def differences(old: dict, new: dict) -> OrderedDict[str, str]:
    """Each kind of difference between two results (baseline record, this run's), with a
    one-line description of the first such difference."""
    out: OrderedDict[str, str] = OrderedDict()
    oc = [(c["name"], c["arguments"]) for c in old["calls"]]
    nc = [(c["name"], c["arguments"]) for c in new["calls"]]
    if len(oc) != len(nc):
        out["added_lost"] = f"{len(oc)} call(s) -> {len(nc)}: {_calls_text(oc)} -> {_calls_text(nc)}"
    else:
        for i, ((on, oa), (nn, na)) in enumerate(zip(oc, nc), 1):
            if on != nn or not _same(oa, na):
                out["calls"] = f"call {i}: {on}({_dumps(oa)}) -> {nn}({_dumps(na)})"
                break
    for part in ("text", "reasoning"):
        if not _same_text(old.get(part, ""), new.get(part, "")):
            out["text"] = f"{part}: {_text_change(old.get(part, ''), new.get(part, ''))}"
            break
    if len(old["errors"]) != len(new["errors"]) or not all(map(_same_text, old["errors"], new["errors"])):
        first_old = old["errors"][0] if old["errors"] else "no error"
        first_new = new["errors"][0] if new["errors"] else "no error"
        if first_old == first_new:
            first_old, first_new = f"{len(old['errors'])} error(s)", f"{len(new['errors'])}"
        out["errors"] = f"{_cut(first_old)} -> {_cut(first_new)}"
    if not out:
        for i, (a, b) in enumerate(zip(old["calls"], new["calls"]), 1):
            what = [k for k in ("span", "repairs", "format", "kind", "id") if list_or(a.get(k)) != list_or(b.get(k))]
            if what:
                out["details"] = f"call {i} ({b['name']}): " + "; ".join(f"{k} {_dumps(a.get(k))} -> {_dumps(b.get(k))}" for k in what)
                break
    return out


def list_or(value: Any) -> Any:
    return list(value) if isinstance(value, (list, tuple)) else value


def _cut(text: str, width: int = 100) -> str:
    text = text.replace("\n", "\\n")
    return text if len(text) <= width else text[: width - 1] + "…"


def _text_change(old: str, new: str) -> str:
    i = 0
    while i < min(len(old), len(new)) and old[i] == new[i]:
        i += 1
    lead = "…" if i > 20 else ""
    start = max(0, i - 20)
    return f"at {i}: {lead}{_cut(old[start : i + 40], 60)!r} -> {lead}{_cut(new[start : i + 40], 60)!r}"
