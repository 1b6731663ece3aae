"""Tool definitions in every accepted shape, reduced to names and JSON Schemas.

Everything that takes `tools=` goes through `normalize_tools`, so the shapes below are
accepted everywhere (parse, validate, render_prompt, ...):

- `None`: no tool list at all ("any name is accepted" for the parser).
- a `ToolSet` (returned as is) or a single `Tool`.
- a tool name (`"get_weather"`) or a list of names: tools without a schema.
- an OpenAI chat-completions definition `{"type": "function", "function": {name, description,
  parameters}}`, or the flat Responses-API / legacy `functions=` shape `{name, description,
  parameters}`.
- an MCP tool `{name, description, inputSchema}` (Anthropic's `input_schema` too).
- an MFCS packet `{group: {"description": ..., "tool_list": [definitions]}}`.
- a mapping `{name: JSON Schema}`.
- a container of definitions: MCP's `tools/list` result `{"tools": [...]}`, Gemini's
  `{"function_declarations": [...]}`, a bare MFCS group `{"description", "tool_list": [...]}`.
- a list (or any iterable) mixing all of the above.

`tools` is configuration, so what names no tool raises TypeError, showing the entry: a
definition without a name (`{"type": "function", "function": {"description": …}}`), an
empty name, an entry of no known shape (`42`, `None` in a list, `{"nope": 1}`). Skipped
silently, it would turn every call to the tool its author meant into `Unknown tool`, and
`{"nope": 1}` into a tool named "nope". When a name repeats, the first definition wins,
as with a Python dict literal read left to right.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

KINDS = ("tool", "agent", "memory")

# Keys that hold the arguments' JSON Schema, in order of preference:
# OpenAI/Gemini/MFCS, MCP, Anthropic.
_SCHEMA_KEYS = ("parameters", "inputSchema", "input_schema")

# Keys under which other APIs nest a list of definitions (MCP tools/list, OpenAI legacy
# body, MFCS group, Gemini). A list value can never be a JSON Schema, which is what makes
# these unambiguous next to the `{name: schema}` shape.
_LIST_KEYS = ("tools", "functions", "tool_list", "function_declarations", "functionDeclarations")


@dataclass(frozen=True)
class Tool:
    name: str
    description: str = ""
    parameters: Mapping[str, Any] | None = None  # JSON Schema of the arguments object, if known
    kind: str = "tool"  # "tool", "agent" or "memory": which MFCS block calls it
    group: str = ""  # the MFCS packet group it came from, if any
    returns: Mapping[str, Any] | None = None  # MFCS: a schema of the result, shown in prompts

    def to_dict(self) -> dict[str, Any]:
        """The plain `{name, description, parameters}` definition that prompts list.

        Empty description and unknown parameters are left out rather than invented:
        a prompt should not tell the model a tool takes no arguments when we don't know.
        """
        out: dict[str, Any] = {"name": self.name}
        if self.description:
            out["description"] = self.description
        if self.parameters is not None:
            out["parameters"] = _plain(self.parameters)
        if self.returns is not None:
            out["returns"] = _plain(self.returns)
        return out

    def to_openai(self) -> dict[str, Any]:
        """This tool as an OpenAI chat-completions `tools=` entry."""
        fn = self.to_dict()
        fn.pop("returns", None)  # not part of the OpenAI shape
        return {"type": "function", "function": fn}


@dataclass(frozen=True)
class ToolSet:
    """The tools offered for one step, in the order they were offered."""

    tools: tuple[Tool, ...] = ()
    by_name: Mapping[str, Tool] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # ToolSet((t1, t2)) should work without building by_name by hand.
        if self.tools and not self.by_name:
            by_name: dict[str, Tool] = {}
            for tool in self.tools:
                by_name.setdefault(tool.name, tool)
            object.__setattr__(self, "tools", tuple(by_name.values()))
            object.__setattr__(self, "by_name", by_name)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(t.name for t in self.tools)

    def __contains__(self, name: object) -> bool:
        return name in self.by_name

    def __iter__(self) -> Iterator[Tool]:
        """The tools, in the order they were offered."""
        # No __len__ on purpose: callers test `if tools:` to mean "a list was given", and an
        # empty ToolSet ("no tool may be called") must not read like None ("any name").
        return iter(self.tools)

    def get(self, name: str) -> Tool | None:
        return self.by_name.get(name)

    def schema(self, name: str) -> Mapping[str, Any] | None:
        tool = self.by_name.get(name)
        return tool.parameters if tool else None


def unknown_tool(name: str, tools: ToolSet) -> str:
    """The error for a call of a tool not offered: the model can mend it from the names.
    (Here, below both, so that the builder's told failures (Unreadable.unknown) and
    parse()'s refusals of a call read whole word it once.)"""
    available = ", ".join(tools.names) if tools.names else "none"
    return f'Unknown tool "{name}". Available now: {available}.'


def _tool(
    name: str,
    description: str = "",
    parameters: Mapping[str, Any] | None = None,
    kind: str = "tool",
    group: str = "",
    returns: Mapping[str, Any] | None = None,
    _new: Any = object.__new__,
    _set: Any = object.__setattr__,
) -> Tool:
    """Tool(...) without the frozen dataclass's __init__, which sets each field through
    object.__setattr__: the instance is given its __dict__ whole. parse() and each
    StreamParser normalise the tools they are given, and a definition cost more in
    that __init__ than in reading it. Takes every field (tests/test_tools.py)."""
    tool = _new(Tool)
    _set(tool, "__dict__", {
        "name": name, "description": description, "parameters": parameters, "kind": kind, "group": group,
        "returns": returns,
    })  # fmt: skip
    return tool


def _plain(value: Any) -> Any:
    """A JSON-ready deep copy (Mapping -> dict, tuple -> list) for json.dumps."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _kind_of(item: Mapping[str, Any], default: str) -> str:
    kind = item.get("kind")
    return kind if kind in KINDS else default


def _schema_of(item: Mapping[str, Any]) -> Mapping[str, Any] | None:
    for key in _SCHEMA_KEYS:
        if key in item:
            schema = item[key]
            return schema if type(schema) is dict or isinstance(schema, Mapping) else None
    return None


def _shown(value: Any, most: int = 80) -> str:
    """An entry of `tools`, quoted in a TypeError (shortened when long)."""
    text = repr(value)
    return text if len(text) <= most else text[: most - 1] + "…"


def _no_name(item: Any) -> TypeError:
    return TypeError(f"tools: a tool definition without a name: {_shown(item)}")


def _definition(item: Mapping[str, Any], kind: str, group: str = "", name: str | None = None) -> Tool:
    """One flat or OpenAI-nested definition; `name` is the fallback from a `{name: def}` key."""
    whole = item
    fn = item.get("function")
    if (type(fn) is dict or (fn is not None and isinstance(fn, Mapping))) and item.get("type", "function") == "function":
        kind = _kind_of(item, kind)
        item = fn
    own = item.get("name")
    if isinstance(own, str) and own:
        name = own
    if not name:
        raise _no_name(whole)
    returns = item.get("returns")
    return _tool(
        name,
        str(item.get("description") or ""),
        _schema_of(item),
        _kind_of(item, kind),
        group,
        returns if returns is not None and isinstance(returns, Mapping) else None,
    )


def _looks_like_definition(value: Mapping[str, Any]) -> bool:
    """In `{name: value}`, is value a tool definition rather than a JSON Schema?

    JSON Schema has no `parameters`/`inputSchema`/`function` keywords and no `name`, so
    any of those (without the schema keywords `type`/`properties`) marks a definition.
    """
    if isinstance(value.get("function"), Mapping):
        return True
    if any(k in value for k in _SCHEMA_KEYS):
        return True
    return isinstance(value.get("name"), str) and "type" not in value and "properties" not in value


def _from_mapping(item: Mapping[str, Any], kind: str, out: list[Tool]) -> None:
    fn = item.get("function")
    # (OpenAI's `{"type": "function", "function": {…}}`, often written without its "type")
    if ((type(fn) is dict or (fn is not None and isinstance(fn, Mapping))) and item.get("type", "function") == "function") or isinstance(item.get("name"), str):
        out.append(_definition(item, kind))
        return
    containers = [k for k in _LIST_KEYS if isinstance(item.get(k), (list, tuple))]
    if containers:
        # A container: its other keys (MCP's nextCursor, an MFCS group's description) are
        # metadata, not tools.
        for key in containers:
            _from_iterable(item[key], kind, out)
        return
    if any(k in item for k in (*_SCHEMA_KEYS, "function", "description")) or item.get("type") == "function":
        # A definition that lost its name: not to be read as tools named by its keys
        # ("description", "parameters") under the {name: schema} reading below; nor an
        # OpenAI definition that lost its "function" (a tool named "type").
        raise _no_name(item)
    # {name: JSON Schema}, and its relatives {name: definition} / {group: MFCS group}.
    for key, value in item.items():
        name = str(key)
        if isinstance(value, Mapping):
            if isinstance(value.get("tool_list"), (list, tuple)):
                for sub in value["tool_list"]:
                    if isinstance(sub, Mapping):
                        out.append(_definition(sub, kind, group=name))
                    elif isinstance(sub, str) and sub:
                        out.append(_tool(sub, kind=kind, group=name))
                    else:
                        raise TypeError(f"tools: group {name!r} lists {_shown(sub)}, not a tool definition or name")
            elif _looks_like_definition(value):
                out.append(_definition(value, kind, name=name))
            else:
                out.append(_tool(name, "", value, kind))
        elif isinstance(value, (list, tuple)):
            _from_iterable(value, kind, out)
        elif isinstance(value, str):
            out.append(_tool(name, value, None, kind))  # {name: "what it does"}
        elif value is None or value is True:
            out.append(_tool(name, "", None, kind))  # {name: None} / {name: True}: any arguments
        else:
            # (`[{"nope": 1}]` is no tool named "nope")
            raise TypeError(
                f"tools: {name!r}: {_shown(value)} is no JSON Schema, description, definition or None/True "
                f"(in {_shown(item)})"
            )


def _from_iterable(items: Iterable[Any], kind: str, out: list[Tool]) -> None:
    for item in items:
        if type(item) is dict:  # (a definition, most often: no ABC check, which costs a definition's reading)
            _from_mapping(item, kind, out)
        elif isinstance(item, str):
            if not item:
                raise TypeError("tools: an empty tool name")
            out.append(_tool(item, kind=kind))
        elif isinstance(item, Tool):
            out.append(item)
        elif type(item) is dict or isinstance(item, Mapping):  # (a dict, most often: no ABC check)
            _from_mapping(item, kind, out)
        elif isinstance(item, ToolSet):
            out.extend(item.tools)
        else:
            raise TypeError(f"tools: {_shown(item)} ({type(item).__name__}) is not a tool name or definition")


def normalize_tools(tools: Any, *, kind: str = "tool") -> ToolSet | None:
    """None means "any name is accepted"; anything else becomes a ToolSet (possibly empty).

    `kind` is given to every definition that does not name its own (`"kind": "agent"` in
    the definition, or a `Tool` built with a kind); MFCS uses it to tell `<mfcs_tool>`,
    `<mfcs_agent>` and `<mfcs_memory>` tools apart.

    Ambiguous shapes, and how they are read:
    - A mapping with a string `"name"` (or `"type": "function"` plus a `"function"`
      mapping) is ONE definition, so `{name: schema}` cannot hold a tool named "name"
      whose schema is a string; a tool named "name" with a schema mapping works.
    - A mapping with a list under `tools`, `functions`, `tool_list`,
      `function_declarations` or `functionDeclarations` is a container of definitions;
      its other keys are ignored.
    - Otherwise the mapping is `{name: value}`: a value with `tool_list` is an MFCS group;
      a value with `parameters`/`inputSchema`/`input_schema`/`function`, or a `name`
      but no `type`/`properties`, is a definition (its own `name` wins over the key);
      any other mapping is the JSON Schema; a string is a description; anything else
      (None, True) means no schema.
    - A mapping without a usable name but with `description`, `parameters`,
      `inputSchema`, `input_schema` or `function` is a broken definition: TypeError
      (so `{name: schema}` cannot name tools "description", "parameters", ...), as is
      any entry that names no tool (`42`, `""`, `{name: 1}`).
    - A plain string is one tool name, not an iterable of one-letter names.
    """
    if tools is None:
        return None
    if isinstance(tools, ToolSet):
        return tools
    found: list[Tool] = []
    if type(tools) is list:  # (the usual shape, told without the ABC checks below)
        _from_iterable(tools, kind, found)
    elif isinstance(tools, (str, Tool)):
        _from_iterable([tools], kind, found)
    elif isinstance(tools, Mapping):
        _from_mapping(tools, kind, found)
    elif isinstance(tools, (set, frozenset)):
        # A set has no order: sort it, so "Available now: …" reads the same every run.
        _from_iterable(sorted(tools, key=lambda t: t if isinstance(t, str) else repr(t)), kind, found)
    elif isinstance(tools, Iterable) and not isinstance(tools, (bytes, bytearray)):
        _from_iterable(tools, kind, found)
    else:
        raise TypeError(f"tools must be names, tool definitions or None, not {type(tools).__name__}")
    by_name: dict[str, Tool] = {}
    for tool in found:
        by_name.setdefault(tool.name, tool)
    # (ToolSet(...) without the frozen __init__, as _tool: its __post_init__ has nothing to do)
    toolset = object.__new__(ToolSet)
    object.__setattr__(toolset, "__dict__", {"tools": tuple(by_name.values()), "by_name": by_name})
    return toolset
