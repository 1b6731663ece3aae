"""The built-in formats as Markdown tables, from the grammar files' headers: the full
table of docs/formats.md (formats_table) and the README's short one (short_table).
toolgram._audit.catalog writes them into those files and checks they are current."""

from __future__ import annotations

import re
from collections.abc import Callable

from .registry import Format, Registry


def builtin_formats() -> list[Format]:
    """The packaged formats (no user grammars), in the order formats=None tries them."""
    return Registry().select(None)


def _code(text: str) -> str:
    """`text` as a Markdown code span (markers hold `<`, backticks and `|`)."""
    runs = {len(m) for m in re.findall(r"`+", text)}
    n = next(i for i in range(1, len(runs) + 2) if i not in runs)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return "`" * n + pad + text + pad + "`" * n


def _cell(text: str) -> str:
    # In a table even a code span needs its "|" escaped; HTML-looking text is escaped too.
    return text.replace("|", "\\|").replace("\n", " ")


def _plain(text: str) -> str:
    return _cell(text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;"))


def _constrainable(fmt: Format) -> str:
    # A format with a canonical form can be rendered (render_call) and constrained (constrain).
    return "yes" if "canonical" in fmt.canonical else ""


def _declared(fmt: Format) -> str:
    if fmt.stream_param is not None or fmt.stream_attr:
        return "per parameter"
    return "yes" if fmt.stream_json or fmt.stream_python or fmt.stream_pycall or fmt.stream_loose else ""


# Where a stream completes a call: the values of the tables' "call done at" column.
AT_END = "its end"
AT_NEXT_TEXT = "the text after it"
AT_REPLY_END = "the reply's end"


def _done_by_header(fmt: Format) -> str:
    """Where a stream completes a call, as far as the header tells (toolgram/_catalog.py's
    call_done_at measures the formats that have a canonical form): what `done_at:` says,
    else at the end of the reply for a region that is the whole reply (`anchor: whole`), at
    the call's end where the format declares end markers (`end:`), else at the text after it."""
    if fmt.done_at:
        return {"end": AT_END, "next": AT_NEXT_TEXT, "reply": AT_REPLY_END}[fmt.done_at]
    if fmt.anchor == "whole":
        return AT_REPLY_END
    return AT_END if fmt.ends else AT_NEXT_TEXT


def formats_table(
    formats: list[Format] | None = None, streams: Callable[[Format], str] = _declared, done: Callable[[Format], str] = _done_by_header
) -> str:
    """A Markdown table of the formats: name, title, models, markers (one row each,
    in the order auto-detection tries them), whether `constrain` takes it, whether its
    arguments stream as written (`streams(fmt)`: _stream/catalog.py's, which knows the
    JSON ones too; this layer knows only what a header declares) and where a stream
    completes a call (`done(fmt)`: likewise), ending with a newline."""
    rows = ["| format | what | models | markers | constrain | streams arguments | call done at |", "|---|---|---|---|---|---|---|"]
    for fmt in builtin_formats() if formats is None else formats:
        markers = _cell(_code(fmt.markers)) if fmt.markers else ""
        rows.append(
            f"| `{fmt.name}` | {_plain(fmt.title)} | {_plain(fmt.models)} | {markers} | {_constrainable(fmt)} | {streams(fmt)} | {_plain(done(fmt))} |"
        )
    return "\n".join(rows) + "\n"


def short_table(
    formats: list[Format] | None = None, streams: Callable[[Format], str] = _declared, done: Callable[[Format], str] = _done_by_header
) -> str:
    """The README's table: name and models of each format, in the order of formats_table()."""
    rows = ["| format | models | constrain | streams arguments | call done at |", "|---|---|---|---|---|"]
    for fmt in builtin_formats() if formats is None else formats:
        rows.append(f"| `{fmt.name}` | {_plain(fmt.models)} | {_constrainable(fmt)} | {streams(fmt)} | {_plain(done(fmt))} |")
    return "\n".join(rows) + "\n"
