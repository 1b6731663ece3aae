"""A format's `.lark` file: its header of `// key: value` lines, read and checked.

    // format: hermes
    // title: Hermes / Qwen tool-call tags
    // models: Hermes 2 Pro, Qwen2.5, Qwen3
    // markers: <tool_call> … </tool_call>
    // start: <tool_call>          (repeatable: a literal that opens a call region)
    // end: </tool_call>           (repeatable: a literal that closes it)
    // anchor: reply | whole       (no start marker: the region must open the reply,
    //                              or be the whole reply)
    // anchor: line                (the start literal counts only first on a line; after
    //                              the reply's start only when tools are given)
    // line_start: {               (with anchor: reply: with tools given, this literal first
    //                              on a line after prose opens a region too)
    // quiet: yes                  (a region that is not a call stays prose silently)
    // order: 20                   (position among formats when formats=None)
    // args_key: parameters        (the native key of the arguments in JSON call objects)
    // code_tool: code_interpreter  (the name of a call that is only raw `code`)
    // framing: newline            (the template writes one newline after a raw value's
    //                              open tag and one before its close tag: dropped)
    // repeated: list              (a name written twice among an element's children
    //                              collects into a list; default: an error, as in JSON)
    // offered_only: yes           (a marker-less shape: a call only when it names an offered tool)
    // offered_only: always        (and never a call when no tools are given: code-like shapes)
    // conflicts: RULE TERMINAL… — why   (repeatable: LALR shift/reduce conflicts that are
    //                              meant, resolved as shift; see grammars/README.md)
    // parser: earley              (a user grammar LALR cannot express: Lark's Earley parser,
    //                              one parse per region delimited by markers; needs `end`)
    // reasoning: [THINK] … [/THINK]  (repeatable: a reasoning block's opener and closers,
    //                              `|` between closers; read by the scanner, as <think>)
    // end_of_turn: <|im_end|>   (repeatable: a token that ends the model's turn; written at
    //                              the very end of a reply, it is markup, not text)
    // nest: <function= … </function>  (repeatable: a pair of the format's tags that, written
    //                              inside a raw value and balanced there, is the value's text)
    // stream_call: <function={name}> … </function>   (a call's tags, and its parameters':
    // stream_param: <parameter={key}> … </parameter>  streamed value by value as written;
    //                              see grammars/README.md, "Streaming parameters")
    // stream_attr: <function name="{name}">  (a call whose parameters hold their value in an
    //                              attribute, BFCL's <param name= value= type=/>: streamed so)
    // also: pythonic — why        (repeatable: another format that reads a shape the same
    //                              models write; formats=[this] tries it too, not what
    //                              that format's own also: lines name)
    // canonical: <tool_call>\n{"name": {name:json}, …}\n</tool_call>   (the form the
    //                              format's chat template writes: what render_call writes
    //                              and constrain allows; canonical_call, canonical_param,
    //                              canonical_sep: its parts. See grammars/README.md)
    // payload: value args prose   (repeatable: the rules whose text is a value, the arguments
    //                              or prose, never markup: inside a call that cannot be
    //                              read, every other token the grammar read is markup)
    // done_at: end                (where a stream completes a call: `end`, `next` or `reply`;
    //                              for a format with no canonical form, where `end:` and
    //                              `anchor:` do not tell it: the formats tables' column)

The body is a Lark grammar (LALR unless `parser: earley`) for one call region (compiled by compile.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from collections.abc import Callable
from typing import TYPE_CHECKING

import regex

from .words import lazy

if TYPE_CHECKING:
    from .compile import Compiled

_PACKAGE = Path(__file__).resolve().parent.parent  # toolgram/

# How a format compiles on first use: compile.py sets it when imported (this
# package's __init__ imports it), as compiling needs Format, not the reverse.
compile_format: Callable[[Format], Compiled] | None = None


def grammar_dirs() -> list[Path]:
    """The packaged grammars (wheel) first, then the source tree's (editable install)."""
    dirs = []
    for candidate in (_PACKAGE / "grammars", _PACKAGE.parent.parent / "grammars"):
        if candidate.is_dir():
            dirs.append(candidate)
            break
    return dirs


def builtin_shared() -> list[Path]:
    return [d / "shared" for d in grammar_dirs() if (d / "shared").is_dir()]


