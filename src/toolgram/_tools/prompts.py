"""System prompts that teach a model a call format, and the blocks that carry results back.

The prompt and the parser share the format names, so a prompt rendered for "hermes"
asks for exactly what parse() reads as "hermes". Every prompt shows one concrete call
(built from the first tool's schema); that example parses back to the call it shows,
which the tests check for each format.

Templates are `string.Template` text (files in templates/, one per format and kind), so
JSON braces need no escaping. Placeholders:

    $tools         the tools as a JSON list of {name, description, parameters}
    $tools_openai  the tools as a JSON list of OpenAI {"type": "function", "function": ...}
    $tools_lines   one OpenAI-style definition per line (Hermes/Qwen and Llama 3 templates)
    $tool_names    the names, comma-separated
    $example       one example call, in the format's own syntax
"""

from __future__ import annotations

import dataclasses
import json
import string
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any, NamedTuple

from .tools import KINDS, Tool, _plain, normalize_tools

PLACEHOLDERS = ("tools", "tools_openai", "tools_lines", "tool_names", "example")

# Next to this module rather than found through importlib.resources: it works the same
# from a source checkout, an editable install and a wheel, with or without __init__.py.
_TEMPLATE_DIR = Path(__file__).resolve().parent / "templates"


class _Call(NamedTuple):
    name: str
    arguments: Any
    kind: str = "tool"
    id: str | None = None
    instructions: str | None = None


# --- call syntax, one renderer per format -------------------------------------------------


def _json(value: Any, indent: int | None = None) -> str:
    return json.dumps(_plain(value), ensure_ascii=False, indent=indent, default=str)


