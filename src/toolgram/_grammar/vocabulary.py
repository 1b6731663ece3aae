"""The rule vocabulary: the rule names a grammar uses to say what a part of a region
means, each with its role. Every set the pipeline keeps of rule names is derived
from RULES here (the builder's dispatch, the driver's call rules, the mention test,
the grammar checks), and grammars/README.md's table of rules is generated from it
(tests/test_catalogues.py keeps both in step). A new payload kind is one entry here
and one handler in the builder.

Rules starting with `_` are inlined by Lark; any other name is structure only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .words import lazy


@dataclass(frozen=True)
class Rule:
    name: str
    meaning: str  # one line, for grammars/README.md (Markdown)
    call_kind: str | None = None  # a call: its kind ("tool", "agent", "memory")
    holds_calls: bool = False  # the builder makes calls of it (a call, or a payload of calls)
    counts_calls: bool = False  # the driver counts a region's calls by it (a call, or JSON of calls)
    part: bool = False  # read only inside a call (a grammar with parts needs a call rule)
    json_text: bool = False  # its text is JSON: a marker inside one of its strings is text
    loose_text: bool = False  # Gemma-style arguments: a marker inside a delimited string is text
    opaque: bool = False  # one argument read whole (its inside is not the call's parts)
    not_bare: bool = False  # a region holding one is more than a call's bare name (no mention)
    region_level: bool = False  # the builder reads it where it meets it in the region's tree


RULES: tuple[Rule, ...] = (
    Rule("call", "one call (kind `tool`)", call_kind="tool", holds_calls=True, counts_calls=True, region_level=True),
    Rule("agent_call", "one MFCS agent call (kind `agent`)", call_kind="agent", holds_calls=True, counts_calls=True,
         region_level=True),
    Rule("memory_call", "one MFCS memory call (kind `memory`)", call_kind="memory", holds_calls=True, counts_calls=True,
         region_level=True),
    Rule("name", "the call's name (text of the rule)", part=True),
    Rule("id", "the id the model wrote for the call", not_bare=True),
    Rule("instructions", "MFCS instructions (informative, kept on the call)", not_bare=True),
    Rule("args", "JSON text of the arguments object", part=True, json_text=True, not_bare=True),
    Rule("param", "one XML-ish parameter (`key`, `value`); the raw value is typed by the tool's JSON Schema",
         part=True, not_bare=True),
    Rule("typed_param", "the same with a type the model wrote (`key`, `type`, `value`: Kimi K3 `type=`; DSML "
         '`string="true"` is text, `"false"` JSON); a missing `type` is no type', part=True, not_bare=True),
    Rule("kwarg", "a Python keyword argument (`key`, `value`)", part=True, not_bare=True),
    Rule("posarg", "a Python positional argument (positional ones need a schema)", part=True, not_bare=True),
    Rule("loose_args", 'Gemma-style arguments `{key:<\\|"\\|>text<\\|"\\|>,n:42,o:{…},l:[…]}` (also `<escape>` '
         "delimiters): delimited strings are text, bare values are typed like a `param`",
         part=True, opaque=True, not_bare=True, loose_text=True),
    Rule("element", "one argument written as a nested XML element (`key`?, `type`?, `value`s, `element`s: "
         "MiniMax-M3, Cohere cofl, BFCL): child "
         "elements make it an object (named children; a repeated name collects into a list) or an array (the "
         "schema, the written type `list`/`array`, or no child has a `key`); text only, it is typed like a `param`. A "
         "call's top-level elements are typed together against the tool's schema",
         part=True, opaque=True, not_bare=True),
    Rule("stray", "text inside a call outside any value, followed by the call's next value or its close (Cohere "
         "cofl's `</cofl:value> or Lyon</cofl:tool_call>`): no argument's text, dropped with the repair `stray_text`",
         part=True),
    Rule("code", "raw code inside a `call`: the arguments are `{\"code\": text}`; without a `name`, the call is "
         "named by the header's `code_tool`", part=True, not_bare=True),
    Rule("json_calls", 'JSON holding a call object, a list of them, or `{"tool_calls": […]}` (where `{` is the '
         "format's own start marker, an object holds calls only in its `tool_calls` list, in any place among its "
         "fields: decided once the object is whole)", holds_calls=True,
         counts_calls=True, json_text=True, not_bare=True, region_level=True),
    Rule("keyed_calls", "a JSON list of `{NAME: arguments}` objects", holds_calls=True, counts_calls=True,
         json_text=True, not_bare=True, region_level=True),
    Rule("json_reply", 'the whole reply as `{"type": "tool_call" \\| "message", …}`', holds_calls=True,
         json_text=True, not_bare=True, region_level=True),
    Rule("not_call", "an element of a list of calls that is no call (`[f(a=1), 5]`): an error in its place, the "
         "list's calls kept", not_bare=True, region_level=True),
    Rule("prose", "text that stays prose (an empty `prose:` rule removes a marker)", region_level=True),
    Rule("reasoning", "text that is reasoning (`result.reasoning`): gpt-oss analysis with its tokens stripped; "
         "a block between markers of its own is declared in the header (`reasoning:`)",
         region_level=True),
    Rule("unclosed", "an empty rule where a close tag may be missing (`</parameter>`, `</arg_value>`): repair "
         "`closed_tag`", region_level=True),
    Rule("missing_comma", "an empty rule (or a `;`) where a list's comma between two calls is missing "
         "(`[f(a=1)\\ng(b=2)]`): repair `missing_comma`, on the call before it", region_level=True),
    Rule("unopened", "an empty rule where an open tag may be missing (GLM's `<arg_value>`): repair `opened_tag`"),
)

BY_NAME = {r.name: r for r in RULES}

CALL_KINDS = {r.name: r.call_kind for r in RULES if r.call_kind}
CALL_HOLDERS = frozenset(r.name for r in RULES if r.holds_calls)
COUNTED_CALLS = frozenset(r.name for r in RULES if r.counts_calls)
CALL_PARTS = tuple(r.name for r in RULES if r.part)
JSON_TEXT = frozenset(r.name for r in RULES if r.json_text)
LOOSE_TEXT = frozenset(r.name for r in RULES if r.loose_text)
OPAQUE = frozenset(r.name for r in RULES if r.opaque)
NOT_BARE = frozenset(r.name for r in RULES if r.not_bare)
REGION_LEVEL = tuple(r.name for r in RULES if r.region_level)
# The one payload rule a fast frame reads without the parser (`json_calls: JSON`).
PAYLOAD = "json_calls"
# The raw text of a `param` or `typed_param` (a part of them, not a rule of the table).
VALUE = "value"


def rule_name(name: object) -> str:
    """A rule's vocabulary name: without the namespaces `%import`s give it
    (`pycall__call` is a `call`, `pycall___arg` an `_arg`)."""
    name = str(name)
    found = _RULE_NAMES.get(name)
    if found is None:
        # (Remembered: the builder asks it of each node of a call's tree, several times;
        # the names are the grammars' rules, a few hundred in all.)
        found = _RULE_NAMES[name] = _NAMESPACES.sub("", name)
    return found


_RULE_NAMES: dict[str, str] = {}


_NAMESPACES = lazy(re.compile, r"^(?:[A-Za-z0-9]\w*?__)+(?=\w)")


START = "<!-- rules:start -->"
END = "<!-- rules:end -->"


def rules_table() -> str:
    """grammars/README.md's table of rule names, ending with a newline."""
    rows = ["| rule | meaning |", "|---|---|"]
    rows += [f"| `{r.name}` | {r.meaning} |" for r in RULES]
    return "\n".join(rows) + "\n"