class GrammarError(Exception):
    """A grammar file that cannot be used; says which file and why.

    The message's first line reads `path:line: what is wrong` when the line is known
    (`path: …` otherwise); Lark's own explanation follows on indented lines (the
    caret under the place, the rules of a collision, what the regex engine said).
    `path`, `line` and `column` are also attributes (None when unknown).
    """

    def __init__(self, message: str, path: Path | str | None = None, line: int | None = None, column: int | None = None) -> None:
        super().__init__(message)
        self.path = path
        self.line = line
        self.column = column


class GrammarWarning(UserWarning):
    """A grammar that loads but probably does not do what its author meant: an unknown
    header key, a header marker the grammar never reads, a user format replacing a built-in one, a payload
    terminal that streams in quadratic time, a declared conflict that no longer occurs."""


@dataclass(frozen=True)
class DeclaredConflict:
    rule: str
    terminals: tuple[str, ...]  # terminal names or quoted literals, as written
    reason: str
    line: int


@dataclass(eq=False)  # identity equality: formats are hashed as cache keys
class Format:
    name: str
    path: Path
    source: str
    title: str = ""
    models: str = ""
    markers: str = ""
    starts: tuple[str, ...] = ()
    ends: tuple[str, ...] = ()
    anchor: str = ""  # "", "reply", "whole" or "line"
    # The header's `line_start:` literals (a reply-anchored format's first character, `{`):
    # with tools given, each also opens a region first on a line after prose, as an
    # `anchor: line` format's start literal does (_scan/markers.py).
    line_starts: tuple[str, ...] = ()
    quiet: bool = False
    order: int = 100
    args_key: str = "arguments"
    code_tool: str = ""  # the name of a call that is only raw `code`
    offered_only: bool = False
    needs_tools: bool = False  # offered_only: always
    conflicts: tuple[str, ...] = ()  # the header's `conflicts:` values, unparsed
    parser: str = "lalr"  # "lalr" or "earley" (see grammars/README.md, "Earley")
    # The reasoning blocks: (opener, closers), from `// reasoning: OPEN … CLOSE | CLOSE2`.
    # An empty opener: a closer only, for a block the prompt opens (in_think).
    reasoning: tuple[tuple[str, tuple[str, ...]], ...] = ()
    # The header's `also:` formats: other shapes the same models write, read by other
    # grammars, which formats=[this] tries too (Registry.select).
    also: tuple[str, ...] = ()
    # What of a raw value's whitespace the chat template wrote, not the model: "newline"
    # (one after the open tag, one before the close tag, as Qwen3-Coder's) or "none".
    framing: str = "none"
    # What a name written twice among an element's children is: "error" (where the
    # values differ, as a JSON key given twice) or "list" (the values collect into one:
    # MiniMax M3's elements). See _build/coerce.py.
    repeated: str = "error"
    # The header's `nest:` pairs (opener, closer): the format's tags that, written inside a
    # raw value and balanced there, are the value's text (docs/formats.md, "Markers inside
    # values"; _lalr/nest.py).
    nests: tuple[tuple[str, str], ...] = ()
    # The header's `stream_call:` and `stream_param:` (opener template, closer): the tags of a
    # call and of its parameters, as StreamParser(announce="name") reads them to stream the
    # values as they are written (_grammar/tags.py); None when not declared.
    stream_call: tuple[str, str] | None = None
    stream_param: tuple[str, str] | None = None
    # The header's `stream_sep:`: what a block writes between a call's close and the next
    # call's opener (Step-3's `<｜tool_call_end｜> <｜tool_sep｜>`: a template, a space any
    # blanks), for announcing every call of the block; "" when they follow after blanks only.
    stream_sep: str = ""
    # The header's `stream_stop:`: text that ends a parameter's value wherever it is written,
    # whatever follows it (cofl's `</cofl:`, where its VALUE terminal stops: the value's close,
    # cut, or no call at all); the streaming of the value stops there (_grammar/tags.py).
    stream_stop: tuple[str, ...] = ()
    # The header's `stream_json:`: the opener of a call whose arguments are a JSON object
    # that follows it (Kimi K2's `<|tool_call_begin|>{call} functions.{name}:{index}
    # <|tool_call_argument_begin|>`, Mistral's `[TOOL_CALLS]{name}[ARGS]`), for announcing
    # its calls by their name (_grammar/tags.py, JsonTags); "" when not declared.
    stream_json: str = ""
    # The header's `stream_json_list:`: what comes after the region's start markers before a
    # JSON list of call objects (`[` of Mistral's `[TOOL_CALLS] [{"name": …, "arguments": {…},
    # "id": …}, …]`), for announcing each call once its id is certain (_grammar/tags.py,
    # JsonTags.list); "" when not declared.
    stream_json_list: str = ""
    # The header's `stream_python:`: what comes before a list's first Python-style call
    # (`[` of `[get_weather(city="Paris"), …]`), for announcing its calls by their name
    # (_grammar/tags.py, PyTags); "" when not declared.
    stream_python: str = ""
    # The header's `stream_loose:`: the opener of a call whose arguments are Gemma's loose
    # object after it (`call:{name}` of `call:get_weather{city:<|"|>Paris<|"|>}`), for
    # announcing it by its name and streaming its arguments (_grammar/tags.py, LooseTags;
    # _stream/looseecho.py); "" when not declared.
    stream_loose: str = ""
    # The header's `stream_pycall:`: the opener of a Python-style call before its `(`, where
    # the call is no item of a list (Llama 3.1's `{name}.call` after <|python_tag|>, a bare
    # call's `{name}`): announced and streamed as a list's (PyTags, PyEcho). Kept apart from
    # `stream_python`, which the scanner also reads as "this format reads lists of calls".
    stream_pycall: str = ""
    # The header's `stream_attr:`: the opener of a call whose parameters are elements with
    # their value in an attribute (BFCL's `<function name="{name}">`, then `<param name="KEY"
    # value="VALUE" type="TYPE"/>`), for announcing it by its name and streaming its values
    # (_grammar/tags.py, AttrTags; _stream/attrecho.py); "" when not declared.
    stream_attr: str = ""
    # The header's `end_of_turn:` tokens: what the model's template writes to end its turn
    # (`<|im_end|>`, `<|eot_id|>`); one left at the very end of a reply is dropped from the
    # text (the scanner's, as a reasoning block's markers are: _scan/markers.py).
    end_of_turn: tuple[str, ...] = ()
    # The canonical form (`// canonical…:` keys, escapes decoded): key -> template.
    canonical: dict[str, str] = field(default_factory=dict)
    # The header's `done_at:` ("end", "next", "reply" or ""): where a stream completes a
    # call, for the formats tables (toolgram/_catalog.call_done_at); "": from the other keys.
    done_at: str = ""
    # The header's `payload:` rules (names, as the vocabulary reads them: `value`, `args`,
    # `prose`, …): their text is a call's payload or prose. Inside a told failure, the
    # tokens the grammar read under no such rule are markup, not prose (_scan/mention.py,
    # failure_markup); none declared: the failure's text is prose whole.
    payload: tuple[str, ...] = ()
    _compiled: Compiled | None = field(default=None, repr=False)

    @property
    def compiled(self) -> Compiled:
        if self._compiled is None:
            self._compiled = compile_format(self)
        return self._compiled

    @property
    def warnings(self) -> tuple[str, ...]:
        """What compiling found questionable (compiles the grammar)."""
        return self.compiled.warnings


