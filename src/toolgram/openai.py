"""A reply read by toolgram, in the OpenAI chat-completions shape: whole or streamed.

    from toolgram.openai import completion, CompletionStream

    completion(toolgram.parse(raw, tools), model="qwen3")   # a "chat.completion" object

    stream = CompletionStream(tools, model="qwen3")
    for delta in deltas:                                    # the model's raw text, in pieces
        for chunk in stream.feed(delta):                    # "chat.completion.chunk" objects
            send(chunk)
    for chunk in stream.close():                            # the last ones, finish_reason
        send(chunk)

What a client gets (docs/api.md):

  * `tool_calls` entries with ids equal to those of `completion(parse(whole_reply))`
    given the same `salt`: the model's own id when it wrote one, otherwise one derived
    from the call (see ToolCall.to_openai) and the salt. Without a salt the ids are
    parse()'s, which depend only on the call's name, kind and place in the reply: two
    replies that open with the same call give it the same id, and an agent that keys
    tool results by id across turns mixes them up. A server passes a salt of its own
    per response (`toolgram serve`: a random one, the response's `chatcmpl-` id); the
    whole and the streamed form of one response agree when given the same one. Ids are
    unique within a message: a model-written id repeated by a later call is replaced by a
    generated one there, told in the extension field's `repeated_ids`;
    `finish_reason` "tool_calls" when there are calls, else "stop" (or the backend's
    own); a backend's "length" (or "content_filter") is kept even with calls, as
    OpenAI's API does: the reply was cut, maybe inside a call;
  * the errors and repairs, which OpenAI's shape has no field for, in an extension
    field `"toolgram": {"errors": [...], "repairs": [{"index", "repairs"}]}` of the
    message (of the delta, in a stream), left out when both are empty. The official
    `openai` SDK keeps unknown fields: `message.model_extra["toolgram"]`. An agent can
    send the errors back to the model (a call to a tool that does not exist, a call that
    could not be read) instead of losing them.

The stream's contract (the default, `arguments="as_written"`; StreamParser's
announce="name"): nothing sent is taken back. A call gets its first chunk (`index`, `id`,
`name`, empty `arguments`) once its name is certain, and these never change and are never
given to another call; its arguments then come as `arguments` deltas as the model writes
them, in the formats that can stream them (a call written as a JSON object whose name
comes first: hermes, longcat, fenced_json, fenced_plain; JSON arguments after an opener
its format's header declares: Llama 3 JSON, Kimi K2, Mistral's NAME[ARGS], harmony,
DeepSeek V3 and V3.1, Functionary v3.1's <function=NAME> and v3.2's >>>NAME, InternLM, PLaMo 3,
GigaChat; JSON lists of call objects: Granite, Nemotron, Jamba, Apriel, xLAM, Command R, Cohere,
Apertus, functools; XML-ish parameters of
tags its format's header declares, per parameter: Qwen3-Coder, Seed-OSS, GLM, MiniMax M2,
DSML, Kimi K3, dots.llm, MiniCPM5, Step-3, Hunyuan Hy3; the keyword arguments of a list of
Python-style calls: pythonic, Llama 4, LFM2, OLMo 3, a ```python fence); every other format sends a call
whole, in one chunk, from the delta that ends it (the formats table's *streams arguments*
column, docs/formats.md). Concatenated, a call's argument deltas equal the final
arguments, and they become valid JSON only when the call completes: its last character is
held until then. A call that fails after it was sent (a stray quote, a second "name", a
tool not offered...) is withdrawn in the extension field,
`"toolgram": {"withdrawn": [{"index", "id", "error"}], "errors": [...]}`, its JSON never
completes (so a client that ignores the extension cannot run it), what its text was follows
(content and an error, or a call at the next index), and its index is not given again
(so indexes, those of `repairs` too, count the withdrawn calls). `finish_reason` is
"tool_calls" only when some call completed. (docs/streaming.md, "Arguments as written".)

`arguments="whole"` is the opt-out (StreamParser's announce="done"): a call is sent once it
is certain, index, id, name and arguments in one chunk from the delta that ends its region,
and never withdrawn; the index is its place in parse()'s calls. No format makes a call
certain once its name is readable (docs/streaming.md, "Why a streamed call can be withdrawn"), so
this is what a client that cannot read the extension field should ask for.
`parallel_tool_calls=False` keeps the first call only, as OpenAI's API does; the others
are dropped and an error says so.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

from ._result.model import ParseResult
from ._result.openai import call_to_openai, id_for, place_salt, result_to_openai_message
from ._stream.parser import StreamParser
from .events import (
    ArgumentsDelta,
    CallCancelled,
    CallDone,
    CallStart,
    Error,
    Reasoning,
    Text,
)

__all__ = ["CompletionStream", "completion", "message"]


def message(result: ParseResult, *, parallel_tool_calls: bool = True, salt: str = "") -> dict[str, Any]:
    """The assistant message of `result` (ParseResult.to_openai_message), with the
    `toolgram` extension field when there are errors or repairs. `salt` goes into each
    generated id (see the module's docstring)."""
    kept = _kept(result, parallel_tool_calls)
    out = result_to_openai_message(kept, salt=salt)
    ids = _UniqueIds(salt)
    repeated = [ids.give(entry, call) for entry, call in zip(out.get("tool_calls", ()), kept.calls)]
    extension = _extension(kept.errors, list(enumerate(kept.calls)), [r for r in repeated if r])
    if extension:
        out["toolgram"] = extension
    return out


def completion(
    result: ParseResult,
    *,
    model: str = "",
    id: str | None = None,
    created: int | None = None,
    finish_reason: str | None = None,
    usage: dict[str, Any] | None = None,
    parallel_tool_calls: bool = True,
    salt: str = "",
) -> dict[str, Any]:
    """A `chat.completion` object of one choice holding `message(result, salt=salt)`.

    `finish_reason` is "tool_calls" when the message has calls, unless the one given says
    the reply was cut ("length", "content_filter"): that one is kept, as OpenAI does when
    the token limit cuts a call; otherwise the one given or "stop", never "tool_calls"."""
    msg = message(result, parallel_tool_calls=parallel_tool_calls, salt=salt)
    out: dict[str, Any] = {
        "id": id or _new_id(),
        "object": "chat.completion",
        "created": int(time.time()) if created is None else created,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": msg,
                "finish_reason": _finish(bool(msg.get("tool_calls")), finish_reason),
                "logprobs": None,
            }
        ],
    }
    if usage is not None:
        out["usage"] = usage
    return out


