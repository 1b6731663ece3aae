"""Logs as `toolgram check` reads them: JSON lines (plain or gzip), JSON arrays, CSV,
Parquet (pyarrow), standard input, folders, `.txt` cases, one record at a time.

Reading is split in two so that `--jobs N` spreads the costly half: `units()` walks the
inputs in the main process and yields `Unit`s (a JSONL line as bytes, a CSV or Parquet
row as a dict, a ready `.txt` Case, or a `Bad` record); `to_case()` turns a unit into a
Case, or a Bad record with its place, in whichever process parses it. Nothing holds
more than one chunk of a file: a log of a million records streams.

A bad record (not JSON, no reply, a known field of the wrong type) is a `Bad`: the run
reports it with its file and line (or row) and goes on. A JSONL file is split on "\\n"
only (U+2028, U+0085 and friends are characters of a record, as json.dumps writes them);
a UTF-8 byte order mark at the start of a file is skipped.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from .cases import _SAFE, Case, _one_line, _txt, case_files

KINDS = ("jsonl", "json", "csv", "parquet", "txt")
SUFFIXES = {
    ".jsonl": "jsonl", ".ndjson": "jsonl", ".jsonlines": "jsonl", ".json": "json",
    ".csv": "csv", ".parquet": "parquet", ".pq": "parquet", ".txt": "txt",
}  # fmt: skip
BOM = "\ufeff"
_MISSING = object()


@dataclass(frozen=True)
class Fields:
    """Where a record keeps its reply, tools and id (dotted paths: `choices.0.message.content`)."""

    raw: str = "raw"
    tools: str | None = None  # None: "tools", else "tools_offered"
    id: str = "id"


@dataclass(frozen=True)
class Bad:
    where: str  # "file.jsonl:7", "file.parquet:row 12"
    message: str


@dataclass(frozen=True)
class Unit:
    """One record as read, before it is decoded: kind "line" (bytes of a JSONL line),
    "record" (a dict; `strings`: its fields are CSV text, JSON inside strings is decoded),
    "case" (a ready Case) or "bad" (value is a Bad)."""

    kind: str
    value: Any
    where: str = ""
    prefix: str = ""  # the case id's first part: the file's stem
    name: str = ""  # the case id's last part when the record has no id: line_7, row_3
    label: str = ""
    strings: bool = False


class InputError(Exception):
    """An input that cannot be read at all (no such file, unknown kind): exit status 2."""


# -- walking the inputs --------------------------------------------------------------


def kind_of(path: Path) -> str | None:
    name = path.name.lower()
    name = name.removesuffix(".gz")
    return SUFFIXES.get(Path(name).suffix)


def check_inputs(paths: list[str], forced: str | None = None) -> None:
    """Fail early (before any parsing) on an input that does not exist or is of no known kind."""
    stdin = 0
    for given in paths:
        if given == "-":
            stdin += 1
            continue
        path = Path(given)
        if path.is_dir():
            continue
        if not path.is_file():
            raise InputError(f"{given}: no such file or folder")
        if forced is None and kind_of(path) is None:
            raise InputError(
                f"{given}: not a kind of log toolgram reads (.jsonl, .jsonl.gz, .json, .csv, .parquet, .txt"
                " or a folder; --input-format names the kind)"
            )
    if stdin > 1:
        raise InputError("'-' (standard input) can be given only once")


def units(paths: list[str], forced: str | None = None) -> Iterator[Unit]:
    """Every record of these inputs, in order, as units (see Unit)."""
    for given in paths:
        if given == "-":
            yield from _stdin_units(forced)
            continue
        path = Path(given)
        if path.is_dir():
            prefix = path.resolve().name
            for file in folder_files(path):
                rel = file.relative_to(path).as_posix()
                yield from _file_units(file, f"{prefix}/{_stem(rel)}", kind_of(file) or "txt")
        else:
            kind = forced or kind_of(path) or "jsonl"
            prefix = f"{path.parent.name}/{_stem(path.name)}" if kind == "txt" and path.parent.name else _stem(path.name)
            yield from _file_units(path, prefix, kind)


def folder_files(folder: Path) -> list[Path]:
    """A folder's .txt cases (as the pytest plugin reads them) and its logs of any kind
    but .json (a .json file in a case folder is a sidecar)."""
    cases = case_files(folder)
    logs = [
        p for p in sorted(folder.rglob("*"))
        if p.is_file() and p not in cases and kind_of(p) not in (None, "txt", "json")
        and not any(part.startswith((".", "_")) for part in p.relative_to(folder).parts)
    ]  # fmt: skip
    return sorted(cases + logs)


def _stem(name: str) -> str:
    """`runs.jsonl.gz` -> `runs`, `a/b.txt` -> `a/b`."""
    from pathlib import PurePosixPath

    if name.lower().endswith(".gz"):
        name = name[:-3]
    path = PurePosixPath(name)
    return path.with_suffix("").as_posix() if path.suffix else name


def _file_units(path: Path, prefix: str, kind: str) -> Iterator[Unit]:
    if kind == "txt":
        try:
            yield Unit("case", _txt(path, prefix))
        except Exception as exc:  # noqa: BLE001 - a CaseError, or a sidecar of the wrong shape
            yield Unit("bad", Bad(str(path), _one_line(exc)))
        return
    if kind == "parquet":
        yield from _parquet_units(str(path), path, prefix)
        return
    try:
        stream: IO[bytes] = open(path, "rb")  # noqa: SIM115 - closed below
    except OSError as exc:
        yield Unit("bad", Bad(str(path), f"cannot read: {exc.strerror or exc}"))
        return
    with stream:
        if path.name.lower().endswith(".gz"):
            stream = gzip.GzipFile(fileobj=stream)  # type: ignore[assignment]
        yield from _stream_units(stream, str(path), prefix, kind)


def _stdin_units(forced: str | None) -> Iterator[Unit]:
    stream: Any = sys.stdin.buffer
    head = stream.peek(64)[:64] if hasattr(stream, "peek") else b""
    if head[:2] == b"\x1f\x8b":
        stream = io.BufferedReader(gzip.GzipFile(fileobj=stream))  # type: ignore[arg-type]
        head = stream.peek(64)[:64]
    kind = forced
    if kind is None:
        if head[:4] == b"PAR1":
            kind = "parquet"
        elif head.lstrip(b"\xef\xbb\xbf \t\r\n")[:1] == b"[":
            kind = "json"
        else:
            kind = "jsonl"
    if kind == "parquet":  # (Parquet needs to seek: read it whole)
        yield from _parquet_units("-", io.BytesIO(stream.read()), "stdin")
    elif kind == "txt":
        raw = stream.read().decode("utf-8", errors="replace")
        yield Unit("case", Case(id="stdin/reply", source="-", raw=raw, label="stdin"))
    else:
        yield from _stream_units(stream, "-", "stdin", kind)


def _stream_units(stream: IO[bytes], name: str, prefix: str, kind: str) -> Iterator[Unit]:
    try:
        if kind == "jsonl":
            yield from _jsonl_units(stream, name, prefix)
        elif kind == "json":
            yield from _json_array_units(stream, name, prefix)
        elif kind == "csv":
            yield from _csv_units(stream, name, prefix)
    except (OSError, EOFError, UnicodeDecodeError) as exc:  # a cut or broken gzip stream, a read error
        yield Unit("bad", Bad(name, f"cannot read the rest of the file: {_one_line(exc)}"))


def _jsonl_units(stream: IO[bytes], name: str, prefix: str) -> Iterator[Unit]:
    # Binary line iteration splits on b"\n" alone, unlike str.splitlines().
    for n, line in enumerate(stream, 1):
        if n == 1 and line.startswith(b"\xef\xbb\xbf"):
            line = line[3:]
        if not line.strip():
            continue
        yield Unit("line", line, f"{name}:{n}", prefix, f"line_{n}", Path(prefix).name)


def _csv_units(stream: IO[bytes], name: str, prefix: str) -> Iterator[Unit]:
    csv.field_size_limit(min(sys.maxsize, 2**31 - 1))  # (replies are longer than csv's 128 KiB default)
    text = io.TextIOWrapper(stream, encoding="utf-8-sig", newline="")
    reader = csv.reader(text)
    try:
        header = next(reader)
    except StopIteration:
        return
    except csv.Error as exc:
        yield Unit("bad", Bad(f"{name}:1", f"not CSV: {exc}"))
        return
    row = 0
    while True:
        start = reader.line_num + 1
        try:
            cells = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            row += 1
            yield Unit("bad", Bad(f"{name}:{start}", f"not CSV: {exc}"))
            continue
        row += 1
        if not any(cells):
            continue
        if len(cells) != len(header):
            yield Unit("bad", Bad(f"{name}:{start}", f"{len(cells)} cells, the header has {len(header)}"))
            continue
        yield Unit("record", dict(zip(header, cells)), f"{name}:{start}", prefix, f"row_{row}", Path(prefix).name, strings=True)


def _json_array_units(stream: IO[bytes], name: str, prefix: str) -> Iterator[Unit]:
    """The items of a JSON array, decoded one at a time from a growing buffer."""
    text = io.TextIOWrapper(stream, encoding="utf-8-sig")
    decoder = json.JSONDecoder()
    buf, pos, line, eof = "", 0, 1, False
    want = 1 << 16

    def more() -> bool:
        nonlocal buf, pos, eof, want
        if eof:
            return False
        chunk = text.read(want)
        if not chunk:
            eof = True
            return False
        buf = buf[pos:] + chunk
        pos = 0
        want = min(want * 2, 1 << 24)  # (a huge item: fewer, larger reads)
        return True

    def skip_ws() -> str:
        nonlocal pos, line
        while True:
            while pos < len(buf) and buf[pos] in " \t\r\n":
                line += buf[pos] == "\n"
                pos += 1
            if pos < len(buf) or not more():
                return buf[pos] if pos < len(buf) else ""

    if skip_ws() != "[":
        yield Unit("bad", Bad(f"{name}:{line}", "not a JSON array of records"))
        return
    pos += 1
    item = 0
    if skip_ws() == "]":
        return
    while True:
        skip_ws()
        start = line
        while True:
            try:
                value, end = decoder.raw_decode(buf, pos)
            except json.JSONDecodeError as exc:
                if more():
                    continue
                yield Unit("bad", Bad(f"{name}:{start}", f"not JSON (the rest of the file is skipped): {_one_line(exc)}"))
                return
            except RecursionError:
                yield Unit("bad", Bad(f"{name}:{start}", "nested too deeply (the rest of the file is skipped)"))
                return
            break
        line += buf.count("\n", pos, end)
        pos = end
        item += 1
        yield Unit("record", value, f"{name}:{start}", prefix, f"item_{item}", Path(prefix).name)
        following = skip_ws()
        if following == ",":
            pos += 1
            continue
        if following == "]":
            return
        if not following:
            yield Unit("bad", Bad(f"{name}:{line}", "the file ends inside the array (no closing ']')"))
            return
        yield Unit("bad", Bad(f"{name}:{line}", "expected ',' or ']' after an item (the rest of the file is skipped)"))
        return


def _parquet_units(name: str, source: Any, prefix: str) -> Iterator[Unit]:
    try:
        import pyarrow.parquet as pq
    except ImportError:
        yield Unit("bad", Bad(name, "reading Parquet needs pyarrow: pip install 'toolgram[parquet]'"))
        return
    row = 0
    try:
        for batch in pq.ParquetFile(source).iter_batches(batch_size=1024):
            for record in batch.to_pylist():
                row += 1
                yield Unit("record", record, f"{name}:row {row}", prefix, f"row_{row}", Path(prefix).name, strings=True)
    except Exception as exc:  # noqa: BLE001 - pyarrow's errors (ArrowInvalid, OSError...) have no common base
        yield Unit("bad", Bad(f"{name}:row {row + 1}" if row else name, f"cannot read Parquet: {_one_line(exc)}"))


# -- a unit becomes a case -------------------------------------------------------------


def to_case(unit: Unit, fields: Fields = Fields()) -> Case | Bad:
    """The Case a unit holds, or why it holds none (a Bad with the unit's place)."""
    if unit.kind == "case":
        return unit.value
    if unit.kind == "bad":
        return unit.value
    value = unit.value
    if unit.kind == "line":
        try:
            value = json.loads(value)
        except UnicodeDecodeError as exc:
            return Bad(unit.where, f"not UTF-8: {_one_line(exc)}")
        except ValueError as exc:
            return Bad(unit.where, f"not JSON: {_one_line(exc)}")
        except RecursionError:
            return Bad(unit.where, "nested too deeply to read")
    try:
        return record_case(value, unit, fields)
    except _BadField as exc:
        return Bad(unit.where, str(exc))


class _BadField(Exception):
    pass


def field(record: Any, path: str) -> Any:
    """record[path], or along a dotted path (`choices.0.message.content`: keys of
    objects, indexes of lists); _MISSING when absent. A key that holds dots is tried whole first."""
    if isinstance(record, dict) and path in record:
        return record[path]
    value = record
    for part in path.split("."):
        if isinstance(value, dict) and part in value:
            value = value[part]
        elif isinstance(value, list) and part.lstrip("-").isdigit() and -len(value) <= int(part) < len(value):
            value = value[int(part)]
        else:
            return _MISSING
    return value


def _type(value: Any) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean", type(None): "null"}.get(
        type(value), "a number" if isinstance(value, (int, float)) else type(value).__name__
    )