def read_header(text: str) -> dict[str, list[str]]:
    header: dict[str, list[str]] = {}
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped:
            continue
        if not stripped.startswith("//"):
            break
        key, sep, value = stripped[2:].strip().partition(":")
        if sep and key.strip().isidentifier():
            header.setdefault(key.strip(), []).append(value.strip())
    return header


def header_line(source: str, key: str, nth: int = 0) -> int:
    """The line of the header's nth `// key:` line (1 when there is none)."""
    seen = 0
    for i, line in enumerate(source.splitlines(), 1):
        if line.strip().startswith("//") and line.strip()[2:].strip().startswith(key + ":"):
            if seen == nth:
                return i
            seen += 1
    return 1


def load_format(path: Path) -> Format:
    text = path.read_text(encoding="utf-8")
    header = read_header(text)
    name = (header.get("format") or [path.stem])[0]
    try:
        order = int((header.get("order") or ["100"])[0])
    except ValueError:
        raise GrammarError(f"{path}: 'order' must be a whole number") from None
    return Format(
        name=name,
        path=path,
        source=text,
        title=(header.get("title") or [""])[0],
        models=(header.get("models") or [""])[0],
        markers=(header.get("markers") or [""])[0],
        starts=tuple(header.get("start", ())),
        ends=tuple(header.get("end", ())),
        anchor=(header.get("anchor") or [""])[0],
        line_starts=tuple(header.get("line_start", ())),
        quiet=(header.get("quiet") or ["no"])[0].lower() in ("yes", "true"),
        order=order,
        args_key=(header.get("args_key") or ["arguments"])[0],
        code_tool=(header.get("code_tool") or [""])[0],
        offered_only=(header.get("offered_only") or ["no"])[0].lower() in ("yes", "true", "always"),
        needs_tools=(header.get("offered_only") or ["no"])[0].lower() == "always",
        conflicts=tuple(header.get("conflicts", ())),
        parser=(header.get("parser") or ["lalr"])[0].lower(),
        reasoning=tuple(filter(None, map(reasoning_markers, header.get("reasoning", ())))),
        # (`// also: NAME — why`: the name is the first word)
        also=tuple(v.split()[0] for v in header.get("also", ()) if v.split()),
        framing=(header.get("framing") or ["none"])[0].lower(),
        repeated=(header.get("repeated") or ["error"])[0].lower(),
        nests=tuple(filter(None, map(nest_tags, header.get("nest", ())))),
        stream_call=nest_tags((header.get("stream_call") or [""])[0]),
        stream_param=nest_tags((header.get("stream_param") or [""])[0]),
        stream_sep=(header.get("stream_sep") or [""])[0],
        stream_stop=tuple(filter(None, (v.strip() for v in header.get("stream_stop", ())))),
        stream_json=(header.get("stream_json") or [""])[0],
        stream_json_list=(header.get("stream_json_list") or [""])[0],
        stream_python=(header.get("stream_python") or [""])[0],
        stream_loose=(header.get("stream_loose") or [""])[0],
        stream_pycall=(header.get("stream_pycall") or [""])[0],
        stream_attr=(header.get("stream_attr") or [""])[0],
        end_of_turn=tuple(filter(None, header.get("end_of_turn", ()))),
        canonical={k: unescape(v[0]) for k, v in header.items() if k in CANONICAL_KEYS},
        done_at=(header.get("done_at") or [""])[0].lower(),
        payload=tuple(w for v in header.get("payload", ()) for w in v.split()),
    )


