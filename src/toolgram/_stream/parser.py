"""StreamParser: parse() for a reply that arrives in pieces.

The stream runs the same Scanner and Assembler as parse(), so it takes the same
decisions: `close()` returns exactly what `parse(whole_text)` returns, and the
events add up to it:

  * the `Text` events, concatenated, equal `result.text`; the `Reasoning`
    events, `result.reasoning` (leading whitespace is dropped, trailing
    whitespace is held until more text follows, separators where markup was
    cut out are emitted with the text after them: the Assembler's Joiner);
  * each call gets one `CallStart`, then `ArgumentsDelta`s whose texts,
    concatenated, equal `json.dumps(call.arguments, ensure_ascii=False)`, then
    one `CallDone` whose call equals `result.calls[index]`; the CallStart's `id`
    is the one `result.to_openai_message()` gives the call (the model's own, or
    one generated from its name, kind and where it starts);
  * every message of `result.errors` comes as an `Error`, in the same order.

When a call is announced
------------------------
Nothing sent is ever taken back, so a call is announced only once it is
certain to be `result.calls[index]`: when the scanner hands over its region.
That is as soon as the region is over -- its close marker arrived, or the next
call's marker, or text that cannot belong to it -- and the format that reads
it has decoded it. Before that nothing about a call is certain, not even that
it is one or what its name is:

  * a region can still fail as a whole: `<tool_call>{"name": "search",
    "arguments": {"q": @}}</tool_call>` is prose and an error, not a call;
  * JSON keeps the last of duplicate keys: `{"name": "a", "arguments": {},
    "name": "b"}` calls "b", and a later `"arguments": 5` makes it an error;
  * a marker several formats share goes to the first format that reads the
    whole region; a name that is not offered is an error, not a call.

So a call's `CallStart`, its arguments (one `ArgumentsDelta`, the whole JSON)
and `CallDone` come together, from the `feed()` that delivers the end of its
region, not at the end of the stream. Regions that only the end of the reply
can settle (the whole reply as JSON, a call inside a `<think>` block that never
closes, a call cut off by the end) come from `flush()`.

`announce="name"` trades that certainty for time: a JSON call object whose name
comes first gets its `CallStart` as soon as `{"name": "x", "arguments": {` has
arrived (Scanner.early_call), then its arguments as they arrive, written as
json.dumps writes them, as far as that is certain (JsonEcho: a string's characters
at once, a number when it is complete). So does a call of an XML-ish format whose header
declares its tags (`stream_call:`, `stream_param:`; Qwen3-Coder, Seed-OSS, GLM, MiniMax
M2, DSML, Kimi K3, dots.llm, MiniCPM5, Step-3, Hunyuan Hy3) once a tag follows its opener (`<function=x>`) after blanks, its parameters'
string values as their text arrives and any other once its close came (XmlParamEcho);
so does a call whose JSON arguments follow an opener its header declares (`stream_json:`,
Kimi K2's with the model's id, Mistral's NAME[ARGS] and NAME[CALL_ID]id[ARGS]: JsonEcho; Mistral's
list before v11, `stream_json_list:`, each call once its id is certain: _ListCalls), and
a call of a list of Python-style calls (`stream_python:`, its keyword arguments: PyEcho), or a
lone one (`stream_pycall:`, Llama 3.1's built-in tools, bare calls: PyEcho), a Gemma call
(`stream_loose:`, its loose object: LooseEcho), and a BFCL call (`stream_attr:`, values in
attributes: AttrEcho); other formats are not announced early. In a region of several calls (a MiniMax, DSML, Kimi K3,
Qwen3-Coder, Seed-OSS or Step-3 block, Kimi K2's section; JSON call objects one after another
or in a list; a Python list) each later call is
announced the same way once its opener follows right after the close of the call before it
(_Follow, _NextObject, _PyFollow), with the span parse() gives it (its own opener on; the first call
holds the region's opening markers), so several announced calls may be open at once; they
are completed, or withdrawn, at the region's end, in order. When its region then gives something else
(prose and an error, another name, a call the tools refuse), or arguments that do
not start with what was sent, a `CallCancelled` withdraws it.
Its index is not used again: a stream of OpenAI chunks cannot take anything back, and
a client that had been given index 0 for a call that is then withdrawn would glue the
next call's name and arguments onto it. So the calls after it (the same call sent
again whole, or the next) take the next indexes, and `index` is the call's place in
`result.calls` only while no call was withdrawn (CallDone events still come in the
order of `result.calls`). Everything else is as above.

Cost
----
Work per delta is proportional to the delta (amortised), whatever the length
of the reply: the scanner keeps its state and drops the text it no longer
needs; a prose delta in which no marker can start takes a fast path (and a run
of them a faster one, the "lane", that hands the scanner their text in one
piece later); inside a region, a delta that cannot change the token being
read (a long JSON value, a payload up to its close tag) is put aside without
re-lexing, and a long token is scanned on from where it stopped (see
Scanner.feed, Driver.absorbs).
"""

from __future__ import annotations

import functools
import json
import sys
from typing import Any

import regex

from ..events import ArgumentsDelta, CallCancelled, CallDone, CallStart, Error, Event, Reasoning, Text
from .._guard import escapes
from .attrecho import AttrEcho
from .jsonecho import JsonEcho
from .looseecho import LooseEcho
from .pyecho import PyEcho
from .xmlecho import XmlParamEcho
from .._grammar.tags import AttrTags, JsonTags, LooseTags, PyTags
from .._result.model import ParseResult, TextOf, ToolCall
from .._result.openai import id_for, place_salt
from .._pipeline import DEFAULT_MAX_CHARS, Assembler, check_max_chars, check_truncated, past_max_chars, read_calls, select_formats
from .._scan.scanner import Piece, Region, Scanner
from .._tools.tools import normalize_tools
from .._tools.validate import require_jsonschema

_new = object.__new__
_set = object.__setattr__

__all__ = ["StreamParser"]

_OPEN, _CUT, _BROKEN, _DONE = "open", "cut", "broken", "done"
_LANE_SYNC = 4096  # the most characters the fast lane keeps from the scanner (see _sync)
_INTERRUPTED = "interrupted"  # an exception not ours passed through mid-delta (see _passes)


# (json.dumps(x, ensure_ascii=False, allow_nan=False), without making an encoder for
# each call.)
_ARGUMENTS_JSON = json.JSONEncoder(ensure_ascii=False, allow_nan=False).encode


def _c_encoder() -> Any:
    """The C encoder that _ARGUMENTS_JSON makes anew for each value it writes (what
    JSONEncoder.iterencode builds for a one-shot encode), made once; None where json
    has no C speedups. No check for circular values: decoded arguments are a tree."""
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:  # pragma: no cover - CPython has it
        return None
    return make(None, None, json.encoder.encode_basestring, None, ": ", ", ", False, False, False)


_DICT_JSON = _c_encoder()


