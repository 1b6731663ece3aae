"""parse(): run the scanner over a whole reply and assemble the result."""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from itertools import islice
from typing import Any

from ._build.builder import NESTED, Draft, Prose, Reasoning
from ._build.depth import too_deep_argument, too_deep_message
from ._guard import escapes
from ._result.model import ParseResult, Segment, TextOf, ToolCall, lazy_result, make_call, make_segment
from ._grammar.registry import Format, registry_for
from ._scan.items import strip_leading
from ._scan.scanner import Failure, Piece, Region, Scanner
from ._tools.tools import ToolSet, normalize_tools, unknown_tool
from ._tools.validate import require_jsonschema
from ._tools.validate import validate as check_arguments

DEFAULT_MAX_CHARS = 32_768


def select_formats(formats: Any, grammar_paths: Any = None) -> Sequence[Format]:
    """The formats to try. `grammar_paths`: the user's own grammar files or folders
    (a broken or missing one raises GrammarError: it is explicit configuration)."""
    return registry_for(grammar_paths).select(formats)


TRUNCATED = ("repair", "error")  # (what parse()'s `truncated` may say)


# The repairs that the end of the text (the reply's, or max_chars') makes.
_CUT_REPAIRS = frozenset({"closed_tag", "closed_json", "cut_value", "dropped_partial_argument"})


def cut_off(name: str, by_max_chars: bool = False) -> str:
    """The error that replaces a call the end of the reply cut (repair cut_value),
    with truncated="error"; `by_max_chars`: the reader's limit cut it, not the reply's end."""
    where = "where the reply grew longer than max_chars allows" if by_max_chars else "where the reply ended"
    return f'Arguments for "{name}" were cut off {where}. Write the call again in full.'


def check_truncated(truncated: Any) -> None:
    """Configuration errors raise (the text never does)."""
    if truncated not in TRUNCATED:
        raise ValueError(f'truncated must be "repair" or "error", not {truncated!r}')


def finish_call(
    draft: Draft,
    fmt: str,
    tools: ToolSet | None,
    region: Region,
    validate: bool = False,
    cut: bool = False,
    truncated: str = "repair",
    base: tuple[str, ...] | None = None,
) -> ToolCall | str:
    """A ToolCall, or the error message that replaces it. `cut`: max_chars cut the
    reply where the call's region ends; repaired, it was cut by the limit, and says so.
    `truncated`: see accept. `base`: tuple(region.repairs), made once for a region's calls."""
    if draft.error and (tools is None or draft.name in tools or not draft.name):
        return draft.error
    deep = too_deep_argument(draft.arguments)
    if deep is not None:
        # (Whatever the format's reader let through: no value handed on nests deeper
        # than VALUE_DEPTH, so that json.dumps and the conversions never recurse
        # past Python's limit on it; see _build/depth.py.)
        return f"Couldn't read a tool call: {too_deep_message(deep or None)}."
    repairs = tuple(region.repairs) if base is None else base
    if draft.repairs:  # (the region's first, then the call's own, each once)
        repairs += tuple(r for r in dict.fromkeys(draft.repairs) if r not in repairs)
    if cut and not _CUT_REPAIRS.isdisjoint(repairs):
        # (What the cut made: closers supplied, a value cut short. A call whole at the
        # limit, `single_quotes` its only repair, was not cut by it, as a stream that
        # completed it there finds: QA7 D11.)
        repairs += ("cut_by_max_chars",)
    call = make_call(draft.name, draft.arguments, draft.id, draft.kind, fmt, draft.span, repairs, draft.instructions)
    return accept(call, tools, validate, truncated)


def accept(call: ToolCall, tools: ToolSet | None, validate: bool = False, truncated: str = "repair") -> ToolCall | str:
    """The call, or the error message that replaces it: its name is not offered;
    (truncated="error") the end of the reply cut a value of it short (repair
    cut_value: what it would do with the rest is not known, so the model is asked
    to write it again); or (validate=True) its arguments break its tool's JSON
    Schema (which a value cut short would only misreport)."""
    if tools is not None and call.name not in tools:
        return unknown_tool(call.name, tools)
    if truncated == "error" and "cut_value" in call.repairs:
        return cut_off(call.name, "cut_by_max_chars" in call.repairs)
    if tools is not None and validate:
        problems = check_arguments(call, tools)
        if problems:
            return problems[0]
    return call