# The delta field each text-like event fills (an Error goes to the extension field).
_TEXT_DELTA = {Text: "content", Reasoning: "reasoning_content", Error: "toolgram"}


class CompletionStream:
    """A reply's raw text in, `chat.completion.chunk` objects out.

    Takes StreamParser's options (tools, formats=, max_chars=, in_think=, ...; not
    announce=), the chunks' `model`, `id` and `created`, the `salt` of generated call ids
    (as completion()'s), and `arguments`: "as_written" (the default: a call by its name
    once certain, then its arguments as written; a call that fails is withdrawn) or
    "whole" (each call in one chunk once certain, never withdrawn): see the module's
    docstring.
    `feed(delta)` returns the chunks that delta completes (possibly none); `close()`
    the last ones, the finish chunk included; `result` is then parse()'s ParseResult.
    Never raises for any text.
    """

    def __init__(
        self,
        tools: Any = None,
        *,
        model: str = "",
        id: str | None = None,
        created: int | None = None,
        parallel_tool_calls: bool = True,
        salt: str = "",
        arguments: str = "as_written",
        **options: Any,
    ) -> None:
        if "announce" in options:
            raise TypeError('CompletionStream takes arguments="whole" or "as_written", not announce=')
        if arguments not in ("whole", "as_written"):
            raise ValueError('arguments must be "as_written" (the default) or "whole"')
        options.pop("_salt", None)
        self._written = arguments == "as_written"
        announce = "name" if self._written else "done"
        self._parser = StreamParser(tools, _salt=salt, announce=announce, **options)
        self._base = {
            "id": id or _new_id(),
            "object": "chat.completion.chunk",
            "created": int(time.time()) if created is None else created,
            "model": model,
        }
        self._parallel = parallel_tool_calls
        self._started = False
        self._calls = 0  # calls sent
        self._dropped = 0  # calls left out (parallel_tool_calls=False)
        self._id = ""  # the id of the call started last (CallStart.id: the message's)
        self._ids = _UniqueIds(salt)  # the ids sent: a model-written id repeated gets another
        # arguments="as_written": the calls sent by their name and not done yet, by index
        # (several at once in a block of several calls: StreamParser announces each once
        # its name shows); and with parallel_tool_calls=False, those announced while another
        # was open or sent, not sent (one may yet be the first call: see _written_chunks).
        self._open: dict[int, CallStart] = {}
        self._held: dict[int, CallStart] = {}
        self._tail: dict[int, str] = {}  # (an open call's last argument character, not sent yet)
        self.result: ParseResult | None = None

    def feed(self, delta: str) -> list[dict[str, Any]]:
        """The chunks the next piece of the reply completes."""
        return self._chunks(self._parser.feed(delta))

    def close(self, finish_reason: str | None = None) -> list[dict[str, Any]]:
        """The last chunks: what the end of the reply settles, then the finish chunk
        (finish_reason as completion()'s: "tool_calls" when a call completed, a withdrawn
        one not counted, unless `finish_reason` is "length" or "content_filter"; else
        `finish_reason` or "stop", never "tool_calls").
        Sets `result`. Idempotent in effect: a second call returns no chunks."""
        if self.result is not None:
            return []
        chunks = self._chunks(self._parser.flush())
        self.result = self._parser.close()
        if self._dropped:
            chunks.append(self._chunk({"toolgram": {"errors": [_dropped_message(self._dropped)]}}))
        reason = _finish(bool(self._calls), finish_reason)
        chunks.append(self._chunk({}, finish_reason=reason))
        return chunks

    # -- internals ----------------------------------------------------------
    def _chunk(self, delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
        if not self._started:  # (OpenAI's first delta carries the role)
            self._started = True
            delta = {"role": "assistant", **delta}
        return {
            **self._base,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason, "logprobs": None}],
        }

    def _chunks(self, events: list[Any]) -> list[dict[str, Any]]:
        if self._written:
            return self._written_chunks(events)
        out: list[dict[str, Any]] = []
        for event in events:
            kind = type(event)
            if kind in _TEXT_DELTA:
                self._text_chunk(event, out)
            elif kind is CallStart:
                self._id = event.id
            elif kind is CallDone:
                # (CallStart and ArgumentsDelta come with it, from the same feed: the call
                # is sent whole, from its CallDone, with the id parse()'s message gives it.)
                out.extend(self._call(event.index, event.call))
        return out

    def _written_chunks(self, events: list[Any]) -> list[dict[str, Any]]:
        """arguments="as_written": a call's name chunk from its CallStart, its arguments as
        they come, a withdrawal in the extension field (see the module's docstring)."""
        out: list[dict[str, Any]] = []
        for at, event in enumerate(events):
            kind = type(event)
            if kind is ArgumentsDelta:
                if event.index in self._open and event.text:
                    # The arguments' last character is held until the call is done: what a
                    # withdrawn call sent is then never a whole JSON object, so a client that
                    # ignores the extension field cannot run it (json.loads refuses it).
                    text = self._tail.get(event.index, "") + event.text
                    self._tail[event.index] = text[-1]
                    self._arguments_chunk(event.index, text[:-1], out)
            elif kind in _TEXT_DELTA:
                self._text_chunk(event, out)
            elif kind is CallStart:
                if not self._parallel and (self._calls or self._open):
                    self._held[event.index] = event
                else:
                    entry = {"index": event.index, "id": event.id, "type": "function"}
                    repeated = self._ids.give(entry, _done_call(events, at), event.index)
                    self._open[event.index] = CallStart(event.index, event.name, entry["id"])
                    delta = {"tool_calls": [{**entry, "function": {"name": event.name, "arguments": ""}}]}
                    if repeated:
                        delta["toolgram"] = {"repeated_ids": [repeated]}
                    out.append(self._chunk(delta))
            elif kind is CallDone:
                if self._open.pop(event.index, None) is None:
                    held = self._held.pop(event.index, None)
                    if held is not None and not (self._calls or self._open):
                        # (parallel_tool_calls=False: the call open when it was announced was
                        # withdrawn, so this one is the first: sent whole)
                        self._id = held.id
                        out.extend(self._call(event.index, event.call, first=True))
                        continue
                    self._dropped += 1  # (parallel_tool_calls=False: a call after the first)
                    continue
                self._calls += 1
                self._arguments_chunk(event.index, self._tail.pop(event.index, ""), out)
                extension = _extension([], [(event.index, event.call)])
                if extension:
                    out.append(self._chunk({"toolgram": extension}))
            elif kind is CallCancelled:
                self._held.pop(event.index, None)
                self._tail.pop(event.index, None)
                start = self._open.pop(event.index, None)
                if start is not None:
                    self._ids.forget(start.id)
                    out.append(self._chunk({"toolgram": {"withdrawn": [_withdrawn(start)]}}))
        return out

    def _arguments_chunk(self, index: int, text: str, out: list[dict[str, Any]]) -> None:
        """arguments="as_written": `text` of call `index`'s arguments, in the chunk before
        when that chunk carries arguments of the same call (one chunk for what one feed gives)."""
        if not text:
            return
        last = out[-1]["choices"][0]["delta"] if out else {}
        sent = last.get("tool_calls")
        if sent and sent[0]["index"] == index and "toolgram" not in last:
            sent[0]["function"]["arguments"] += text
        else:
            out.append(self._chunk({"tool_calls": [{"index": index, "function": {"arguments": text}}]}))

    def _text_chunk(self, event: Any, out: list[dict[str, Any]]) -> None:
        """The chunk of a Text, Reasoning or Error event, in either mode (none for empty text)."""
        if type(event) is Error:
            out.append(self._chunk({"toolgram": {"errors": [event.message]}}))
        elif event.text:
            out.append(self._chunk({_TEXT_DELTA[type(event)]: event.text}))

    def _call(self, index: int, call: Any, first: bool = False) -> list[dict[str, Any]]:
        if not self._parallel and index > 0 and not first:
            self._dropped += 1
            return []
        entry = {**call_to_openai(call), "id": self._id}
        repeated = self._ids.give(entry, call, index)
        self._calls += 1
        delta: dict[str, Any] = {"tool_calls": [{"index": index, **entry}]}
        extension = _extension([], [(index, call)], [repeated] if repeated else [])
        if extension:
            delta["toolgram"] = extension
        return [self._chunk(delta)]