def _py(value: Any) -> str:
    """A Python literal. Strings use JSON's escapes, which are valid Python too."""
    if value is None:
        return "None"
    if isinstance(value, bool):
        return "True" if value else "False"
    if isinstance(value, (int, float)):
        return json.dumps(value)
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{_py(str(k))}: {_py(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_py(v) for v in value) + "]"
    return json.dumps(str(value), ensure_ascii=False)


def _pycall(call: _Call) -> str:
    args = call.arguments if isinstance(call.arguments, Mapping) else {}
    # A key that is not a Python identifier cannot be a keyword argument; it is written
    # as is, and a pythonic reader will reject it: such tools want a JSON format.
    return f"{call.name}(" + ", ".join(f"{k}={_py(v)}" for k, v in args.items()) + ")"


def _hermes(calls: list[_Call]) -> str:
    # Newline-framed, as the Qwen2.5 / Hermes 3 chat templates write it.
    return "\n".join(
        f'<tool_call>\n{_json({"name": c.name, "arguments": c.arguments})}\n</tool_call>' for c in calls
    )


def _lfm2(calls: list[_Call]) -> str:
    return "<|tool_call_start|>[" + ", ".join(_pycall(c) for c in calls) + "]<|tool_call_end|>"


def _pythonic(calls: list[_Call]) -> str:
    return "[" + ", ".join(_pycall(c) for c in calls) + "]"


def _llama3_json(calls: list[_Call]) -> str:
    return "; ".join(_json({"name": c.name, "parameters": c.arguments}) for c in calls)


def _mistral(calls: list[_Call]) -> str:
    # The v11+ tokenizer generation (Mistral Small 3.x, Magistral, Devstral, Ministral 3):
    # [TOOL_CALLS]name[ARGS]{...}, repeated per call; not the older [TOOL_CALLS] [json list].
    return "".join(f"[TOOL_CALLS]{c.name}[ARGS]{_json(c.arguments)}" for c in calls)


def _fenced_json(calls: list[_Call]) -> str:
    return "\n".join(f'```json\n{_json({"name": c.name, "arguments": c.arguments})}\n```' for c in calls)


def _json_reply(calls: list[_Call]) -> str:
    objs = [{"type": "tool_call", "name": c.name, "arguments": c.arguments} for c in calls]
    # The whole reply is one JSON value: several calls can only be a list of them.
    return _json(objs[0] if len(objs) == 1 else objs)


_MFCS_TAGS = {"tool": ("mfcs_tool", "call_id"), "agent": ("mfcs_agent", "agent_id"), "memory": ("mfcs_memory", "memory_id")}


def _mfcs(calls: list[_Call]) -> str:
    blocks = []
    counters = dict.fromkeys(KINDS, 0)
    for c in calls:
        kind = c.kind if c.kind in _MFCS_TAGS else "tool"
        counters[kind] += 1
        tag, id_tag = _MFCS_TAGS[kind]
        call_id = c.id if c.id else str(counters[kind])
        instructions = _one_line(c.instructions or f"Call {c.name}")
        blocks.append(
            f"<{tag}>\n<instructions>{instructions}</instructions>\n<{id_tag}>{call_id}</{id_tag}>\n"
            f"<name>{c.name}</name>\n<parameters>\n{_json(c.arguments, indent=2)}\n</parameters>\n</{tag}>"
        )
    return "\n".join(blocks)


def _one_line(text: str, limit: int = 120) -> str:
    # Instructions sit between MFCS tags: keep them to one line, without tag brackets.
    line = " ".join(str(text).split()).replace("<", "").replace(">", "")
    return line if len(line) <= limit else line[: limit - 3].rstrip() + "..."


# --- the registry -------------------------------------------------------------------------


@dataclasses.dataclass
class _Format:
    templates: dict[str, str | None]  # kind -> template text; None: the packaged file, read lazily
    calls: Callable[[list[_Call]], str] | None  # the format's call syntax, for $example


_BUILTIN = {
    "hermes": _hermes,
    "lfm2": _lfm2,
    "llama3_json": _llama3_json,
    "mistral": _mistral,
    "pythonic": _pythonic,
    "fenced_json": _fenced_json,
    "json_reply": _json_reply,
    "mfcs": _mfcs,
}

_formats: dict[str, _Format] = {
    name: _Format(dict.fromkeys(KINDS if name == "mfcs" else ("tool",)), fn) for name, fn in _BUILTIN.items()
}
_kinds: dict[str, tuple[str, ...]] = {name: tuple(f.templates) for name, f in _formats.items()}

#: Format name -> the kinds it has prompts for (("tool",), or ("tool", "agent", "memory")
#: for MFCS). A live, read-only view: formats added with register_prompt appear in it.
PROMPT_FORMATS: Mapping[str, tuple[str, ...]] = MappingProxyType(_kinds)


def _template(format: str, kind: str) -> str:
    fmt = _get(format)
    if kind not in fmt.templates:
        raise ValueError(f'The "{format}" format has no {kind} prompt; it has: {", ".join(fmt.templates)}.')
    text = fmt.templates[kind]
    if text is None:
        file = _TEMPLATE_DIR / (f"mfcs_{kind}.txt" if format == "mfcs" else f"{format}.txt")
        text = file.read_text(encoding="utf-8").rstrip("\n")
        fmt.templates[kind] = text
    return text


def _get(format: str) -> _Format:
    fmt = _formats.get(format)
    if fmt is None:
        raise ValueError(f'Unknown prompt format "{format}". Known: {", ".join(_formats)}.')
    return fmt


def register_prompt(
    format_name: str,
    template: str,
    *,
    kind: str = "tool",
    example: str | Callable[[str, dict[str, Any]], str] | None = None,
) -> None:
    """Add a prompt format, or replace the wording of an existing one.

    `template` is `string.Template` text using the placeholders $tools, $tools_openai,
    $tools_lines, $tool_names and $example (see this module's docstring); write `$$` for
    a literal `$` followed by a letter. A misspelt placeholder raises ValueError here,
    rather than reaching the model as "$tool_list".

    `example` says how $example writes a call:
    - the name of a format whose call syntax to borrow, e.g. "hermes" (the usual case: a
      new wording for a syntax the parser already reads);
    - a function `(name, arguments) -> str` for a syntax of your own;
    - None: keep the syntax `format_name` already has (replacing a built-in prompt's
      wording); required for a new format whose template uses $example.

    `kind` ("tool", "agent" or "memory") registers an MFCS-style prompt for that kind of
    call. The change is process-wide, like the built-ins it sits beside.

        register_prompt("terse", "Tools: $tools\\nCall like this: $example", example="hermes")
        render_prompt(tools, "terse")
    """
    if not isinstance(format_name, str) or not format_name:
        raise ValueError("format_name must be a non-empty string.")
    if kind not in KINDS:
        raise ValueError(f'kind must be one of {", ".join(KINDS)}, not "{kind}".')
    if not isinstance(template, str):
        raise TypeError("template must be a str (string.Template syntax).")
    used = _placeholders(template)
    unknown = sorted(used - set(PLACEHOLDERS))
    if unknown:
        raise ValueError(
            f"Unknown placeholder(s) {', '.join('$' + u for u in unknown)}; "
            f"known: {', '.join('$' + p for p in PLACEHOLDERS)} (write $$ for a literal $)."
        )
    if example is None:
        calls = _formats[format_name].calls if format_name in _formats else None
    elif isinstance(example, str):
        calls = _get(example).calls
    elif callable(example):
        fn = example
        calls = lambda cs: "\n".join(fn(c.name, c.arguments) for c in cs)  # noqa: E731
    else:
        raise TypeError("example must be a format name, a function (name, arguments) -> str, or None.")
    if calls is None and "example" in used:
        raise ValueError(f'The template uses $example: say which call syntax "{format_name}" shows, with example=.')
    fmt = _formats.get(format_name)
    if fmt is None:
        fmt = _formats[format_name] = _Format({}, calls)
    fmt.templates[kind] = template
    if calls is not None:
        fmt.calls = calls
    _kinds[format_name] = tuple(k for k in KINDS if k in fmt.templates)


def _placeholders(template: str) -> set[str]:
    names = set()
    for m in string.Template.pattern.finditer(template):
        name = m.group("named") or m.group("braced")
        if name:
            names.add(name)
    return names


# --- rendering ----------------------------------------------------------------------------


def render_prompt(tools: Any, format: str = "hermes", *, kind: str = "tool", example: Any = None) -> str:
    """The system prompt that teaches a model to call `tools` in `format`.

    `tools` is anything normalize_tools takes (OpenAI, MCP, MFCS packet, {name: schema},
    names). `format` is one of PROMPT_FORMATS: "hermes", "lfm2", "llama3_json", "mistral"
    (the v11+ `[TOOL_CALLS]name[ARGS]{...}` syntax), "pythonic", "fenced_json",
    "json_reply", "mfcs", or one added with register_prompt.

    `kind` picks the MFCS prompt: "tool" (<tool_calling>), "agent" (<agent_calling>) or
    "memory" (<memory_calling>). Definitions that do not name their own kind take this
    one; a ToolSet keeps its tools' kinds, and only the tools of `kind` are listed, so one
    mixed ToolSet renders all three MFCS prompts. The other formats have one kind of call
    and list every tool.

    The prompt shows one example call: `example` (a ToolCall, or a mapping with "name"
    and "arguments") when given, otherwise example_call(tools, format, kind=kind). Raises
    ValueError for an unknown format or a kind the format has no prompt for.
    """
    template = _template(format, kind)
    listed = _listed(tools, format, kind)
    call = _as_call(example, kind) if example is not None else _sample_call(listed, kind)
    calls = _formats[format].calls
    fields = {
        "tools": _json([t.to_dict() for t in listed]),
        "tools_openai": _json([t.to_openai() for t in listed]),
        "tools_lines": "\n".join(_json(t.to_openai()) for t in listed),
        "tool_names": ", ".join(t.name for t in listed),
        "example": calls([call]) if calls else "",
    }
    return string.Template(template).safe_substitute(fields)


def example_call(tools: Any, format: str = "hermes", *, kind: str = "tool") -> str:
    """The raw example call that render_prompt(tools, format, kind=kind) shows.

    It calls the first listed tool with sample arguments drawn from its schema: each
    required property (or the first property when none is required) gets its `const`,
    first `examples` entry, `default` or first `enum` value, or else a value of its type
    ("example", 1, 1.5, true, [one item], {its required properties}; strings with a
    `format` get one that fits: a date, an email, a URL). Parsing it with
    toolgram.parse(..., tools) gives back that call.
    """
    _template(format, kind)  # same errors as render_prompt
    calls = _formats[format].calls
    if calls is None:
        return ""
    return calls([_sample_call(_listed(tools, format, kind), kind)])


def _listed(tools: Any, format: str, kind: str) -> list[Tool]:
    toolset = normalize_tools(tools, kind=kind)
    listed = list(toolset.tools) if toolset is not None else []
    if len(_formats[format].templates) > 1:  # a format with per-kind prompts (MFCS)
        listed = [t for t in listed if t.kind == kind]
    return listed


def _as_call(example: Any, kind: str) -> _Call:
    if isinstance(example, Mapping):
        get = example.get
    else:
        def get(key: str, default: Any = None) -> Any:
            return getattr(example, key, default)
    args = get("arguments", None)
    if args is None:
        args = get("parameters", {})
    return _Call(str(get("name", "")), args, get("kind", kind) or kind, get("id", None), get("instructions", None))


def _sample_call(listed: list[Tool], kind: str) -> _Call:
    if not listed:
        # Nothing to call: the example still shows the syntax, with a made-up tool.
        return _Call("tool_name", {"argument": "value"}, kind)
    tool = listed[0]
    args = _sample_object(tool.parameters, 0) if tool.parameters is not None else {}
    return _Call(tool.name, args, kind, None, tool.description or None)


_STRING_FORMATS = {
    "date": "2024-05-01",
    "date-time": "2024-05-01T09:30:00Z",
    "time": "09:30:00",
    "email": "user@example.com",
    "uri": "https://example.com",
    "url": "https://example.com",
    "uuid": "123e4567-e89b-12d3-a456-426614174000",
}
_MAX_DEPTH = 6


def _sample_object(schema: Mapping[str, Any], depth: int) -> dict[str, Any]:
    props = schema.get("properties")
    if not isinstance(props, Mapping) or not props:
        return {}
    required = [k for k in schema.get("required") or () if isinstance(k, str) and k in props]
    # With nothing required, one argument still shows how arguments are written.
    keys = required or [next(iter(props))]
    return {k: _sample_value(props[k], depth + 1) for k in keys}


def _sample_value(schema: Any, depth: int) -> Any:
    if not isinstance(schema, Mapping) or depth > _MAX_DEPTH:
        return "example"
    if "const" in schema:
        return schema["const"]
    for key in ("examples", "enum"):
        values = schema.get(key)
        if isinstance(values, list) and values:
            return values[0]
    if "default" in schema:
        return schema["default"]
    for key in ("anyOf", "oneOf", "allOf"):
        branches = schema.get(key)
        if isinstance(branches, list):
            for branch in branches:
                if isinstance(branch, Mapping) and branch.get("type") != "null":
                    return _sample_value(branch, depth + 1)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind is None:
        kind = "object" if "properties" in schema else "array" if "items" in schema else "string"
    if kind == "string":
        return _STRING_FORMATS.get(schema.get("format"), "example")
    if kind in ("integer", "number"):
        return _sample_number(schema, kind == "integer")
    if kind == "boolean":
        return True
    if kind == "null":
        return None
    if kind == "array":
        items = schema.get("items")
        return [_sample_value(items, depth + 1)] if isinstance(items, Mapping) else []
    if kind == "object":
        return _sample_object(schema, depth)
    return "example"


def _sample_number(schema: Mapping[str, Any], integer: bool) -> int | float:
    def number(v: Any) -> bool:
        return isinstance(v, (int, float)) and not isinstance(v, bool)

    low, excl = schema.get("minimum"), schema.get("exclusiveMinimum")
    if number(excl):  # draft 6+: exclusiveMinimum is the bound itself
        value = excl + 1
    elif number(low):
        value = low + 1 if excl is True else low  # draft 4: a flag beside minimum
    else:
        value = 1 if integer else 1.5
    high = schema.get("maximum")
    if number(high) and value > high:
        value = high
    return int(value) if integer else value


# --- results ------------------------------------------------------------------------------


class _Result(NamedTuple):
    kind: str
    id: str | None
    name: str
    value: Any


RESULT_FORMATS = ("mfcs", "hermes")
_MFCS_RESULT = {"tool": ("tool_result", "call_id"), "agent": ("agent_result", "agent_id"), "memory": ("memory_result", "memory_id")}


def render_results(results: Any, format: str = "mfcs") -> str | None:
    """The text that carries tool results back to the model, or None when there are none.

    `results` is a list whose items are `(call, value)` pairs, `call` being a ToolCall
    (its id, name and kind are used), a mapping with "name"/"id"/"kind", or a bare name;
    or mappings `{"name", "result" (or "content"), "id" (or "call_id", "tool_call_id",
    "agent_id", "memory_id"), "kind"}`. A single such mapping is taken as a list of one.

    Formats:
    - "mfcs": one `<tool_result>` block (and `<agent_result>`, `<memory_result>` for
      agent and memory calls, in that order), a line `{call_id: 1, name: get_weather}
      <value>` per result. A result without an id gets its 1-based position among the
      results of its kind.
    - "hermes": a `<tool_response>{"name": ..., "content": <value>}</tool_response>` block
      per result, as Hermes-style tool turns are written.

    Values are always written as JSON (a string result becomes a JSON string), never
    as a Python repr or "[object Object]": dataclasses and pydantic models as their
    fields, sets as lists, anything else unknown as its str().

    Other formats have no result syntax of their own: use the chat API's "tool" role
    messages for them. Raises ValueError for those.
    """
    if format not in RESULT_FORMATS:
        raise ValueError(f'No result block for format "{format}"; available: {", ".join(RESULT_FORMATS)}.')
    items = _result_items(results)
    if not items:
        return None
    if format == "hermes":
        return "\n".join(
            f"<tool_response>\n{_result_json({'name': r.name, 'content': r.value})}\n</tool_response>" for r in items
        )
    blocks = []
    for kind in KINDS:
        mine = [r for r in items if r.kind == kind]
        if not mine:
            continue
        tag, id_tag = _MFCS_RESULT[kind]
        lines = [f"<{tag}>"]
        for position, r in enumerate(mine, 1):
            lines.append(f"{{{id_tag}: {r.id if r.id else position}, name: {r.name}}} {_result_json(r.value)}")
        lines.append(f"</{tag}>")
        blocks.append("\n".join(lines))
    return "\n".join(blocks)


def _result_items(results: Any) -> list[_Result]:
    if results is None:
        return []
    if isinstance(results, Mapping):
        results = [results]
    items = []
    for item in results if isinstance(results, Iterable) else ():
        if isinstance(item, Mapping):
            value = next((item[k] for k in ("result", "content", "output") if k in item), None)
            items.append(_result_of(item, value))
        elif isinstance(item, (tuple, list)) and len(item) == 2:
            call, value = item
            items.append(_result_of(call, value))
    return items


def _result_of(call: Any, value: Any) -> _Result:
    if isinstance(call, str):
        return _Result("tool", None, call, value)
    if isinstance(call, Mapping):
        get = call.get
    else:
        def get(key: str, default: Any = None) -> Any:
            return getattr(call, key, default)
    ident = next((get(k) for k in ("id", "call_id", "tool_call_id", "agent_id", "memory_id") if get(k)), None)
    kind = get("kind") or ("agent" if get("agent_id") else "memory" if get("memory_id") else "tool")
    return _Result(kind if kind in KINDS else "tool", None if ident is None else str(ident), str(get("name") or "unknown"), value)


def _result_json(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, default=_to_json)
    except (TypeError, ValueError):  # circular references
        return json.dumps(str(value), ensure_ascii=False)


def _to_json(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    dump = getattr(value, "model_dump", None)  # pydantic v2
    if callable(dump):
        return dump()
    if isinstance(value, (set, frozenset)):
        return sorted(value, key=repr)
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value)


def render_prompt_calls(calls: Any, format: str) -> str:
    """`calls` (ToolCalls or mappings with "name", "arguments", "id") in the syntax the
    prompt of `format` teaches, as its example shows it: how an assistant turn of the
    history is written back for a model that learnt the calls from that prompt (toolgram
    serve --prompt). Raises ValueError for an unknown format; "" for one registered
    without a call syntax."""
    render = _get(format).calls
    return render([_as_call(c, "tool") for c in calls]) if render else ""