class Joiner:
    """Joins prose pieces the way result.text shows them, one piece at a time
    (so a stream can emit exactly what a whole parse ends up with):
    leading and trailing whitespace dropped, and where markup was cut out the
    whitespace on both sides becomes one separator: the longer of the two runs,
    or a newline when neither side had any (words never run together)."""

    # (The scalars start as class attributes: parse() makes two joiners per reply.)
    cut = False  # markup removed since the last shown text
    right = ""  # the longest whitespace run between cuts since the last text
    hold_n = 0  # the length of hold
    run_n = 0  # the length of run

    def __init__(self) -> None:
        self.parts: list[str] = []
        # Whitespace is kept in the pieces it came in, joined only where it is shown: a
        # long run of it, a delta at a time, was copied whole at each delta (the square
        # of the run: reasoning of blanks streamed a character at a time).
        self.hold: list[str] = []  # trailing whitespace not yet shown
        self.run: list[str] = []  # whitespace since the latest cut

    def mark_cut(self) -> None:
        if self.cut:
            if self.run_n > len(self.right):
                self.right = "".join(self.run)
        else:
            self.cut = True
            self.right = ""
        if self.run_n:
            self.run = []
            self.run_n = 0

    def add(self, value: str) -> str:
        """Take a piece; return the text it adds now (possibly "")."""
        if not value:
            return ""
        if not self.parts:
            value = strip_leading(value)
            if not value:
                return ""
            self.cut = False
            self.hold = []
            self.hold_n = 0
        elif self.cut:
            body = value.lstrip()
            if len(body) < len(value):
                self.run.append(value[: len(value) - len(body)])
                self.run_n += len(value) - len(body)
            if not body:
                return ""
            # The longest of the three runs (the first of equals), or a newline. (The
            # run is not kept: the next mark_cut starts a new one.)
            if self.run_n > max(self.hold_n, len(self.right)):
                sep = "".join(self.run)
            elif len(self.right) > self.hold_n:
                sep = self.right
            else:
                sep = "".join(self.hold)
            value = (sep or "\n") + body
            self.cut = False
            self.hold = []
            self.hold_n = 0
        elif self.hold_n:
            body = value.rstrip()
            if not body:  # (more of the whitespace held)
                self.hold.append(value)
                self.hold_n += len(value)
                return ""
            value = "".join(self.hold) + value
            self.hold = []
            self.hold_n = 0
        body = value.rstrip()
        if len(body) < len(value):
            self.hold = [value[len(body) :]]
            self.hold_n = len(value) - len(body)
        if body:
            self.parts.append(body)
        return body

    def text(self) -> str:
        return "".join(self.parts)


class WholeJoiner:
    """What Joiner makes of a whole reply's pieces, for parse(), which shows nothing
    before the end: the pieces and the cuts are only noted (add() and mark_cut() are
    list appends, and add() returns None), and text() joins them once, in one pass.
    A reply of many calls has a piece and a cut per call: noting them costs a
    fraction of Joiner's work on each. (tests/test_joiner.py: the two agree.)"""

    def __init__(self) -> None:
        self.notes: list[str | None] = []  # pieces, and None for each cut
        self.add = self.notes.append

    def mark_cut(self) -> None:
        # (fastpath.run notes its cuts itself, as add(None): see Assembler.plain)
        self.notes.append(None)

    def text(self) -> str:
        # Between two runs of shown text the whitespace stays as it is where nothing
        # was cut out; where something was, the cuts split it into runs, and the
        # first of the longest stands for them all (a newline if all are empty).
        # Whitespace before the first text and after the last is dropped.
        notes = self.notes
        if not notes:
            return ""  # (no reasoning, most often)
        if len(notes) & 1 and notes.count(None) == len(notes) >> 1 and None not in notes[::2]:
            joined = _alternating(notes[::2])
            if joined is not None:
                return joined
        out: list[str] = []
        run = None  # the whitespace since the latest cut or text (None: no text yet)
        best = None  # the first longest run that a cut ended (None: no cut since the text)
        for note in self.notes:
            if note is None:
                if run is not None:
                    if best is None or len(run) > len(best):
                        best = run
                    run = ""
                continue
            left = note.lstrip() if run is not None else strip_leading(note)
            if not left:
                if run is not None:
                    run += note
                continue
            if run is not None:
                if len(left) < len(note):
                    run += note[: len(note) - len(left)]
                if best is None:
                    out.append(run)
                else:
                    out.append((run if len(run) > len(best) else best) or "\n")
                    best = None
            body = left.rstrip()
            out.append(body)
            run = left[len(body) :]
        return "".join(out)