def arguments_json(arguments: Any) -> str:
    """The JSON text an OpenAI-style client receives as a call's arguments."""
    try:
        # allow_nan=False: decoded arguments hold no NaN or Infinity (repair
        # non_finite_number makes them null), so this writes what json.dumps writes.
        if type(arguments) is dict and _DICT_JSON is not None:
            return "".join(_DICT_JSON(arguments, 0))
        return _ARGUMENTS_JSON(arguments)
    except (TypeError, ValueError):  # pragma: no cover - decoded payloads are JSON data
        return json.dumps(arguments, ensure_ascii=False, default=str)


@functools.lru_cache(maxsize=64)
def _py_markers(known: Any, own: tuple[str, ...]) -> tuple[str, ...]:
    """StreamParser._py_markers: the region's markers `own`, then the call openers of
    `known` (the formats read: one Markers a set of formats) of four characters or more
    that begin with `<` or `[`."""
    return own + tuple(m for m in known.by_marker if len(m) > 3 and m[0] in "<[" and m not in own)


class StreamParser:
    """Parse a reply while it streams in.

        sp = StreamParser(tools, formats=None, max_chars=32_768)
        for delta in deltas:
            for event in sp.feed(delta):
                ...
        for event in sp.flush():     # the held-back text, a call cut off by the end
            ...
        result = sp.close()          # == toolgram.parse(whole_text, tools, ...)

    Events: Text, Reasoning, CallStart, ArgumentsDelta, CallDone, Error (see
    toolgram.events). Like parse(), it never raises for any text; configuration
    errors (an unknown format name, a broken grammar file) raise in the
    constructor. `feed()` after `flush()` or `close()` raises RuntimeError.
    `in_think=True`: the reply starts inside a reasoning block the prompt opened
    (`<think>`, `[THINK]`, …: see parse()); its text comes as Reasoning events. `truncated="error"`: a call
    the end of the reply cut (repair cut_value) is an Error, not a call, as in
    parse(); only the end of the reply cuts one, so it comes from flush() (or from
    the feed() that crosses max_chars).

    `announce="name"`: a call written as a JSON object whose name comes first
    (`<tool_call>{"name": "x", "arguments": {`…), or as XML-ish parameters of tags
    its format declares (Qwen3-Coder's `<function=x>` on its own line, MiniMax's
    `<invoke name="x">`, …), gets its CallStart as soon as
    that much has arrived, and its ArgumentsDelta as its arguments arrive (as
    json.dumps writes them); CallDone comes with its end. Such a call may yet
    fail (`{"q": "a"b"}` cannot be read, and parse() keeps it as prose and an
    error): then a CallCancelled(index) follows and the call gets no CallDone; the
    index is not used again (the next call takes the next one). The closing result
    is parse()'s either way. The default,
    announce="done", sends nothing about a call before it is certain.
    """

    def __init__(
        self,
        tools: Any = None,
        *,
        formats: Any = None,
        max_chars: int | None = DEFAULT_MAX_CHARS,
        grammar_paths: Any = None,
        validate: bool = False,
        in_think: bool = False,
        announce: str = "done",
        truncated: str = "repair",
        _salt: str = "",
    ) -> None:
        check_max_chars(max_chars)
        check_truncated(truncated)
        if validate:
            require_jsonschema()
        if announce not in ("done", "name"):
            raise ValueError('announce must be "done" or "name"')
        # announce="name": the calls announced by their name and not done yet, in order, all
        # of the region being read (see _Early); and the region start last answered (see
        # _early_look).
        self._announced: list[_Early] = []
        self._open_ids: set[str] = set()  # (their ids: see _id)
        self._early_settled = -1
        self._markers: tuple[str, ...] = ()  # (the markers of the region of JSON call objects announced: JsonEcho)
        self._list: _ListCalls | None = None  # (a JSON list of call objects being followed: Mistral's before v11)
        if announce == "name":
            self.feed = self._feed_announcing  # type: ignore[method-assign]  # (the default pays nothing)
        self._text_of = TextOf()  # (deltas that are not str)
        self._tools = normalize_tools(tools)
        self._scanner = Scanner(select_formats(formats, grammar_paths), self._tools, in_think, read_calls)
        self._asm = Assembler(self._tools, validate, truncated=truncated)
        self._prose = self._asm.prose.add
        self._thought = self._asm.thought.add
        self._take = self._scanner.take_plain
        # The fast lane (see feed): Scanner.lane()'s search and characters, and where
        # the text goes; the text taken, not yet handed to the scanner.
        self._lane: Any = None
        self._lane_event: Any = Text
        self._lane_text: list[str] = []
        # Where the lane stops taking deltas without a look (-1 out of it): the next
        # hand-over of its text to the scanner, or max_chars.
        self._lane_stop = -1
        # The joiner the lane's text goes to (the Assembler's prose or thought), and its
        # parts while it is in its usual state (text shown, nothing held or cut since;
        # else None).
        self._lane_joiner: Any = None
        self._lane_parts: list[str] | None = None
        self._lane_ws = ""  # the whitespace at the end of the lane's text, held back (see feed)
        self._lane_held = ""  # what the lane holds back: a start of a marker (see Scanner.lane)
        self._lane_from = 0  # where (in the reply) the lane's text not handed over yet begins
        # The fast path's run of text (or reasoning): a Segment not yet written.
        self._run_kind = ""
        self._run_start = self._run_end = -1
        # The scanner takes the first `_limit` characters (-1 once it takes no more).
        self._limit = sys.maxsize if max_chars is None else max_chars
        # Past max_chars: the text not yet looked through for a call's marker (at most
        # a marker's width less one: what a delta may complete), and the error once one
        # is found, told at flush (see _pipeline.past_max_chars).
        self._cap = self._limit
        self._cap_tail = ""
        self._cap_error: Any = None
        self._seen = 0  # characters received
        self._calls = 0  # indexes given (calls announced, withdrawn ones included)
        self._done = 0  # calls done: the place in result.calls of the next one
        self._ids: set[str] = set()  # the ids of the calls done (see _id)
        # (toolgram.openai's per-response salt of generated ids: CallStart.id is then the
        # one completion(result, salt=...) gives; "" gives parse()'s.)
        self._salt = _salt
        self._state = _OPEN
        self._result: ParseResult | None = None

    # -- public ---------------------------------------------------------------
    def feed(self, delta: str) -> list[Event]:
        """Take the next piece of the reply; return the events it completes."""
        if delta.__class__ is not str:
            delta = self._text_of(delta)
        seen = self._seen
        end = seen + len(delta)
        if seen < end <= self._lane_stop:
            # The fast lane (Scanner.lane): a delta that is all prose (or all reasoning)
            # after one that was, but for an end that may start a marker ("com" of
            # "commentary"), held back; the scanner gets the text with the next that is not.
            # (_lane_stop: -1 out of the lane, else where it hands its text over or
            # max_chars, whichever comes first: one test for the three.)
            self._seen = end
            held = self._lane_held
            if not held:
                m = self._lane(delta)
                if m is None:
                    # The usual delta: prose, nothing held before it nor at its end. (The
                    # run's end is not written per delta: _sync writes it.)
                    self._lane_text.append(delta)
                    parts = self._lane_parts
                    if parts is None:
                        return self._lane_add(delta)
                    # The joiner's usual case, as in _lane_add (text shown already,
                    # nothing held or cut since): the whitespace at the end is held back.
                    # (rstrip() gives back the string itself when there is nothing to strip.)
                    body = delta.rstrip()
                    ws = self._lane_ws
                    if body is delta:
                        if ws:
                            self._lane_ws = ""
                            delta = ws + delta
                    elif body:
                        self._lane_ws = delta[len(body) :]
                        delta = ws + body if ws else body
                    else:
                        self._lane_ws = ws + delta
                        return []
                    parts.append(delta)
                    # (The event made as its class's __init__ would, at half the cost: a
                    # frozen dataclass sets each field through object.__setattr__.)
                    event = _new(self._lane_event)
                    event.__dict__["text"] = delta
                    return [event]
                value = delta
            else:
                value = held + delta
                m = self._lane(value)
            if m is None or m.lastindex:
                self._lane_text.append(delta)
                if m is None:
                    self._lane_held = ""
                else:
                    at = m.start()
                    self._lane_held = value[at:]
                    value = value[:at]
                    if not value:
                        return []
                return self._lane_add(value)
            self._sync()
            lane = self._lane
        else:
            if end > self._limit or end == seen:
                return self._feed_rest(delta)
            lane = self._lane
            if lane is not None:
                # The lane hands its text to the scanner every _LANE_SYNC characters
                # (then takes the delta, unless it is longer than that).
                self._sync()
                if end <= self._lane_stop:
                    return StreamParser.feed(self, delta)
                lane = self._lane
            self._seen = end
        if lane is None and self._scanner.waiting is not None:
            # Inside a region, on a token that this delta may not change (a payload
            # before its close tag): put aside, as Scanner.feed would.
            try:
                if self._scanner.absorb(delta):
                    return []
            except BaseException as exc:  # noqa: BLE001 - the slow way reports it
                if self._passes(exc):
                    raise
        try:
            plain = self._take(delta)
        except BaseException as exc:  # noqa: BLE001 - the slow way reports it
            if self._passes(exc):
                raise
            plain = None
        if plain is None:
            return self._scan(delta, False, False)
        # The fast path: prose (or reasoning) with nothing that could be markup.
        kind, value, hold = plain
        if hold:
            self._lane = None  # (the lane needs nothing held back)
            self._lane_stop = -1
            end -= hold
        elif lane is None:
            self._enter_lane(kind)
        else:
            self._lane_from = end  # (the lane goes on after this delta)
        if not value:
            return []
        start = end - len(value)
        if start != self._run_end or kind is not self._run_kind:
            self._end_run()
            self._run_kind = kind
            self._run_start = start
        self._run_end = end
        if kind == "text":
            added = self._prose(value)
            return [Text(added)] if added else []
        added = self._thought(value)
        return [Reasoning(added)] if added else []

    def _lane_add(self, value: str) -> list[Event]:
        """A lane delta's text (held characters taken off) to its joiner: its event."""
        parts = self._lane_parts
        if parts is not None:
            # The joiner's usual case, done here (text shown already, nothing
            # held or cut since): the whitespace at the end is held back (by the
            # lane: _lane_ws), and goes before the next text. (rstrip() gives
            # back the string itself when there is nothing to strip.)
            body = value.rstrip()
            ws = self._lane_ws
            if body is not value:
                if not body:
                    self._lane_ws = ws + value
                    return []
                self._lane_ws = value[len(body) :]
                value = body
            elif ws:
                self._lane_ws = ""
            if ws:
                value = ws + value
            parts.append(value)
            added = value
        else:
            joiner = self._lane_joiner
            added = joiner.add(value)
            self._lane_parts = None if joiner.hold_n or joiner.cut or not joiner.parts else joiner.parts
            if not added:
                return []
        event = _new(self._lane_event)
        event.__dict__["text"] = added
        return [event]

    def _enter_lane(self, kind: str) -> None:
        lane = self._scanner.lane()
        if lane is not None and lane[0] == kind:
            _, self._lane = lane
            self._lane_joiner = self._asm.prose if kind == "text" else self._asm.thought
            self._lane_parts = None  # (the first delta tells: see feed)
            self._lane_event = Text if kind == "text" else Reasoning
            self._lane_from = self._seen
            self._lane_stop = min(self._limit, self._seen + _LANE_SYNC)

    def _sync(self) -> None:
        """Hand the scanner the text taken in the fast lane. (What comes next may add
        to the joiner the way feed() does not: the lane looks at its state again.)"""
        if self._lane_ws:
            self._lane_joiner.add(self._lane_ws)  # (held: the joiner holds it now)
            self._lane_ws = ""
        self._lane_parts = None
        if self._lane is not None:
            self._lane_stop = min(self._limit, self._seen + _LANE_SYNC)
        if self._lane_text:
            text = "".join(self._lane_text)
            # (The run of text goes on to the lane's end, but for what it holds back: not
            # written per delta.)
            self._lane_from += len(text)
            self._run_end = self._lane_from - len(self._lane_held)
            self._lane_text = []
            self._scanner.extend_plain(text, len(self._lane_held))
            if self._lane_held:
                # The scanner holds those characters now, and the lane needs nothing held.
                self._lane_held = ""
                self._lane = None
                self._lane_stop = -1

    def _passes(self, exc: BaseException) -> bool:
        """Whether exc must reach the caller (see _guard): an exception that is not
        toolgram's (a deadline, MemoryError, Ctrl-C). It stopped the stream inside a
        delta, half done, so the stream reads nothing more."""
        if isinstance(exc, Exception) and not escapes(exc):
            return False
        self._stop(_INTERRUPTED)
        return True

    def _refuse_if_interrupted(self) -> None:
        if self._state is _INTERRUPTED:
            raise RuntimeError(
                "this StreamParser was interrupted by an exception inside feed(); its state is "
                "undefined: start a new one (or parse() the whole reply)"
            )

    def _feed_rest(self, delta: str) -> list[Event]:
        # The slow cases of feed(): nothing, the delta that crosses max_chars, the
        # text after it (or after an internal error): prose, parsed no more.
        self._refuse_if_interrupted()
        if self._state is _DONE:
            raise RuntimeError("StreamParser.feed() after flush() or close()")
        if not delta:
            return []
        start = self._seen
        events: list[Event] = []
        if self._state is _OPEN:
            head = delta[: self._limit - start]
            if len(head) < len(delta):
                self._asm.cut = self._limit  # (the reply goes on past max_chars: see finish_call)
            if head:
                self._seen = start + len(head)
                events = self._scan(head, False)
            if self._state is _OPEN:
                events += self._scan("", True)
                self._stop(_CUT)
                keep = self._scanner.cap_width - 1  # (a marker the cap cuts: see _look_past_cap)
                self._cap_tail = self._scanner.buf[-keep:] if keep > 0 else ""
            start += len(head)
            delta = delta[len(head) :]
        self._seen = start + len(delta)
        self._items([Piece("text", start, self._seen, delta)], events)
        if self._cap_error is None and start >= self._cap:
            self._look_past_cap(delta)
        return events

    def _look_past_cap(self, delta: str) -> None:
        """Look through text past max_chars for a call's marker, as parse() does."""
        sc = self._scanner
        text = self._cap_tail + delta
        self._cap_error = past_max_chars(sc.cap_re, text, self._seen - len(text), self._cap)
        keep = sc.cap_width - 1
        self._cap_tail = text[-keep:] if keep > 0 else ""

    def _stop(self, state: str) -> None:
        """The scanner takes no more text: every delta goes the slow way."""
        self._state = state
        self._limit = self._lane_stop = -1

    def _cut_by_transport(self) -> None:
        """The reply's transport broke off (a backend's stream, not the model's end): a
        call the end cuts is refused, as truncated="error" has it, at the flush that
        follows (toolgram serve: a network cut is no cut value to repair)."""
        self._asm.truncated = "error"

    def flush(self) -> list[Event]:
        """The reply is complete: return the last events. Idempotent."""
        self._refuse_if_interrupted()
        if self._state is _DONE:
            return []
        rest = self._text_of.rest()  # (bytes fed: a character left incomplete)
        events: list[Event] = self.feed(rest) if rest else []
        if self._state is _OPEN:
            events += self._scan("", True)
        if self._cap_error is not None:
            self._cap_error.end = self._seen
            self._items([self._cap_error], events)
        self._stop(_DONE)
        self._end_run()
        if self._announced:  # (the end settled every region: not those calls)
            self._cancel(events)
        return events

    def close(self) -> ParseResult:
        """Flush if needed and return the ParseResult: equal to parse(whole_text)."""
        if self._result is None:
            self.flush()
            self._result = self._asm.result()
        return self._result

    # -- internals ------------------------------------------------------------
    def _scan(self, text: str, final: bool, quick: bool = True) -> list[Event]:
        if self._lane is not None:
            self._lane = None
            self._lane_stop = -1
            self._sync()
        scanner = self._scanner
        events: list[Event] = []
        try:
            items = scanner.finish() if final else scanner.feed(text, quick)
        except BaseException as exc:  # noqa: BLE001 - the promise is "never raises"
            if self._passes(exc):
                raise
            self._break(exc, events)
            return events
        if items:
            self._items(items, events)
        return events

    def _feed_announcing(self, delta: str) -> list[Event]:
        """feed() for announce="name": the announced call's arguments first, as far as
        they are certain (JsonEcho), then what feed() gives."""
        if delta.__class__ is not str:
            delta = self._text_of(delta)  # (bytes, None: the echo reads text, as feed() does)
        events: list[Event] = []
        announced = self._announced
        if announced:
            last = announced[-1]  # (the one being written: those before it ended)
            taken = delta[: max(0, self._limit - self._seen)]
            last.end += len(taken)
            follow = last.follow  # (one the echo makes at its object's end is fed what follows it)
            if last.echo is not None:
                last.echo_more(taken, events)
            if follow is not None:
                follow.feed(taken)
        if self._list is not None:
            self._list.feed(delta[: max(0, self._limit - self._seen)])
        events += StreamParser.feed(self, delta)
        if self._state is _OPEN and (announced or self._list is not None or self._scanner.region is not None):
            self._early_look(events)  # (in prose, with no call announced, nothing to look at)
        return events

    def _early_look(self, events: list[Event]) -> None:
        """announce="name": a CallStart for the region being read, once its name shows
        (Scanner.early_call) and is offered; a CallCancelled once the announced
        call's region is over without giving it (_items takes the call itself); and the
        next call of a block that holds several, once its name shows (_next)."""
        listed = self._list
        if listed is not None:
            if self._scanner.in_region(listed.region):
                self._list_next(events)
                return
            self._list = None  # (the list's region is over: its calls are settled as any)
        announced = self._announced
        if announced:
            scanner = self._scanner
            if not scanner.in_region(announced[0].region):
                first = announced[0].start
                if not scanner.in_region(first) and not (scanner.in_region(announced[0].own) and self._moved(announced[0].own)):
                    self._cancel(events)
                    return
                first = announced[0].start
                # (the block's reading ended after a call, and a region begins at the next
                # one announced: it is that region's first call, from the same start)
                for early in announced:
                    early.region = first
                self._early_settled = first
            self._next(events)
            return
        got = self._scanner.early_call(self._early_settled)
        if got is None:
            return
        start, name = got[0], got[1]
        self._early_settled = start
        if name is None and len(got) == 4:
            # (a JSON list of call objects, stream_json_list: followed from its first `{`)
            self._list = _ListCalls(start, got[2], got[3])
            self._list.feed(self._scanner.text_from(got[2]))
            self._list_next(events)
            return
        if name is not None and (self._tools is None or name in self._tools) and not self._repeats(got):
            follow = None
            json_tags = written = None
            if len(got) > 3 and type(got[3]) is PyTags:
                # (a list of Python-style calls: announced by its name, its keyword arguments
                # as they are written, PyEcho; the calls after it are followed from its `(`,
                # see _PyFollow)
                echo = PyEcho(self._tools.schema(name) if self._tools is not None else None, self._py_markers())
                follow = _PyFollow(got[3], got[2])
            elif len(got) > 3 and type(got[3]) is LooseTags:
                # (Gemma's loose object after its opener: LooseEcho; one call a region)
                echo = LooseEcho(name, self._tools.schema(name) if self._tools is not None else None, got[3])
            elif len(got) > 3 and type(got[3]) is AttrTags:
                # (BFCL's parameters, their values in attributes: AttrEcho; a block's later calls come whole)
                echo = AttrEcho(name, self._tools.schema(name) if self._tools is not None else None, got[3])
            elif len(got) > 3 and type(got[3]) is JsonTags:
                # (a JSON object after an opener its header declares: Kimi K2's, Mistral's;
                # the calls after it are followed from its end, as below)
                echo: Any = JsonEcho(got[3].markers)
                json_tags, written = got[3], got[5]
            elif len(got) > 3:  # (XML-ish parameters of the declared tags, typed by the tool's schema)
                echo = XmlParamEcho(self._tools.schema(name) if self._tools is not None else None, got[3])
                written = got[5] if len(got) > 5 else None  # (an id the model wrote in the opener: Cohere's)
                if got[4]:  # (in a block: the calls after it are followed, see _next)
                    follow = _Follow(got[3], got[2])
            else:
                # (the call objects after it are followed from its end: _Early)
                self._markers = self._scanner.region_markers()
                echo = JsonEcho(self._markers)
            self._announce(start, start, name, echo, follow, got[2], events, None, json_tags, written)
            if written is not None and len(got) > 6:
                self._announced[-1].own = got[6]  # (see _moved)
            self._next(events)

    def _py_markers(self) -> tuple[str, ...]:
        """The markers a Python-style call's quoted value stops its echo at (PyEcho): the
        region's formats' (region_markers), and every call opener of the formats read
        (`<tool_call>`, `[TOOL_CALLS]`; not a one-, two- or three-character one, `[`, `{`,
        a fence, nor a word): parse() may end a string left open at another format's
        whole call after it (`[f(a="Paris <tool_call>{…}</tool_call>`: `"Paris "`, then
        that call), or keep the marker as the string's text; what was sent before the
        marker is the start of either (issue 21: sent as the value's text, the call was
        withdrawn and sent again)."""
        return _py_markers(self._scanner._markers, self._scanner.region_markers())

    def _announce(
        self,
        region: int,
        start: int,
        name: str,
        echo: Any,
        follow: Any,
        at: int,
        events: list[Event],
        text: str | None = None,
        json_tags: Any = None,
        written: str | None = None,
    ) -> None:
        """A CallStart for a call of the region starting at `region`, its own starting at
        `start`, and the arguments its text so far (`text`, from `at` where they begin: the
        scanner's unless given) makes certain. `json_tags`: the JsonTags its opener matched
        (the next call of the block is looked for with them); `written`: the id the model
        wrote (Kimi K2's), which parse() keeps."""
        call_id = written if written is not None else self._id(name, start, len(self._announced))
        early = _Early(self._calls, region, start, name, call_id, echo, follow)
        early.json_tags, early.written = json_tags, written
        self._announced.append(early)
        self._open_ids.add(early.id)
        self._calls += 1
        events.append(CallStart(early.index, name, early.id))
        if text is None:
            text = self._scanner.text_from(at)  # (once a region: later calls' text is their _Follow's)
        early.end = at + len(text)
        if echo is not None:
            early.echo_more(text, events)
        if follow is not None:
            follow.feed(text)

    def _next(self, events: list[Event]) -> None:
        """announce="name", in a block of several XML-ish calls (MiniMax's <minimax:tool_call>,
        DSML's, Kimi K3's, Qwen3-Coder's <tool_call>…): the next call, announced once its
        opener follows the close of the one being written, after blanks, and a tag follows
        it (Tags.next). Its span, and so its id, start at its opener, as parse() gives it.
        If the block is then read otherwise (the close was a value's text, the region
        fails), it is withdrawn like any announced call."""
        while True:
            last = self._announced[-1]
            follow = last.follow
            got = follow.find() if follow is not None else None
            if got is None:
                return
            start, name, rest_at, text = got
            last.follow = last.echo = None  # (that call ended: the rest of it comes with the block's end)
            if self._tools is not None and name not in self._tools:
                return  # (not a call: it and the calls after it come as the block's end gives them)
            tags = follow.tags
            if type(follow) is _NextObject:  # (a JSON call object, or one after its opener: _NextObject)
                written = follow.written
                if written is not None and (written in self._ids or written in self._open_ids):
                    return  # (see _repeats)
                echo = JsonEcho(tags.markers if tags is not None else self._markers)
                self._announce(last.region, start, name, echo, None, rest_at, events, text, tags, written)
            elif type(follow) is _PyFollow:  # (the next Python-style call of a list)
                echo = PyEcho(self._tools.schema(name) if self._tools is not None else None, self._py_markers())
                self._announce(last.region, start, name, echo, _PyFollow(tags, rest_at), rest_at, events, text)
            else:
                written = follow.written  # (an id the model wrote in the opener: Cohere's)
                if written is not None and (written in self._ids or written in self._open_ids):
                    return  # (see _repeats)
                echo = XmlParamEcho(self._tools.schema(name) if self._tools is not None else None, tags)
                self._announce(last.region, start, name, echo, _Follow(tags, rest_at), rest_at, events, text, None, written)

    def _list_next(self, events: list[Event]) -> None:
        """announce="name", in a JSON list of call objects (Mistral's `[TOOL_CALLS] [{…}, {…}]`):
        each call once its id is certain (_ListCalls), in the list's order. A call that cannot
        be (a name not offered, an id a call before it has) stops this for the rest of the
        list: those calls come whole, at the region's end, so that the indexes keep
        parse()'s order."""
        listed = self._list
        while True:
            got = listed.find()
            if got is None:
                return
            start, name, written, at, text = got
            # (the first call's span starts where the region does: it holds the markers)
            start = listed.region if start == listed.first else start
            if (self._tools is not None and name not in self._tools) or (
                written is not None and (written in self._ids or written in self._open_ids)
            ):
                listed.stop()
                return
            if type(text) is str:
                # ("name" and "id" before the arguments: those stream from their `{`)
                self._announce(listed.region, start, name, JsonEcho(listed.tags.markers), None, at, events, text, None, written)
                self._announced[-1].listed = True
            else:
                # (the object closed: its name, id and arguments at once)
                self._announce(listed.region, start, name, None, None, at, events, "", None, written)
                early = self._announced[-1]
                early.listed = True
                out = arguments_json(text)
                early.sent.append(out)
                events.append(ArgumentsDelta(early.index, out))

    def _moved(self, at: int) -> bool:
        """Whether the first call announced moves to `at`, its own opener (True: moved).

        The first call of a block is announced with the block's start, which parse() gives
        it when the block reads. Where the block then breaks after it (a close tag of no
        element opened: `<cofl:tool_calls><cofl:tool_call id="0" name="f"></cofl:value>`),
        the call's own opener begins a region of its own (a lone call, as the format reads
        it), and parse() keeps the call there, its span from that opener: the same call, the
        same index; and the same id where the model wrote it (a generated id is made from
        where the call starts: such a call is withdrawn). So a call with the model's id is
        only withdrawn for text from its own opener on (_items), and a region or a call that
        begins there is its own (_early_look, _settle)."""
        announced = self._announced
        early = announced[0]
        if early.own == early.start or early.own != at:
            return False
        for later in announced:
            later.region = at
        early.start = at
        return True

    def _repeats(self, got: tuple) -> bool:
        """Whether early_call's answer holds an id the model wrote that a call before it has
        (Kimi K2 numbering every call `functions.f:0`): the message gives that call another
        id, made from where it starts and ends (toolgram.openai's _UniqueIds), so it comes
        whole, with its end."""
        written = got[5] if len(got) > 5 else None
        return written is not None and (written in self._ids or written in self._open_ids)

    def _id(self, name: str, start: int, ahead: int = 0, kind: str = "tool") -> str:
        """The id result.to_openai_message() gives the call `ahead` places after the next
        call done, when the model wrote none: generated from its name, kind and start, and
        made unique with its place in result.calls as the message does (two calls at one
        place)."""
        got = id_for(name, start, kind, self._salt)
        if got in self._ids or got in self._open_ids:
            return id_for(name, start, kind, place_salt(self._salt, self._done + ahead))
        return got

    def _cancel(self, events: list[Event], upto: int | None = None) -> None:
        """Withdraw the announced calls (those starting at or before `upto`: the head of
        the list, as a region's items come in order)."""
        announced = self._announced
        n = len(announced)
        if upto is not None:
            n = 0
            while n < len(announced) and announced[n].start <= upto:
                n += 1
        for early in announced[:n]:
            events.append(CallCancelled(early.index))
            self._open_ids.discard(early.id)
        del announced[:n]

    def _break(self, exc: Exception, events: list[Event]) -> None:
        # A bug of ours must not cost the user the reply. parse() would keep the
        # whole reply as prose; what was already sent stands, the rest is prose.
        message = f"Couldn't read a tool call: internal error ({type(exc).__name__})."
        self._asm.errors.append(message)
        events.append(Error(message))
        unread = self._scanner.unread()
        taken = self._seen  # (the text that crossed max_chars is not counted yet)
        self._stop(_BROKEN)
        if unread:
            self._items([Piece("text", taken - len(unread), taken, unread)], events)

    def _end_run(self) -> None:
        if self._run_end >= 0:
            self._asm.run(self._run_kind, self._run_start, self._run_end)
            self._run_end = -1

    def _items(self, items: list, events: list[Event]) -> None:
        self._end_run()
        add = self._asm.add
        begin = len(events)
        runs = False  # a Text after a Text, or a Reasoning after a Reasoning (joined below)
        for item in items:
            announced = self._announced
            if announced and type(item) not in (ToolCall, Region) and item.start >= announced[0].own:
                # An announced call's region is over, and what it gave there is prose or an
                # error. (A call, or a region holding calls, is settled below; a region
                # that gives no call, by _early_look after the feed.)
                self._cancel(events, item.start)
            for kind, value in add(item):
                if kind == "text":
                    runs = runs or (events and type(events[-1]) is Text)
                    events.append(Text(value))  # (runs of them are joined below)
                elif kind == "reasoning":
                    runs = runs or (events and type(events[-1]) is Reasoning)
                    events.append(Reasoning(value))
                elif kind == "call":
                    if self._announced and self._settle(value, events):
                        continue
                    index = self._calls
                    self._calls += 1
                    call_id = value.id or self._id(value.name, value.span[0], 0, value.kind)
                    self._ids.add(call_id)
                    self._done += 1
                    # (The three events made as their classes' __init__ would, each given
                    # its fields at once: a frozen dataclass sets each through
                    # object.__setattr__, and a call in a stream makes three, at its end.)
                    start, delta, done = _new(CallStart), _new(ArgumentsDelta), _new(CallDone)
                    _set(start, "__dict__", {"index": index, "name": value.name, "id": call_id})
                    _set(delta, "__dict__", {"index": index, "text": arguments_json(value.arguments)})
                    _set(done, "__dict__", {"index": index, "call": value})
                    events += (start, delta, done)
                else:
                    events.append(Error(value))
        if runs:
            _join_runs(events, max(begin - 1, 0))

    def _settle(self, value: ToolCall, events: list[Event]) -> bool:
        """A call of the region read, against the calls announced in it: True when it is the
        first of them (same start, name, kind, no id of the model's, and its arguments
        start with what was sent), done here; else those before it are withdrawn (the
        region did not give them), and it too if it starts where one was announced (the
        calls announced after it with it); a call before them all withdraws them all."""
        start = value.span[0]
        announced = self._announced
        self._moved(start)
        if announced[0].start > start:
            # A call before those announced (the block was read otherwise): they are
            # withdrawn, so that the indexes keep the order of result.calls; it is sent whole.
            self._cancel(events)
            return False
        self._cancel(events, start - 1)
        if not announced or announced[0].start != start:
            return False
        early = announced[0]
        arguments = arguments_json(value.arguments)
        sent = "".join(early.sent)
        if early.name != value.name or value.id != early.written or value.kind != "tool" or not arguments.startswith(sent):
            # (withdrawn, and the calls announced after it too: it is sent again whole, at
            # the next index, and the CallDone events keep the order of result.calls)
            self._cancel(events)
            return False
        # (announced already, and what was sent of its arguments stands)
        del announced[0]
        self._open_ids.discard(early.id)
        self._ids.add(early.id)
        self._done += 1
        if len(arguments) > len(sent):
            events.append(ArgumentsDelta(early.index, arguments[len(sent) :]))
        events.append(CallDone(early.index, value))
        return True