#: The keys of a canonical form (grammars/README.md, "The canonical form").
CANONICAL_KEYS = ("canonical", "canonical_call", "canonical_param", "canonical_sep")
_ESCAPE = lazy(regex.compile, r"\\([nts\\])")


def unescape(value: str) -> str:
    """A canonical template's text: `\\n` a line break, `\\t` a tab, `\\s` a space (a
    header value is stripped, so an edge space is written so), `\\\\` a backslash."""
    return _ESCAPE.sub(lambda m: {"n": "\n", "t": "\t", "s": " ", "\\": "\\"}[m.group(1)], value)


# `OPEN … CLOSE | CLOSE2`: the ellipsis (or three dots) and the bars stand apart by spaces,
# as markers hold `|` (`<|end|>`).
_ELLIPSIS = lazy(regex.compile, r"\s+(?:…|\.\.\.)\s+|^(?:…|\.\.\.)\s+")
_BAR = lazy(regex.compile, r"\s+\|\s+")


def reasoning_markers(value: str) -> tuple[str, tuple[str, ...]] | None:
    """A `reasoning:` value read: (opener, closers); None when it has no `…` or no closer
    (validate_header says so, for a user's grammar)."""
    parts = _ELLIPSIS.split(value.strip(), maxsplit=1)
    if len(parts) != 2:
        return None
    closers = tuple(c for c in (c.strip() for c in _BAR.split(parts[1].strip())) if c)
    if not closers:
        return None
    return parts[0].strip(), closers


def nest_tags(value: str) -> tuple[str, str] | None:
    """A `nest:` value read: (opener, closer); None unless it is one opener, `…` and one
    closer (validate_header says so, for a user's grammar)."""
    read = reasoning_markers(value)
    if read is None or not read[0] or len(read[1]) != 1:
        return None
    return read[0], read[1][0]