def _alternating(pieces: list[str]) -> str | None:
    """WholeJoiner.text() of pieces with one cut between each two (prose between calls,
    the common case), in one step a piece: its text, after the longer of the whitespace
    runs on the cut's two sides (the one before it when they are equal; a newline when
    neither has any). A piece that is all whitespace before the first text or after the
    last is dropped (the whitespace at the ends is); None when one is between two texts
    (then the runs of several pieces meet: the general way)."""
    out: list[str] = []
    before = None  # the whitespace at the end of the last piece (None: no piece yet)
    blank = False  # a piece all whitespace since the last text
    for piece in pieces:
        # (Before the first text, a byte order mark or zero-width space is blank too.)
        left = piece.lstrip() if before is not None else strip_leading(piece)
        body = left.rstrip()
        if not body:
            blank = before is not None
            continue
        if blank:
            return None
        if before is not None:
            lead = len(piece) - len(left)
            out.append(piece[:lead] if lead > len(before) else before or "\n")
        out.append(body)
        before = left[len(body) :]
    return "".join(out)


# The segment kind of a scanner Piece (another kind, a <think> tag's "markup": reasoning).
# ("closer": a call's closer written again right after it; "opener": the markers of a
# call that could not be read, its error told, mention.failed_prose: markup, as a failed
# call holds no call, and no "error" segment, so that one failure, its text prose between
# its two markers, has no more error segments than errors.)
_PIECE_SEGMENT = {"text": "text", "turn_end": "markup", "closer": "markup", "opener": "markup"}


