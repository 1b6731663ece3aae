"""ToolCall and ParseResult as OpenAI chat-completions objects.

So that a local model's reply read by parse() can be handed to code written for an
OpenAI-compatible server (an agent loop, a chat UI) without a second conversion layer.
"""

from __future__ import annotations

import hashlib
import json
import math
from typing import Any

ID_PREFIX = "call_"
ID_HEX_DIGITS = 24  # "call_" + 24 characters: the length of OpenAI's own ids


def call_to_openai(call: Any, *, _salt: str = "") -> dict[str, Any]:
    """`{"id", "type": "function", "function": {"name", "arguments": <JSON text>}}`.

    The id is the model's own when it wrote one (MFCS call_id, Mistral [CALL_ID]),
    otherwise `generated_id(call)`.
    """
    return {
        "id": call.id if call.id else generated_id(call, _salt=_salt),
        "type": "function",
        "function": {"name": call.name, "arguments": arguments_json(call.arguments)},
    }


def generated_id(call: Any, *, _salt: str = "") -> str:
    """`call_` + the first 24 hex digits of a SHA-256 of the call's name, kind and where
    its span starts.

    Deterministic rather than random: the same reply parsed twice (a retry, a stream
    replayed, a test snapshot) gives the same ids, while two calls at different places
    in one reply get different ones because their spans start at different places. Only
    what is known once a call's name has been read goes in (not its arguments, not where
    it ends): a stream can give a call its id before its arguments have arrived
    (toolgram.openai.CompletionStream, StreamParser's CallStart.id).
    """
    return id_for(call.name, call.span[0], getattr(call, "kind", "tool"), _salt)


# (json.dumps(x, ensure_ascii=False, default=repr), without making an encoder for each
# call: a stream gives each call its id as it is done.)
_ID_JSON = json.JSONEncoder(ensure_ascii=False, default=repr).encode


# (What that encoder writes of a str: the stdlib's own function for ensure_ascii=False.)
_QUOTE = json.encoder.encode_basestring


def id_for(name: str, start: int, kind: str = "tool", salt: str = "", _str=str, _int=int) -> str:
    """generated_id of a call named `name`, of that kind, whose span starts at `start`;
    with a `salt` (toolgram.openai's per-response one), a hash of the salt too."""
    if type(name) is _str and type(start) is _int and type(kind) is _str and type(salt) is _str:
        # What _ID_JSON writes of these four, written at once: its encode() and the
        # encoder it makes cost four times the hash (a stream gives an id to each call).
        canonical = f"[{_QUOTE(name)}, {start}, {_QUOTE(kind)}, {_QUOTE(salt)}]"
    else:
        canonical = _ID_JSON([name, start, kind, salt])
    return ID_PREFIX + hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()[:ID_HEX_DIGITS]


def place_salt(salt: str, index: int) -> str:
    """The salt of a generated id that collided with an earlier one of the message: made
    unique with the call's place. Unsalted, str(index) alone (the ids parse() has always
    given); salted per response, the response's salt and the place."""
    return f"{salt}#{index}" if salt else str(index)


def arguments_json(arguments: Any) -> str:
    """The arguments as JSON text, as OpenAI sends them; never raises."""
    try:
        return json.dumps(_jsonable(arguments), ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):
        # A circular structure, or one built by hand deeper than json.dumps goes
        # (no reader returns one: _build/depth.py).
        try:
            return json.dumps(str(arguments), ensure_ascii=False)
        except RecursionError:
            return json.dumps("<arguments nested too deeply to write>")


def result_to_openai_message(result: Any, *, salt: str = "") -> dict[str, Any]:
    """The whole reply as one assistant message.

    `{"role": "assistant", "content": text or None, "tool_calls": [...],
    "reasoning_content": reasoning}`: content is None when the prose is empty or only
    whitespace (OpenAI's convention for a tool-calls-only reply); `tool_calls` is left out
    when there are none (some servers reject an empty list); `reasoning_content` (the
    vLLM/DeepSeek field name) only when there was reasoning.

    Ids stay unique within the message: a generated id that collides with an earlier one
    (two identical calls built by hand, both with span (0, 0)) is re-hashed with the
    call's position. Ids the model wrote itself are kept verbatim, even if repeated,
    because the model refers back to them.

    `salt` goes into every generated id (toolgram.openai: one per response, so that two
    replies that open with the same call do not give it the same id); "" gives parse()'s
    deterministic ids.
    """
    message: dict[str, Any] = {"role": "assistant", "content": result.text if (result.text or "").strip() else None}
    tool_calls = []
    seen: set[str] = set()
    for index, call in enumerate(result.calls):
        entry = call_to_openai(call, _salt=salt)
        if not call.id and entry["id"] in seen:
            entry = call_to_openai(call, _salt=place_salt(salt, index))
        seen.add(entry["id"])
        tool_calls.append(entry)
    if tool_calls:
        message["tool_calls"] = tool_calls
    if result.reasoning:
        message["reasoning_content"] = result.reasoning
    return message


def _jsonable(value: Any) -> Any:
    """Arguments made JSON-ready: tuples and sets become lists, unknown objects their
    str, non-finite floats None. Walked with a stack of its own, not by recursion: a
    value as deep as a reader returns (VALUE_DEPTH, _build/depth.py) is converted
    whole, at any depth of the caller's stack, and nothing in it is cut short. A
    structure that holds itself raises ValueError (as json.dumps does)."""
    top: list[Any] = [None]
    on_path: set[int] = set()
    todo: list[tuple[Any, Any, Any]] = [(value, top, 0)]
    while todo:
        v, into, at = todo.pop()
        if into is None:  # (leaving a container: it is no longer on the path)
            on_path.discard(at)
            continue
        if isinstance(v, dict):
            out: Any = {}
            items: Any = ((str(k), x) for k, x in v.items())
        elif isinstance(v, (list, tuple)):
            out = [None] * len(v)
            items = enumerate(v)
        elif isinstance(v, (set, frozenset)):
            ordered = sorted(v, key=repr)
            out = [None] * len(ordered)
            items = enumerate(ordered)
        else:
            into[at] = _scalar(v)
            continue
        if id(v) in on_path:
            raise ValueError("circular reference")
        into[at] = out
        on_path.add(id(v))
        todo.append((None, None, id(v)))
        if isinstance(out, dict):
            for k, x in items:
                out[k] = None  # (the key's place, in order)
                todo.append((x, out, k))
        else:
            todo.extend((x, out, i) for i, x in items)
    return top[0]


def _scalar(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None  # NaN/Infinity are not JSON: a JavaScript client's JSON.parse would throw
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    return str(value)