def _join_runs(events: list[Event], i: int) -> None:
    """Join each run of Text events from events[i] on into one, and each run of Reasoning
    events: what adding each to the last one made, with one join a run. (Added one by
    one, a reply that settles into many pieces at once, at its end, was copied whole for
    each: the square of the text.)"""
    out: list[Event] = []
    run: list[str] = []  # the texts of the run out[-1] starts
    for event in events[i:]:
        kind = type(event)
        if kind is Text or kind is Reasoning:
            if run and kind is type(out[-1]):
                run.append(event.text)
                continue
            if len(run) > 1:
                out[-1] = type(out[-1])("".join(run))
            run = [event.text]
        else:
            if len(run) > 1:
                out[-1] = type(out[-1])("".join(run))
            run = []
        out.append(event)
    if len(run) > 1:
        out[-1] = type(out[-1])("".join(run))
    events[i:] = out


class _Early:
    """announce="name": a call announced by its name, not done yet: its index, its
    region's start and its own (the same for the first call of a region: it holds the
    region's opening markers), its name, its id, the pieces of its arguments sent so far
    (JsonEcho, XmlParamEcho: what json.dumps would write of them, as far as it is certain;
    joined once, at the call's end), and what looks for the next call of its block."""

    __slots__ = ("index", "region", "start", "own", "name", "id", "echo", "sent", "follow", "end", "json_tags", "written", "listed")

    def __init__(self, index: int, region: int, start: int, name: str, id: str, echo: Any, follow: Any) -> None:
        self.index, self.region, self.start, self.name, self.id = index, region, start, name, id
        # Where the call's own opener begins: after the region's start markers for the first
        # call of a block whose id the model wrote (see StreamParser._moved); else its start.
        self.own = start
        self.echo: JsonEcho | XmlParamEcho | None = echo
        self.sent: list[str] = []
        self.follow: _Follow | _NextObject | None = follow
        self.end = start  # where the text fed to the echo ends, in the reply
        self.json_tags: JsonTags | None = None  # (a JSON object after a declared opener: see _NextObject)
        self.written: str | None = None  # the id the model wrote, when the opener holds one
        self.listed = False  # (a call of a JSON list: _ListCalls finds the next, not _NextObject)

    def echo_more(self, text: str, events: list[Event]) -> None:
        echo = self.echo
        out = echo.feed(text)
        if out:
            self.sent.append(out)
            events.append(ArgumentsDelta(self.index, out))
        if echo.stopped or echo.done:
            self.echo = None  # (the rest comes with the call's end)
            if echo.done and type(echo) is JsonEcho and not self.listed:
                # (its arguments closed: another call object may follow this one's close)
                self.follow = _NextObject(self.end - len(echo.rest), self.json_tags)
                self.follow.feed(echo.rest)