def _kept(result: ParseResult, parallel_tool_calls: bool) -> ParseResult:
    """`result` with its first call only, when parallel calls are off."""
    if parallel_tool_calls or len(result.calls) <= 1:
        return result
    dropped = len(result.calls) - 1
    return ParseResult(
        text=result.text,
        calls=result.calls[:1],
        errors=[*result.errors, _dropped_message(dropped)],
        reasoning=result.reasoning,
        segments=result.segments,
    )


def _withdrawn(start: CallStart) -> dict[str, Any]:
    return {
        "index": start.index,
        "id": start.id,
        "error": f"Tool call {start.index} ({start.name!r}) was withdrawn: its text did not turn out to be "
        "that call. Drop it; what the text was follows (content, an error, or a call at a new index).",
    }


def _dropped_message(n: int) -> str:
    return f"parallel_tool_calls is false: only the first tool call was kept, {n} more dropped."


def _extension(errors: list[str], calls: list[tuple[int, Any]], repeated: list[dict[str, Any]] = ()) -> dict[str, Any]:
    repairs = [{"index": i, "repairs": list(call.repairs)} for i, call in calls if call.repairs]
    out: dict[str, Any] = {}
    if errors:
        out["errors"] = list(errors)
    if repairs:
        out["repairs"] = repairs
    if repeated:
        out["repeated_ids"] = list(repeated)
    return out