class Assembler:
    """Turns scanner output into a ParseResult, item by item (the stream parser
    uses the same class, so both build the text the same way). whole=True: for
    parse(), whose items come all at once (the texts are joined at the end: the
    pieces of text add() reports are then not reported)."""

    def __init__(
        self, tools: ToolSet | None, validate: bool = False, whole: bool = False, truncated: str = "repair"
    ) -> None:
        self.tools = tools
        self.validate = validate
        self.truncated = truncated
        self.prose: Joiner | WholeJoiner = WholeJoiner() if whole else Joiner()
        self.thought: Joiner | WholeJoiner = WholeJoiner() if whole else Joiner()
        self.calls: list[ToolCall] = []
        self.errors: list[str] = []
        self.segments: list[Segment] = []
        # Where max_chars cut a reply that went on (-1: it did not): a call whose
        # region reaches it, repaired, was cut by the limit (finish_call).
        self.cut = -1
        self.lazy = False  # the segments may hold a CallRun (see plain())
        self.pending: tuple[str, ...] = ()  # repairs the next call takes (see add)

    def extend(self, items: list, _new=tuple.__new__) -> None:
        """Take a whole reply's items (parse), reporting nothing: prose and the fast
        path's calls straight in, the rest through add()."""
        segments, add_text = self.segments, self.prose.add
        for item in items:
            kind = type(item)
            if kind is Piece and item[0] == "text":
                _, start, end, value = item
                if segments and segments[-1][2] == start and segments[-1][0] == "text":
                    segments[-1] = _new(Segment, ("text", segments[-1][1], end))  # (see run())
                else:
                    segments.append(_new(Segment, ("text", start, end)))
                add_text(value)
            elif kind is ToolCall:
                self.take(-1, -1, "", item)
            else:
                self.add(item)

    def take(self, start: int, end: int, prose: str, call: ToolCall, _new=tuple.__new__) -> ToolCall | str:
        """A call the fast path read (a region holding just it), and the prose before
        it (Scanner._run; end <= start: none): what extend() does with a text Piece,
        then the call, or the error message that replaces it (returned)."""
        segments, text = self.segments, self.prose
        if start < end:
            self.run("text", start, end)
            text.add(prose)
        text.mark_cut()
        if self.pending:
            call = self.repaired(call)
        # (The fast path's calls are whole, never cut_value: with no tools, nothing refuses them.)
        done = call if self.tools is None else accept(call, self.tools, self.validate, self.truncated)
        if type(done) is ToolCall:
            self.calls.append(done)
            segments.append(_new(Segment, ("call", *call.span)))
        else:
            self.errors.append(done)
            segments.append(_new(Segment, ("error", *call.span)))
        return done

    def repaired(self, call: ToolCall) -> ToolCall:
        """The call with the repairs markup before it named (see add), which are then spent."""
        repairs = (*self.pending, *(r for r in call.repairs if r not in self.pending))
        self.pending = ()
        return make_call(call.name, call.arguments, call.id, call.kind, call.format, call.span, repairs, call.instructions)

    def plain(self) -> tuple | None:
        """For a caller with many calls to add at once (Scanner._run), when each call
        whose name is offered is taken as it is: what take() does, as functions (the
        segments' append, the prose's add and mark_cut, the calls' append), and the
        tools (None: any name); the caller makes the segments, and gives take() a call
        whose name is not offered. None: each call goes through take() (a schema to
        check its arguments against, or repairs markup before it named: see add)."""
        if (self.validate and self.tools is not None) or self.pending:
            return None
        self.lazy = True  # (its segments may hold a CallRun: see result())
        # (whole: the prose is a WholeJoiner, whose cut is add(None))
        return self.segments, self.prose.add, self.calls, self.tools

    def run(self, kind: str, start: int, end: int) -> None:
        """Add a text or reasoning segment; one right after another of its kind joins
        it, so the segments do not depend on how the text was cut into pieces (a stream
        makes one per delta)."""
        segments = self.segments
        if segments:
            last = segments[-1]
            if last[2] == start and last[0] == kind:
                segments[-1] = make_segment(kind, last[1], end)
                return
        segments.append(make_segment(kind, start, end))

    def _runs_on(self, region: Region) -> bool:
        """Whether the prose a region ends with goes on in the text after it: the region
        was left open (its close supplied) and max_chars cut it, so that its last prose
        runs to the limit and the reply's rest continues it, with no markup between
        (`<tool_call>{…}xx` + `xxxxxxxx` is `xxxxxxxxxx`, as without the limit, not
        `xx\nxxxxxxxx`: QA7 D10)."""
        return region.end == self.cut and "closed_tag" in region.repairs

    def add(self, item: Any) -> list[tuple[str, Any]]:
        """Take one scanner item; return what it produced, as (kind, value) pairs:
        ("text", str), ("reasoning", str), ("call", ToolCall), ("error", str)."""
        produced: list[tuple[str, Any]] = []
        if type(item) is ToolCall:
            done = self.take(-1, -1, "", item)
            produced.append(("call" if type(done) is ToolCall else "error", done))
        elif isinstance(item, Piece) and item.kind == "markup" and item.value:
            # Markup that names a repair for the next call (a stutter's first opener:
            # repeated_marker): a "markup" segment, dropped from the text.
            self.segments.append(make_segment("markup", item.start, item.end))
            self.prose.mark_cut()
            if item.value not in self.pending:  # (a repair is recorded once: three openers, one stutter)
                self.pending = (*self.pending, item.value)
        elif isinstance(item, Piece):
            # (An end-of-turn token that ended the reply is markup, as a region's markers
            # that hold no call are: a "markup" segment. A <think> tag belongs to its
            # reasoning block.)
            self.run(_PIECE_SEGMENT.get(item.kind, "reasoning"), item.start, item.end)
            if item.kind == "text":
                added = self.prose.add(item.value)
                if added:
                    produced.append(("text", added))
            elif item.kind == "reasoning":
                added = self.thought.add(item.value)
                if added:
                    produced.append(("reasoning", added))
            else:  # a <think> tag: ends a run of prose and of reasoning
                self.prose.mark_cut()
                self.thought.mark_cut()
        elif isinstance(item, Region):
            parts = item.items
            if len(parts) == 1 and type(parts[0]) is Draft:
                return self._one_call(item, parts[0])
            called = refused = False
            refusals: list[tuple[int, int]] = []  # the spans of the calls refused
            given: list[tuple[int, int]] = []  # the spans of the calls given
            own: list[tuple[str, int, int]] = []  # the region's text that is prose or reasoning
            self.prose.mark_cut()
            last = item.items[-1] if item.items else None
            cut = 0 <= self.cut <= item.end
            base = tuple(item.repairs)  # (each call's first repairs: finish_call)
            whole = item.whole  # (its first calls whole, lists in a row: Region.whole)
            whole_base = tuple(r for r in base if r != "closed_tag") if whole else base
            for part in item.items:
                if type(part) is not Draft:  # (the commonest part, a call, passes the rest by)
                    if isinstance(part, Prose) and part.span is not None:
                        own.append(("reasoning" if isinstance(part, Reasoning) else "text", *part.span))
                    if isinstance(part, Reasoning):  # a grammar's reasoning (gpt-oss analysis, …)
                        self.thought.mark_cut()
                        added = self.thought.add(part.text)
                        if added:
                            produced.append(("reasoning", added))
                        self.thought.mark_cut()
                        continue
                    if isinstance(part, Prose):
                        added = self.prose.add(part.text)
                        if added:
                            produced.append(("text", added))
                        if part is not last or not self._runs_on(item):
                            self.prose.mark_cut()
                        continue
                if self.pending and isinstance(part, Draft):
                    part.repairs = [*self.pending, *(r for r in part.repairs if r not in self.pending)]
                    self.pending = ()
                if whole and isinstance(part, Draft) and part.span is not None:
                    whole -= 1  # (a call of a list before the last: whole, Region.whole)
                    done = finish_call(part, item.fmt, self.tools, item, self.validate, cut, self.truncated, whole_base)
                else:
                    done = finish_call(part, item.fmt, self.tools, item, self.validate, cut, self.truncated, base)
                if type(done) is ToolCall:
                    self.calls.append(done)
                    produced.append(("call", done))
                    called = True
                    if done.span:
                        given.append(done.span)
                else:
                    self.errors.append(done)
                    produced.append(("error", done))
                    refused = True
                    if isinstance(part, Draft) and part.span:
                        # (from its own markers: the region's opener, which a stream's
                        # first call's span takes for its id, stays markup; Draft.opened)
                        refusals.append(part.span if part.opened is None else (part.opened, part.span[1]))
            # A region read by a grammar is a "call" segment when it gave a call; an
            # "error" segment when it gave none and some call in it was refused; and
            # "markup" when it gave neither (a message's markers: gpt-oss's
            # `<|channel|>final<|message|>`, Apriel's `[BEGIN FINAL RESPONSE]`, a list
            # of no calls), which no UI should show as a call. The reply's own text in
            # it that is prose or reasoning (gpt-oss's analysis channel) is a segment of
            # that kind.
            kind = "call" if called else ("error" if refused else "markup")
            at = item.start
            order: list[tuple[str, int, int]] = []  # the region's parts: its prose, and its markup ("")
            for part_kind, start, end in own:
                if at <= start < end <= item.end:
                    if start > at:
                        order.append(("", at, start))
                    order.append((part_kind, start, end))
                    at = end
            if at < item.end or at == item.start:
                order.append(("", at, item.end))
            self.pending = ()  # (spent on the region's first call, or for none)
            if called and refusals:
                order = _split_refused(order, refusals, given)
            kinds = iter(_markup_kinds(kind, [(s, e) for k, s, e in order if not k], refusals, given))
            for part_kind, start, end in order:
                if part_kind == "!":
                    self.segments.append(make_segment("error", start, end))
                elif part_kind:
                    self.run(part_kind, start, end)
                else:
                    self.segments.append(make_segment(next(kinds), start, end))
        elif isinstance(item, Failure):
            self.pending = ()  # (the markup's repair was for a call that never came)
            if not item.prose:  # (its text is markup: an "error" segment, as a refused call's)
                self.prose.mark_cut()
                self.segments.append(make_segment("error", item.start, item.end))
            self.errors.append(item.message)
            produced.append(("error", item.message))
        return produced

    def _one_call(self, region: Region, draft: Draft) -> list[tuple[str, Any]]:
        """add() of a region that holds one call and nothing else (a storm's, thousands),
        as the general way takes it, with none of its lists: its repairs, the call or the
        error that replaces it, and one segment over the region, "call" or "error"."""
        self.prose.mark_cut()
        if self.pending:
            draft.repairs = [*self.pending, *(r for r in draft.repairs if r not in self.pending)]
            self.pending = ()
        done = finish_call(draft, region.fmt, self.tools, region, self.validate, 0 <= self.cut <= region.end, self.truncated)
        if type(done) is ToolCall:
            self.calls.append(done)
            self.segments.append(make_segment("call", region.start, region.end))
            return [("call", done)]
        self.errors.append(done)
        self.segments.append(make_segment("error", region.start, region.end))
        return [("error", done)]

    def result(self) -> ParseResult:
        """The result, once every item is in (its lists are the assembler's own)."""
        if self.lazy:
            return lazy_result(self.prose.text(), self.calls, self.errors, self.thought.text(), self.segments)
        return ParseResult(self.prose.text(), self.calls, self.errors, self.thought.text(), self.segments)