_FOLLOW_HOLD = 1024  # what _Follow keeps of a match that may go on, at most; past it, it stops


class _Follow:
    """announce="name": where the next call of a block begins, after the call being written:
    at the first close of a call after its opener (its own close, unless a value holds that
    text), the next call's opener after blanks, and a tag (Tags.next). Anything else there
    stops it: the calls after come with the block's end, so that no call is announced past
    one that is not (the indexes keep parse()'s order). Fed the text from the reply's
    position `at` on; only what may still begin the close or the match is kept: work in
    proportion to the text fed."""

    __slots__ = ("tags", "at", "tail", "written")

    def __init__(self, tags: Any, at: int) -> None:
        self.tags = tags
        self.at = at  # where tail starts in the reply
        self.tail: str | None = ""  # (None: stopped)
        self.written: str | None = None  # (the id the model wrote in the next call's opener)

    def feed(self, text: str) -> None:
        if self.tail is not None:
            self.tail += text

    def find(self) -> tuple | None:
        """(the next call's start, its name, where its parameters begin, the text from
        there), once it shows; else None."""
        tail = self.tail
        if not tail:
            return None
        close = self.tags.call_close
        i = tail.find(close)
        if i < 0:
            keep = max(0, len(tail) - len(close) + 1)  # (a close its end may yet complete)
            self.at += keep
            self.tail = tail[keep:]
            return None
        return self._next(self.tags.next, tail, i)

    def _next(self, pattern: Any, tail: str, i: int = 0) -> tuple | None:
        """find()'s answer where the next call's match, `pattern`, begins at tail[i]: None
        while it may still come (the text before i dropped), and for good once it cannot."""
        m = pattern.match(tail, i, partial=True)
        if m is None or (m.partial and len(tail) - i > _FOLLOW_HOLD):
            self.tail = None  # (not a call next, or not yet after too long: never more)
            return None
        if m.partial:
            if i:
                self.at += i
                self.tail = tail[i:]
            return None
        return self._found(m, tail)

    def _found(self, m: Any, tail: str) -> tuple:
        """What find() answers for the next call's match m in tail."""
        own = "open" if self.tags is None else self.tags.own  # (where parse() starts the call)
        if "id" in m.re.groupindex:
            self.written = m.group("id")
        return self.at + m.start(own), m.group("name"), self.at + m.start("rest"), tail[m.start("rest") :]