class _UniqueIds:
    """The ids of one message's calls, unique: tool results are keyed by `tool_call_id`,
    and two calls sharing one (a model that numbers every call `functions.f:0`, or writes
    one MFCS call_id twice) have their results mixed up, or the next request refused. The
    first call keeps the id the model wrote; a repeat gets the id a call without one gets
    (generated_id: name, kind, start and the response's salt; its place too where that
    is taken), and is told in the extension field as {"index", "id", "written"}. The
    message and the stream give calls in the same order, so they agree."""

    def __init__(self, salt: str) -> None:
        self.salt = salt
        self.seen: set[str] = set()
        self.place = 0  # the calls given so far: a call's place in the message

    def give(self, entry: dict[str, Any], call: Any, index: int | None = None) -> dict[str, Any] | None:
        """Make entry["id"] unique (call: the ToolCall, None when not known); the
        extension's record of a repeat renamed, else None."""
        place, self.place = self.place, self.place + 1
        written = entry["id"]
        if written not in self.seen or call is None or not call.id:
            self.seen.add(written)
            return None
        got = id_for(call.name, call.span[0], call.kind, self.salt)
        if got in self.seen:
            got = id_for(call.name, call.span[0], call.kind, place_salt(self.salt, place))
        self.seen.add(got)
        entry["id"] = got
        return {"index": place if index is None else index, "id": got, "written": written}


    def forget(self, call_id: str) -> None:
        """A call given `call_id` was withdrawn: the message holds no such call, and the call
        sent again whole in its place (a Kimi K2 call, `functions.f:0`) keeps the id."""
        self.seen.discard(call_id)
        self.place -= 1