def _split_refused(
    order: list[tuple[str, int, int]], refusals: list[tuple[int, int]], given: list[tuple[int, int]]
) -> list[tuple[str, int, int]]:
    """A region that gave a call and refused another (`order`: its parts, as Assembler.add
    lists them): the refused call's markup is an "error" segment of its own (kind "!"),
    as it is where it is refused alone, not part of the "call" segment around the call
    given (QA18 Q13: DeepSeek V3's `get_ti me` after a call, in no text and no error).
    A refusal whose span holds a call given (a field around the calls) stays "call".
    A refused call split by the region's prose or reasoning (xLAM's "thought" inside the
    object refused) is one error segment all the same, in one piece (_error_pieces); its
    other pieces are markup."""
    overlaps = _Overlaps(given)
    refusals = [(s, e) for s, e in refusals if s < e and not overlaps.any(s, e)]
    picks = _error_pieces([(s, e) for k, s, e in order if not k], refusals)
    out: list[tuple[str, int, int]] = []
    mark = -1
    # (Refusals in order and apart, as a list's calls are: a piece meets only those from
    # the first that ends after it begins, not each of the region's, per piece.)
    ends = [e for s, e in refusals] if _in_order(refusals) else None
    for part_kind, start, end in order:
        if part_kind:
            out.append((part_kind, start, end))
            continue
        mark += 1
        at = start
        first = 0 if ends is None else bisect_right(ends, start)
        for (s, e), pick in zip(islice(refusals, first, None), islice(picks, first, None)):
            if ends is not None and s >= end:
                break  # (none after it meets the piece)
            s, e = max(s, at), min(e, end)
            if s >= e:
                continue
            if s > at:
                out.append(("", at, s))
            out.append(("!" if pick == mark else "", s, e))  # (a piece of it not its error: markup)
            at = e
        if at < end:
            out.append(("", at, end))
    return out