# After a call object's arguments: its close, a separator (as Builder's _SEPARATOR), and the
# next call object's start, as Scanner.early_call takes it (group `rest`: its arguments).
_NEXT_OBJECT = regex.compile(
    r'[ \t\r\n]*\}[ \t\r\n]*[;,]?[ \t\r\n]*(?P<open>\{)[ \t\r\n]*"name"[ \t\r\n]*:[ \t\r\n]*'
    r'"(?P<name>[A-Za-z0-9_][A-Za-z0-9_.\-:/]{0,127})"[ \t\r\n]*,[ \t\r\n]*"(?:arguments|parameters)"[ \t\r\n]*:'
    r"[ \t\r\n]*(?P<rest>\{)"
)


class _NextObject(_Follow):
    """announce="name": the next call object of a region of several (`<tool_call>{…}\n{…}`,
    Builder's several_objects), right after the call object whose arguments just closed
    (_NEXT_OBJECT), or, with a format's JsonTags (`stream_json:`), the next call's opener
    and its arguments' `{` right after the arguments that closed (JsonTags.next: Kimi K2's
    `<|tool_call_end|><|tool_call_begin|>functions.x:1<|tool_call_argument_begin|>{`);
    anything else there stops it. Fed the text from the reply's position `at` on (where
    those arguments closed); what it keeps is at most _FOLLOW_HOLD characters."""

    __slots__ = ()

    def __init__(self, at: int, tags: JsonTags | None = None) -> None:
        super().__init__(tags, at)

    def find(self) -> tuple | None:
        """(the next call's start, its name, where its arguments begin, the text from
        there), once it shows; else None."""
        tail = self.tail
        if not tail:
            return None
        return self._next(_NEXT_OBJECT if self.tags is None else self.tags.next, tail)