def _done_call(events: list[Any], at: int) -> Any:
    """The call of the CallDone that follows the CallStart at events[at] in the same feed
    (a call given an id the model wrote before is never announced early, see
    StreamParser._repeats: its three events come together), or None."""
    index = events[at].index
    for event in events[at + 1 :]:
        if type(event) is CallDone and event.index == index:
            return event.call
        if type(event) is CallStart:
            return None
    return None


def _new_id() -> str:
    return "chatcmpl-" + uuid.uuid4().hex


# A backend's finish reasons that say the reply was cut before the model ended it.
_CUT = ("length", "content_filter")


def _finish(calls: bool, finish_reason: str | None) -> str:
    """The finish_reason of a message: a cut reply's own even with calls (OpenAI answers
    "length" when max_tokens cuts a call, and its SDK's parse helpers raise on it; a call
    the end cut and truncated="repair" kept must not pass for a finished one), else
    "tool_calls" when there are calls."""
    if finish_reason in _CUT:
        return finish_reason
    return "tool_calls" if calls else _no_calls(finish_reason)


def _no_calls(finish_reason: str | None) -> str:
    """The finish_reason of a message with no tool calls: the backend's, but never
    "tool_calls" (a backend that read calls of its own, which toolgram does not pass on,
    says so; an agent loop that trusts it would look for calls that are not there)."""
    return "stop" if finish_reason in (None, "tool_calls") else finish_reason