def _error_pieces(marks: list[tuple[int, int]], refusals: list[tuple[int, int]]) -> list[int]:
    """For each refused call, the piece of its region's markup (`marks`, split by the
    region's prose and reasoning) that is its error segment: the one that holds most of
    it (the first of equals; -1: none holds any). One piece per refusal, so a region
    never has more error segments than errors, wherever its prose splits a refused call
    (`{"thought": "…", "tool_calls": [{…no name…}]}` read as one refused call: the
    `{"thought": "` before the reasoning is markup, the rest the error)."""
    picks = []
    # (The pieces are in order and apart: only those from the first that ends after a
    # refusal begins to the last that begins before it ends can hold any of it.)
    starts = [start for start, end in marks]
    ends = [end for start, end in marks]
    for s, e in refusals:
        best, pick = 0, -1
        for i in range(bisect_right(ends, s), bisect_left(starts, e)):
            start, end = marks[i]
            held = min(e, end) - max(s, start)
            if held > best:
                best, pick = held, i
        picks.append(pick)
    return picks


def _in_order(spans: list[tuple[int, int]]) -> bool:
    """Whether the spans are in order, each ending where or before the next begins."""
    return all(spans[i][1] <= spans[i + 1][0] for i in range(len(spans) - 1))


class _Overlaps:
    """Which of some spans meet a span asked about (a < e and s < b), in log time a
    question: the spans by their start, with the furthest end of each prefix. A region
    of a thousand calls given and a thousand refused asked it of every pair (the square
    of the reply: whole lists then broken ones, line after line)."""

    def __init__(self, spans: Sequence[tuple[int, int]]) -> None:
        spans = sorted(spans)
        self.starts = [a for a, b in spans]
        self.reach: list[int] = []
        furthest = None
        for a, b in spans:
            furthest = b if furthest is None or b > furthest else furthest
            self.reach.append(furthest)

    def any(self, s: int, e: int) -> bool:
        """Whether some span (a, b) has a < e and s < b."""
        n = bisect_left(self.starts, e)  # (those that begin before e)
        return n > 0 and self.reach[n - 1] > s