_PY_OPEN, _PY_CLOSE = frozenset("([{"), frozenset(")]}")


class _PyFollow(_Follow):
    """announce="name": the next call of a list of Python-style calls (`[f(a=1), g(b="x)")]`):
    the call being written ends at the `)` that closes its `(` (brackets counted, quotes
    respected: pycall's PYVALUE), and the next is a comma, blanks, its name and `(`
    (PyTags.next); anything else there stops it. A string that may be triple-quoted (the
    same quote three times) stops it too: such a string holds quotes this reader does not
    follow. Fed the text from the call's `(` on; each character is looked at once, and only
    what may still begin the match is kept (at most _FOLLOW_HOLD characters)."""

    __slots__ = ("depth", "quote", "escape", "run")

    def __init__(self, tags: Any, at: int) -> None:
        super().__init__(tags, at)
        self.depth = 0  # brackets open (-1: the call closed)
        self.quote = ""  # the quote of the string being read
        self.escape = False  # a backslash in a string, its character not seen yet
        self.run = ""  # the last two characters read

    def find(self) -> tuple | None:
        tail = self.tail
        if not tail:
            return None
        if self.depth >= 0:
            i = self._skip(tail)
            if self.tail is None:
                return None
            if i < 0:
                self.at += len(tail)
                self.tail = ""
                return None
            self.at += i
            self.tail = tail = tail[i:]
            self.depth = -1
        return self._next(self.tags.next, tail)

    def _skip(self, text: str) -> int:
        """Read on inside the call: where its closing `)` ends in text, or -1."""
        depth, quote, escape, run = self.depth, self.quote, self.escape, self.run
        for i, ch in enumerate(text):
            last = run
            run = (run + ch)[-2:]  # (the last two characters: an empty string before a quote)
            if quote:
                if escape:
                    escape = False
                elif ch == "\\":
                    escape = True
                elif ch == quote:
                    quote = ""
            elif ch == "'" or ch == '"':
                if last == ch * 2:
                    self.tail = None  # (a triple quote, or so it may be: not followed)
                    return -1
                quote = ch
            elif ch in _PY_OPEN:
                depth += 1
            elif ch in _PY_CLOSE:
                depth -= 1
                if depth == 0:
                    return i + 1
        self.depth, self.quote, self.escape, self.run = depth, quote, escape, run
        return -1