def _decoded(value: Any, strings: bool) -> Any:
    """A CSV cell or Parquet string column holding JSON: decoded; empty: absent."""
    if not strings or not isinstance(value, str):
        return value
    text = value.strip()
    if not text:
        return None
    if text[0] in "[{" or text in ("true", "false", "null"):
        try:
            return json.loads(text)
        except (ValueError, RecursionError):
            return value
    return value


def record_case(record: Any, unit: Unit, fields: Fields) -> Case:
    from .._tools.tools import normalize_tools

    if not isinstance(record, dict):
        raise _BadField(f"a record must be a JSON object, not {_type(record)}")
    raw = field(record, fields.raw)
    if raw is _MISSING:
        raise _BadField(f'no "{fields.raw}" field (the reply; --raw-field names another)')
    if not isinstance(raw, str):
        raise _BadField(f'"{fields.raw}" must be a string, not {_type(raw)}')
    strings = unit.strings
    if fields.tools is not None:
        tools_name, tools = fields.tools, field(record, fields.tools)
    else:
        tools_name = "tools" if "tools" in record else "tools_offered"
        tools = record.get(tools_name, _MISSING)
    tools = None if tools is _MISSING else _decoded(tools, strings)
    try:
        normalize_tools(tools)
    except (TypeError, ValueError, RecursionError) as exc:
        raise _BadField(f'"{tools_name}" is not tools ({_one_line(exc)})') from None
    formats = _decoded(record.get("formats"), strings)
    if formats is not None and not (isinstance(formats, list) and all(isinstance(f, str) for f in formats)):
        raise _BadField('"formats" must be a list of format names')
    expected = _decoded(record.get("expected"), strings)
    other = False
    if isinstance(expected, list):
        if not all(isinstance(v, dict) and isinstance(v.get("name"), str) for v in expected):
            raise _BadField('"expected" must be a list of {"name", "arguments"} objects')
    elif expected is not None:
        # Another tool's answer key (BFCL's {"benchmark_possible_answer": …}): not ours to
        # compare, but counted, so that nothing is left out without a word.
        other, expected = True, None
    in_think = _decoded(record.get("in_think", False), strings)
    if in_think is None:
        in_think = False
    if not isinstance(in_think, bool):
        raise _BadField('"in_think" must be true or false')
    truncated = _decoded(record.get("truncated"), strings)
    if truncated is not None and truncated not in ("repair", "error"):
        raise _BadField('"truncated" must be "repair" or "error"')
    rid = field(record, fields.id)
    name = _SAFE.sub("_", str(rid)).strip("_.") if isinstance(rid, (str, int)) and not isinstance(rid, bool) else ""
    label = record.get("format")
    return Case(
        id=f"{unit.prefix}/{name or unit.name}",
        source=unit.where,
        raw=raw,
        tools=tools,
        formats=tuple(formats) if formats is not None else None,
        expected=tuple(expected) if expected is not None else None,
        label=label if isinstance(label, str) else unit.label,
        in_think=in_think,
        truncated=truncated,
        expected_other=other,
    )


def estimate(paths: list[str], forced: str | None = None) -> int | None:
    """How many records these inputs hold, where that is cheap to know (a progress bar's
    total): lines of plain JSONL files, rows of Parquet files, .txt cases; None when an
    input is standard input, compressed, CSV or a JSON array."""
    total = 0
    for given in paths:
        if given == "-":
            return None
        path = Path(given)
        files = folder_files(path) if path.is_dir() else [path]
        for file in files:
            kind = forced if forced and not path.is_dir() else kind_of(file)
            if kind == "txt":
                total += 1
            elif kind == "jsonl" and not file.name.lower().endswith(".gz"):
                try:
                    with open(file, "rb") as f:
                        total += sum(1 for line in f if line.strip())
                except OSError:
                    return None
            elif kind == "parquet":
                try:
                    import pyarrow.parquet as pq

                    total += pq.ParquetFile(str(file)).metadata.num_rows
                except Exception:  # noqa: BLE001 - said when the file is read
                    return None
            else:
                return None
    return total