def _markup_kinds(
    kind: str, marks: list[tuple[int, int]], refusals: list[tuple[int, int]], spans: list[tuple[int, int]] = ()
) -> list[str]:
    """The segment kind of each piece of a region's markup (split by its prose): the
    region's kind; but where the region gave no call and refused one, only the piece
    that holds a refused call (most of it: _error_pieces) is an error (one segment per
    error, as a UI shows them), the rest markup (a block's tags around its prose); the
    last, where none is known. Where it gave calls, a piece that holds none is markup (a
    block's close after its prose: `…</cofl:tool_call> Done.</cofl:tool_calls>`)."""
    if kind == "call" and len(marks) > 1 and spans:
        overlaps = _Overlaps(spans)
        return ["call" if overlaps.any(start, end) else "markup" for start, end in marks]
    if kind != "error" or len(marks) < 2:
        return [kind] * len(marks)
    picks = set(_error_pieces(marks, refusals))
    kinds = ["error" if i in picks else "markup" for i in range(len(marks))]
    if "error" not in kinds:
        kinds[-1] = "error"
    return kinds


def past_max_chars(cap_re: Any, text: str, start: int, cap: int) -> Failure | None:
    """The error for a reply that goes on past max_chars (`cap`) with a call's marker in
    what was not read (`text`, which starts at `start`: at most a marker's width less
    one before the cap, for a marker the cap cuts): nothing the model wrote is read
    there, but that is not silent. None: no such marker."""
    if cap_re is None:
        return None
    at = 0
    while True:
        found = cap_re.search(text, at)
        if found is None:
            return None
        if start + found.end() > cap:
            break
        at = found.start() + 1  # (a marker wholly before the cap: the scanner's)
    message = (
        f"Couldn't read a tool call: the reply goes on past max_chars ({cap} characters),"
        " and a call's marker in what follows was not read."
    )
    return Failure(cap, start + len(text), message)


def check_max_chars(max_chars: Any) -> None:
    """Configuration errors raise (the text never does)."""
    if max_chars is None:
        return
    if not isinstance(max_chars, int) or isinstance(max_chars, bool):
        raise TypeError(f"max_chars must be an int (or None for no limit), not {type(max_chars).__name__}")
    if max_chars < 0:
        raise ValueError("max_chars must be >= 0 (or None for no limit)")


def read_calls(text: str, listed: bool) -> list[ToolCall] | None:
    """Python-style calls nested in another format's payload (a model mixing two
    formats: `<tool_call>get_weather(city="Paris")</tool_call>`), read as the pythonic
    formats read a whole reply (`listed`: a list of them): the calls, or None unless
    the text is all calls, read without an error. The scanner hands it to the builder."""
    token = NESTED.set(True)  # (the payload is calls only: Builder._string_said)
    try:
        read = parse(text, formats=["pythonic" if listed else "bare_pythonic"], max_chars=None)
    finally:
        NESTED.reset(token)
    if read.text or read.errors or not read.calls:
        return None
    return read.calls