# The head of a list's call object whose "name" and "id" come before its arguments (either
# order): the call can be announced at the arguments' `{` (group `rest`), its id known.
_B = r"[ \t\r\n]*"
_LIST_NAME = rf'"name"{_B}:{_B}"(?P<name>[A-Za-z0-9_][A-Za-z0-9_.\-:/]{{0,127}})"'
_LIST_ID = rf'"id"{_B}:{_B}"(?P<id>[A-Za-z0-9_.\-:]{{1,128}})"'
_LIST_HEAD = regex.compile(
    rf"\{{{_B}(?:{_LIST_NAME}{_B},{_B}{_LIST_ID}|{_LIST_ID}{_B},{_B}{_LIST_NAME}){_B},{_B}"
    rf'"arguments"{_B}:{_B}(?P<rest>\{{)'
)
_LIST_NAME_RE = regex.compile(r"[A-Za-z0-9_][A-Za-z0-9_.\-:/]{0,127}")
_LIST_ID_RE = regex.compile(r"[A-Za-z0-9_.\-:]{1,128}")
_LIST_KEYS = frozenset(("name", "arguments", "id"))
_LIST_HEAD_SPAN = 300  # (how far an object's head is looked at for its name and id)
_JSON_STRUCT = regex.compile(r'[{}\[\]"]')
_JSON_IN_STRING = regex.compile(r'["\\]')
_LIST_BLANKS = frozenset(" \t\r\n")


