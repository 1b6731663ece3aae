"""A request's messages for a backend whose chat template has no tools (`serve --prompt`).

The tools are taught in the system prompt, in a format's call syntax (toolgram.prompts); a
template without tools renders only each message's role and text, so the rest of a tool
loop must be text too, written the way the prompt taught it:

  * an assistant message's `tool_calls`: the calls in the format's syntax, after its text;
  * `role: "tool"` messages: the results in one user message, in the format's result
    syntax (hermes `<tool_response>`, MFCS `<tool_result>`; render_results), else one
    plain block a result ("Result of get_weather (call id call_1):" and its text), merged
    with a user message that follows (templates that need roles to alternate refuse two);
  * the tools' prompt goes before the first system (or developer) message's text, in one
    system message, whatever the form of its content (text or a list of text parts).
"""

from __future__ import annotations

import json
from typing import Any

from .._tools.prompts import RESULT_FORMATS, render_prompt_calls, render_results

__all__ = ["for_prompt", "with_system"]


def for_prompt(messages: list[Any], format: str, system: str | None) -> list[Any]:
    """`messages` with their tool calls and results written as text in `format`, and
    `system` (the tools' prompt; None: none) merged into the system message."""
    out: list[Any] = []
    names: dict[str, str] = {}  # a call's id -> its name (a tool message gives only the id)
    results: list[dict[str, Any]] = []
    for message in messages:
        role = message.get("role") if isinstance(message, dict) else None
        if role == "tool":
            results.append(message)
            continue
        if results:
            out.append(_results(results, names, format))
            results = []
            if role == "user" and isinstance(message.get("content"), str):
                out[-1]["content"] += "\n\n" + message["content"]
                continue
        if role == "assistant" and message.get("tool_calls"):
            out.append(_assistant(message, names, format))
            continue
        out.append(message)
    if results:
        out.append(_results(results, names, format))
    return with_system(out, system) if system is not None else out


def _assistant(message: dict[str, Any], names: dict[str, str], format: str) -> dict[str, Any]:
    calls = []
    for call in message["tool_calls"]:
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(function, dict):
            continue
        arguments = function.get("arguments")
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments)
            except ValueError:
                pass  # (written as it came)
        name = str(function.get("name") or "")
        if call.get("id"):
            names[str(call["id"])] = name
        calls.append({"name": name, "arguments": arguments if arguments is not None else {}, "id": call.get("id")})
    text = _text(message.get("content"))
    written = render_prompt_calls(calls, format) or "\n".join(json.dumps(c, ensure_ascii=False) for c in calls)
    rest = {k: v for k, v in message.items() if k not in ("tool_calls", "function_call", "content")}
    return {**rest, "content": f"{text}\n{written}" if text else written}


def _results(messages: list[dict[str, Any]], names: dict[str, str], format: str) -> dict[str, Any]:
    items = []
    for message in messages:
        ident = message.get("tool_call_id")
        name = message.get("name") or names.get(str(ident), "") or "unknown"
        items.append({"name": name, "id": ident, "content": _value(_text(message.get("content")))})
    if format in RESULT_FORMATS:
        text = render_results(items, format) or ""
    else:
        text = "\n\n".join(_plain(item) for item in items)
    return {"role": "user", "content": text}


def _plain(item: dict[str, Any]) -> str:
    value = item["content"]
    shown = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    ident = f" (call id {item['id']})" if item["id"] else ""
    return f"Result of {item['name']}{ident}:\n{shown}"


def _value(text: str) -> Any:
    """A result's text, as JSON when it is JSON (written inside the result block as a value,
    not as a string of escaped JSON)."""
    try:
        return json.loads(text)
    except ValueError:
        return text


def _text(content: Any) -> str:
    """A message's text: a string, or the text of its list of parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict) and p.get("type") == "text")
    return ""


def with_system(messages: list[Any], text: str) -> list[Any]:
    """`text` (the tools' prompt) before the first message's text when it is a system or
    developer message (one system message: templates that take a system message only first
    refuse a second), else as a new first system message."""
    first = messages[0] if messages else None
    if not (isinstance(first, dict) and first.get("role") in ("system", "developer")):
        return [{"role": "system", "content": text}, *messages]
    content = first.get("content")
    parts = content if isinstance(content, list) else []
    if isinstance(content, str) or all(isinstance(p, dict) and p.get("type") == "text" for p in parts):
        own = _text(content)
        merged: Any = f"{text}\n\n{own}" if own else text
    else:  # (parts that are not text: kept, after the prompt's)
        merged = [{"type": "text", "text": text}, *parts]
    return [{**first, "role": "system", "content": merged}, *messages[1:]]