_NAME = lazy(regex.compile, r"[A-Za-z_][A-Za-z0-9_.-]*\Z")
_REASON = lazy(regex.compile, r"\s+(?:—|--)\s*")
_WORD = lazy(regex.compile, r'"(?:[^"\\]|\\.)*"|\S+')


def declared_conflicts(fmt: Format) -> tuple[DeclaredConflict, ...]:
    """The header's `// conflicts: RULE TERMINAL… — why` lines; a line without a rule,
    a terminal or a reason is a GrammarError."""
    out = []
    for nth, value in enumerate(fmt.conflicts):
        line = header_line(fmt.source, "conflicts", nth)
        parts = _REASON.split(value, maxsplit=1)
        words = _WORD.findall(parts[0])
        if len(parts) < 2 or not parts[1].strip() or len(words) < 2:
            raise GrammarError(
                f"{fmt.path}:{line}: write '// conflicts: RULE TERMINAL… — why shift is right' "
                f"(a rule, one or more terminals, and the reason after a dash), not {value!r}",
                fmt.path,
                line,
            )
        out.append(DeclaredConflict(words[0], tuple(words[1:]), parts[1].strip(), line))
    return tuple(out)


#: The header's keys (grammars/README.md's table); a line of the header with another
#: `word:` is warned about (a misspelt key would be left out silently).
KEYS = (
    "format", "title", "models", "markers", "start", "end", "anchor", "line_start", "quiet", "offered_only", "args_key",
    "code_tool", "order", "conflicts", "parser", "reasoning", "also", "framing", "nest", "end_of_turn",
    "repeated", "stream_call", "stream_param", "stream_sep", "stream_stop", "stream_json", "stream_json_list", "stream_python", "stream_loose", "stream_pycall", "stream_attr", "canonical", "canonical_call", "canonical_param", "canonical_sep", "done_at",
    "payload",
)  # fmt: skip
# Keys whose value is one of a few words (the first named is the one to write).
_CHOICES = {
    "quiet": ("yes", "no", "true", "false"),
    "offered_only": ("yes", "no", "always", "true", "false"),
    "framing": ("none", "newline"),
    "repeated": ("error", "list"),
    "done_at": ("end", "next", "reply"),
}


def header_warnings(fmt: Format) -> list[str]:
    """A header line whose key is none of KEYS (`// titel: x`): its value is not used."""
    import difflib  # (warnings only: not at import)

    out = []
    for key in read_header(fmt.source):
        if key not in KEYS:
            close = difflib.get_close_matches(key, KEYS, n=1, cutoff=0.7)
            hint = f" (did you mean '{close[0]}'?)" if close else ""
            out.append(
                f"{fmt.path}:{header_line(fmt.source, key)}: unknown header key {key!r}{hint}, not used; "
                f"the keys are {', '.join(KEYS)}"
            )
    return out