def parse(
    raw: str,
    tools: Any = None,
    *,
    formats: Any = None,
    max_chars: int | None = DEFAULT_MAX_CHARS,
    grammar_paths: Any = None,
    validate: bool = False,
    in_think: bool = False,
    truncated: str = "repair",
) -> ParseResult:
    """Read the tool calls out of a model's reply. Never raises for any `raw`.

    Returns a ParseResult: `text` (the prose), `calls` (ToolCall: name, arguments,
    id, kind, format, span, repairs), `errors` (messages to feed back to the model),
    `reasoning` (what stood in <think>…</think>) and `segments` (where each part of
    `raw` went).

    `tools`: None accepts any name; otherwise the tools offered (names, OpenAI or MCP
    definitions, `{name: schema}`, a ToolSet: see normalize_tools); a call to any
    other name becomes the error `Unknown tool "x". Available now: …`.
    `formats`: None tries every format, in their order; names restrict and order them.
    `max_chars`: only so many characters are parsed (None: all); the rest is kept
    as prose.

    With validate=True (and tools given), a call whose arguments break its tool's
    JSON Schema becomes an error message instead of a call (it needs jsonschema).

    With in_think=True the reply starts inside a reasoning block that the prompt
    opened (DeepSeek-R1's and QwQ's chat templates end the prompt with `<think>`,
    Mistral's with `[THINK]`): what comes before the first closer (`</think>`, or
    one the formats declare: `// reasoning:` in their headers) is reasoning, not
    prose. (A reply that opens with an opener itself is read as usual.)

    `truncated`: what becomes of a call the end of the reply (the token limit, or
    max_chars) cut inside a value, or before its arguments began (repair cut_value).
    "repair" (the default): it is a call, closed as far as it was written, and says
    so. "error": it is the error `Arguments for "x" were cut off where the reply
    ended. Write the call again in full.` instead. A call whose brackets or tags alone
    were left open (closed_json, closed_tag) is a call either way.

    `grammar_paths`: the user's own `.lark` format files or folders of them, used next
    to the built-in formats (and TOOLGRAM_GRAMMAR_PATH, `toolgram.grammars` entry points).
    Configuration errors do raise: an unknown name in `formats` (KeyError), a broken or
    missing file in `grammar_paths` (GrammarError, `path:line: …`), arguments of the
    wrong type (TypeError), validate=True without jsonschema (ImportError)."""
    if not isinstance(raw, str):
        text_of = TextOf()
        raw = text_of(raw) + text_of.rest()  # (bytes: UTF-8; spans are the text's)
    toolset = None if tools is None else normalize_tools(tools)
    registry = registry_for(grammar_paths)
    fmts = registry.select(formats)
    check_max_chars(max_chars)
    check_truncated(truncated)
    if validate:
        require_jsonschema()
    if max_chars is None:
        max_chars = len(raw)
    head, rest = raw[:max_chars], raw[max_chars:]
    asm = Assembler(toolset, validate, True, truncated)
    if rest:
        asm.cut = len(head)
    scanner = Scanner(fmts, toolset, in_think, read_calls)
    try:
        asm.extend(scanner.read(head, asm))
    except Exception as exc:  # noqa: BLE001 - the promise is "never raises"
        if escapes(exc):
            raise
        # A bug of ours must not cost the user the reply: keep it all as prose.
        asm = Assembler(toolset, validate, whole=True, truncated=truncated)
        asm.add(Piece("text", 0, len(head), head))
        asm.errors.append(f"Couldn't read a tool call: internal error ({type(exc).__name__}).")
    if rest:
        # Beyond max_chars nothing is parsed: the rest is kept, as prose (and a call's
        # marker in it is told).
        asm.add(Piece("text", len(head), len(raw), rest))
        back = max(0, len(head) - scanner.cap_width + 1)
        past = past_max_chars(scanner.cap_re, raw[back:], back, len(head))
        if past is not None:
            asm.add(past)
    return asm.result()