class _Twice(ValueError):
    pass


def _no_twice(pairs: list) -> dict:
    """A JSON object that gives no key twice (JSON keeps the last: not followed here)."""
    out = dict(pairs)
    if len(out) != len(pairs):
        raise _Twice
    return out


def _no_constant(name: str) -> Any:
    raise _Twice  # (NaN, Infinity: not JSON; parse() repairs them)


class _ListCalls:
    """announce="name": the call objects of a JSON list after a format's start markers
    (`stream_json_list:`; Mistral before v11: `[TOOL_CALLS] [{"name": …, "arguments": {…},
    "id": "…"}, …]`), each found once its id is certain: at its closing `}`, read as JSON
    (a call object of "name", "arguments" and "id" alone, the name a plain one, the
    arguments an object, the id absent, null or a plain word); or at its arguments' `{` when
    its "name" and "id" come first (_LIST_HEAD: its arguments stream from there, JsonEcho).
    Mistral Nemo writes the id after the arguments, so the arguments' `{` does not tell it.
    Between two objects only blanks and a `,`; anything else there (or an object this does
    not read, or a marker of the format inside one) stops it for good, and `]` ends it: the
    calls after come with the region's end. Fed the text from the first object's `{` on;
    each character is looked at once (an object's text is kept until it closes)."""

    __slots__ = ("region", "first", "tags", "at", "phase", "depth", "quote", "escape", "obj", "obj_at", "head", "found")

    def __init__(self, region: int, at: int, tags: JsonTags) -> None:
        self.region = region  # where the region starts, in the reply
        self.first = at  # where the first object's `{` is
        self.tags = tags
        self.at = at  # where the next text fed starts, in the reply
        self.phase = "open"  # "open" (a `{` next), "in" (an object), "after" (a `,` or `]` next), "" (stopped)
        self.depth = 0
        self.quote = False
        self.escape = False
        self.obj: list[str] = []  # the object's text so far
        self.obj_at = -1
        self.head = False  # (the object's head looked at: announced from it, or not)
        self.found: list[tuple] = []  # (start, name, written id, where the arguments begin, their text or value)

    def stop(self) -> None:
        self.phase = ""
        self.found = []
        self.obj = []

    def find(self) -> tuple | None:
        return self.found.pop(0) if self.found else None

    def feed(self, text: str) -> None:
        at = self.at
        self.at += len(text)
        i, n = 0, len(text)
        while i < n and self.phase:
            phase = self.phase
            if phase == "in":
                i = self._inside(text, i, at)
                continue
            ch = text[i]
            if ch in _LIST_BLANKS:
                i += 1
                continue
            if phase == "open" and ch == "{":
                self.phase, self.depth, self.quote, self.escape = "in", 0, False, False
                self.obj, self.obj_at, self.head = [], at + i, False
            elif phase == "after" and ch == ",":
                self.phase = "open"
                i += 1
            elif phase == "after" and ch == "]":
                self.phase = ""  # (the list's end: what follows is the region's)
            else:
                self.stop()
        if self.phase == "in" and not self.head:
            self._look_at_head()

    def _inside(self, text: str, i: int, at: int) -> int:
        """Read on in the object from text[i]: where the reading stopped (its close, or n)."""
        n = len(text)
        begin = i
        while i < n:
            if self.quote:
                if self.escape:
                    self.escape = False
                    i += 1
                    continue
                m = _JSON_IN_STRING.search(text, i)
                if m is None:
                    i = n
                    break
                i = m.start()
                if text[i] == "\\":
                    self.escape = True
                else:
                    self.quote = False
                i += 1
                continue
            m = _JSON_STRUCT.search(text, i)
            if m is None:
                i = n
                break
            i = m.start()
            ch = text[i]
            i += 1
            if ch == '"':
                self.quote = True
            elif ch in "{[":
                self.depth += 1
            else:
                self.depth -= 1
                if self.depth == 0:
                    self.obj.append(text[begin:i])
                    self._closed()
                    return i
        self.obj.append(text[begin:i])
        return i

    def _look_at_head(self) -> None:
        obj = "".join(self.obj)
        self.obj = [obj]
        m = _LIST_HEAD.match(obj, partial=True)
        if m is None or (m.partial and len(obj) > _LIST_HEAD_SPAN):
            self.head = True  # (not so: the object is read at its close)
        elif not m.partial:
            self.head = True
            rest = m.start("rest")
            self.found.append((self.obj_at, m.group("name"), m.group("id"), self.obj_at + rest, obj[rest:]))
            self.obj_at = -1  # (announced: not again at its close)

    def _closed(self) -> None:
        """The object closed: a call found, unless it was at its head; or not one: stop."""
        obj = "".join(self.obj)
        self.obj = []
        self.phase = "after"
        if self.obj_at < 0:
            return
        markers = self.tags.markers
        try:
            value = json.loads(obj, object_pairs_hook=_no_twice, parse_constant=_no_constant)
        except ValueError:
            value = None
        ok = type(value) is dict and value.keys() <= _LIST_KEYS and not any(m in obj for m in markers)
        name = value.get("name") if ok else None
        arguments = value.get("arguments") if ok else None
        written = value.get("id") if ok else None
        if (
            type(name) is not str
            or not _LIST_NAME_RE.fullmatch(name)
            or type(arguments) is not dict
            or not (written is None or (type(written) is str and _LIST_ID_RE.fullmatch(written)))
        ):
            self.stop()
            return
        self.found.append((self.obj_at, name, written, self.obj_at, arguments))