def validate_header(fmt: Format) -> None:
    """What a user's header must get right (the built-in ones are checked by tests)."""
    path = fmt.path
    header = read_header(fmt.source)
    for key, words in _CHOICES.items():
        for nth, value in enumerate(header.get(key, ())):
            if value.lower() not in words:
                # (Read as "no" before: `quiet: maybe` made a loud format, silently.)
                line = header_line(fmt.source, key, nth)
                allowed = [w for w in words if w not in ("true", "false")]
                raise GrammarError(
                    f"{path}:{line}: {key} must be {', '.join(repr(w) for w in allowed[:-1])} or {allowed[-1]!r}, not {value!r}",
                    path,
                    line,
                )
    for key in ("start", "end", "end_of_turn", "line_start"):
        for nth, value in enumerate(header.get(key, ())):
            if not value:
                line = header_line(fmt.source, key, nth)
                raise GrammarError(f"{path}:{line}: an empty {key} marker (write the literal after '{key}:')", path, line)
    for nth, value in enumerate(header.get("reasoning", ())):
        if reasoning_markers(value) is None:
            line = header_line(fmt.source, "reasoning", nth)
            raise GrammarError(
                f"{path}:{line}: write '// reasoning: OPENER … CLOSER' (closers apart by ' | '; "
                f"no opener for a block only the prompt opens), not {value!r}",
                path,
                line,
            )
    for key in ("nest", "stream_call", "stream_param"):
        for nth, value in enumerate(header.get(key, ())):
            if nest_tags(value) is None:
                line = header_line(fmt.source, key, nth)
                raise GrammarError(
                    f"{path}:{line}: write '// {key}: OPENER … CLOSER' (one tag that opens, one that closes), not {value!r}",
                    path,
                    line,
                )
    if (fmt.stream_call is None) != (fmt.stream_param is None):
        line = header_line(fmt.source, "stream_call" if fmt.stream_call is not None else "stream_param")
        raise GrammarError(f"{path}:{line}: 'stream_call' and 'stream_param' go together", path, line)
    if fmt.stream_stop and fmt.stream_param is None:
        line = header_line(fmt.source, "stream_stop")
        raise GrammarError(f"{path}:{line}: 'stream_stop' goes with 'stream_param'", path, line)
    if fmt.stream_sep and fmt.stream_call is None and not fmt.stream_json:
        line = header_line(fmt.source, "stream_sep")
        raise GrammarError(f"{path}:{line}: 'stream_sep' goes with 'stream_call' or 'stream_json'", path, line)
    if fmt.stream_json_list and not fmt.stream_json:
        line = header_line(fmt.source, "stream_json_list")
        raise GrammarError(f"{path}:{line}: 'stream_json_list' goes with 'stream_json'", path, line)
    if not _NAME.match(fmt.name):
        line = header_line(fmt.source, "format")
        raise GrammarError(f"{path}:{line}: format name {fmt.name!r} is not a plain name", path, line)
    if fmt.anchor not in ("", "reply", "whole", "line"):
        line = header_line(fmt.source, "anchor")
        raise GrammarError(f"{path}:{line}: anchor must be 'reply', 'whole' or 'line', not {fmt.anchor!r}", path, line)
    if fmt.line_starts and fmt.anchor != "reply":
        line = header_line(fmt.source, "line_start")
        raise GrammarError(f"{path}:{line}: 'line_start' goes with '// anchor: reply'", path, line)
    if not fmt.starts and not fmt.anchor:
        # (A misspelt key is the likely cause: `// strat: <a>`.)
        import difflib  # (an error only: not at import)

        misspelt = [k for k in header if k not in KEYS and difflib.get_close_matches(k, ("start", "anchor"), n=1, cutoff=0.7)]
        hint = f" ('{misspelt[0]}:' is no header key)" if misspelt else ""
        raise GrammarError(
            f"{path}:1: the header has no '// start: <marker>' line and no '// anchor:'{hint}, so the format could never match",
            path,
            1,
        )
    if fmt.parser not in ("lalr", "earley"):
        line = header_line(fmt.source, "parser")
        raise GrammarError(f"{path}:{line}: parser must be 'lalr' or 'earley', not {fmt.parser!r}", path, line)
    if fmt.parser == "earley":
        # An Earley region is delimited by markers alone (one parse when it ends): it
        # needs a start marker to open it and an end marker to close it.
        line = header_line(fmt.source, "parser")
        if not fmt.ends:
            raise GrammarError(
                f"{path}:{line}: 'parser: earley' needs '// end: <marker>' (an Earley region is parsed once, "
                "when its end marker, the next call marker or the end of the reply ends it)",
                path,
                line,
            )
        if fmt.anchor or not fmt.starts:
            raise GrammarError(f"{path}:{line}: 'parser: earley' needs '// start: <marker>' and no '// anchor:'", path, line)
        if fmt.conflicts:
            line = header_line(fmt.source, "conflicts")
            raise GrammarError(f"{path}:{line}: 'conflicts:' is for LALR grammars; an Earley grammar has none", path, line)
    declared_conflicts(fmt)


def load_user_format_header(path: Path) -> Format:
    """Read and check a user's grammar file's header (not compiled yet)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise GrammarError(f"{path}: cannot read: {exc}", path) from None
    try:
        fmt = load_format(path)
    except GrammarError:
        line = header_line(text, "order")
        raise GrammarError(f"{path}:{line}: 'order' must be a whole number", path, line) from None
    validate_header(fmt)
    return fmt
