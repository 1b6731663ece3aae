"""A fast reader for the plain parameter tags of the XML-ish invoke formats
(`<param name="q">`, `<parameter name="q">`, `<｜DSML｜parameter name="q" string="true">`)
and of Qwen3-Coder's (`<parameter=q>`, and its call opener `<function=f>`:
shared/function_param.lark), GLM's key and value tags (`<arg_key>q</arg_key> <arg_value>`:
shared/argkv.lark) and Cohere's elements (`<cofl:value name="q" type="t">`):
one regex finds a whole tag, and its tokens go to the driver's parse table one after
another, with the driver's own upkeep after each (Driver._tag_tokens), where the loop
would have lexed each alone (a MiniCPM5 reply of parameters whose closes were left out
spent about a third of its parse lexing their tags).

The regex only proposes: each token it finds is taken only where the driver's lexer
would take it, told by the same rules. At a token's first character, the terminals of
the state that may begin there (Driver's _Plain: each a literal or a plain pattern;
none else may) must be this token's alone, and then its match is the token (its group
is the terminal's own pattern, atomic, as the lexer matches it alone); or, where
others may begin there too, they are tried as the lexer tries them and this token
must win. Blanks between tokens are skipped where no terminal of the state may begin
with them, as the lexer skips %ignore'd text. Far from the end of the text only (a
closer cut short, a stream's token that may still grow: the lexer's), in no replay
and no paused reading; the first token the reader cannot vouch for stops it, and the
driver's loop lexes it. So the tokens, the tree and the driver's state after each are
the general way's own; tests/test_frame.py compares the two ways (fastpath.enabled
switches this reader off with the frames).
"""

from __future__ import annotations

from typing import Any

import regex

from .._grammar.tables import Shift
from .table import _under, plain_starting

# The terminals of shared/invoke.lark as compiled (the format's own names), and the
# sources the reasons below are told from: a grammar whose terminals of these names
# read otherwise has no reader.
_PARAM = "_invoke__PARAM"
_QUOTE = "_invoke__QUOTE"
_ATTR = "ATTR"
_SOURCES = {
    _PARAM: "<(?:steptml:|｜DSML｜ ?)?param(?:eter)?(?=[\\s>])",
    _QUOTE: "[\"']",
    _ATTR: "[^\\s\"'<>=]+",
    "_invoke__NO_NAME": "\"[ \t]*\"|'[ \t]*'",
    "ATTR_NAME": "[A-Za-z_][\\p{Alphabetic}\\p{M}\\p{Nd}\\p{Pc}\\-]*",
    "INVOKE": "<(?:steptml:|｜DSML｜ ?)?(?:invoke|function)(?=[\\s>])",
    "INVOKE_CLOSE": "<\\/(?:steptml:|｜DSML｜ ?)?(?:invoke|function)>",
    "_invoke__PARAM_CLOSE": "<\\/(?:steptml:|｜DSML｜ ?)?param(?:eter)?>",
}
_WS = "(?:[ \t\x0c\r\n])+"
# (shared/function_param.lark's, as compiled: `<parameter=`, its key, `>`.)
_FP_PARAM = "_function_param__PARAMETER"
_FP_SOURCES = {
    _FP_PARAM: "<parameter(?:=| (?=name=))",
    "KEY": "[^<>\n]+",
    "FUNCTION": "<function(?:=| (?=name=))",
}
# (Its nameless parameter tag, `<parameter>`: read by the loop, its call told as failed.)
_FP_BARE = "_function_param__PARAMETER_BARE"
_FP_BARE_SOURCE = "<parameter(?=>)"
# (A call's opener, `<function=NAME>`, where NAME is this.)
_FP_NAME = "(?:name=)?[^\\s<>=]+"
# (The lexer reads a JSON payload only where the text begins `{` or `[` (Driver._lex):
# none at a tag's token or a blank, as _AK_NEVER's below.)
_FP_NEVER = (frozenset(("JSON",)), frozenset())
# (shared/argkv.lark's, as compiled: `<arg_key>`, its key, `</arg_key>`, `<arg_value>`;
# and the patterns the tag's tokens are told from (see _AK_NEVER).)
_AK_KEY_OPEN, _AK_VALUE_OPEN, _AK_KEY_CLOSE = "<arg_key>", "<arg_value>", "</arg_key>"
_AK_SOURCES = {
    "KEY": "[^<]+",
    "BARE_VALUE": '(?:[^\\s<]|<(?!(?:arg_key>|(?<![ \t"\'`(\\[]<)tool_calls?>|(?<=\n<)\\/arg_value>(?=[ \t]{0,32}\r?\n[ \t]{0,32}<\\/arg_value>)|\\/arg_value>(?=[ \t]{0,32}(?:\r?\n|<(?:\\/?(?:arg_key|arg_value|tool_call|tool_calls|tool_sep)>|\\|)|\\Z))(?!\\s{0,32}<\\/arg_value>)(?![ \t]{0,32}\r?\n[^<\n]{0,200}<\\/arg_value>)|\\/tool_calls?>(?=[ \t]{0,32}(?:\r?\n|<(?:\\/?(?:arg_key|arg_value|tool_call|tool_calls|tool_sep)>|\\|)|\\Z))(?!\\s{0,32}<\\/(?:arg_value|tool_call)>)(?![ \t]{0,32}\r?\n[^<\n]{0,200}<\\/arg_value>)|\\/?(?:arg_value|tool_sep)>|\\/arg_key>)))[^<]*(?:<(?!(?:arg_key>(?:(?<=\n<arg_key>)|(?=[^<>\n]{1,64}<\\/arg_key>\\s{0,32}<arg_value>))|(?<![ \t"\'`(\\[]<)tool_calls?>|(?<=\n<)\\/arg_value>(?=[ \t]{0,32}\r?\n[ \t]{0,32}<\\/arg_value>)|\\/arg_value>(?=[ \t]{0,32}(?:\r?\n|<(?:\\/?(?:arg_key|arg_value|tool_call|tool_calls|tool_sep)>|\\|)|\\Z))(?!\\s{0,32}<\\/arg_value>)(?![ \t]{0,32}\r?\n[^<\n]{0,200}<\\/arg_value>)|\\/tool_calls?>(?=[ \t]{0,32}(?:\r?\n|<(?:\\/?(?:arg_key|arg_value|tool_call|tool_calls|tool_sep)>|\\|)|\\Z))(?!\\s{0,32}<\\/(?:arg_value|tool_call)>)(?![ \t]{0,32}\r?\n[^<\n]{0,200}<\\/arg_value>)|\\/?(?:arg_value|tool_sep)>|\\/arg_key>))[^<]*)*',
    "_argkv__TURN_END": "(?:<\\|observation\\|>|<\\|endoftext\\|>|<\\|im_end\\|>|<\\|user\\|>)",
}
# The terminals of those that the lexer finds no token of where a tag's token is (its
# literal, or a blank the lexer skips), whatever they are (neither is plain to _Plain):
# - a turn's end token (a plain pattern) begins `<|`;
# - a value whose `<arg_value>` was left out (BARE_VALUE, raw text of the nest) begins
#   with no blank, and its first `<` is no `<arg_key>`, `</arg_key>` or `<arg_value>`
#   (its look-ahead refuses those three). No match of it there, the lexer still reads a
#   value from a tag where the parser would take none of them as it stands (it would
#   supply a left-out close first: `<arg_key>k<arg_key>…`, the first key's close and
#   value left out); so only at a token the parser shifts at once, that is no run of
#   close tags reaching the value's (nest._foreign_run: a tag's `</arg_key>` is followed by
#   its `<arg_value>`). At a blank, only in a whole text read far (the lexer passes over
#   a value that matches nothing at no `<` there, at once).
_AK_NEVER = (frozenset(("_argkv__TURN_END",)), frozenset(("BARE_VALUE",)))

# (cohere_cofl_xml.lark's, as compiled: an element's tag, `<cofl:value name="k" type="t">`;
# and the patterns that may begin where its first token or the blanks before it are.)
_CF_SOURCES = {
    '_VALUE': '<cofl:value(?=[\\s>\\/])',
    '_QUOTE': '["\']',
    'ATTR': '[^\\s"\'<>=\\/]+',
    'ATTR_NAME': '[A-Za-z_][\\p{Alphabetic}\\p{M}\\p{Nd}\\p{Pc}\\-]*',
    'STRAY': '(?:[^\\s<]|<(?!\\/?cofl:))(?:[^<]|<(?!\\/?cofl:)){0,319}(?=<cofl:value[\\s>\\/]|<\\/cofl:tool_call>)',
    'BLOCK_TEXT': '(?:[^\\s<]|<(?!\\/?cofl:))(?:[^<]|<(?!\\/?cofl:)){0,319}(?=<\\/cofl:tool_calls>|<cofl:tool_call[\\s>])',
    'VALUE': '\\s*(?:[^\\s<]|<(?!\\/?cofl:))[^<]*(?:<(?!\\/?cofl:)[^<]*)*',
    'CALL': '<cofl:tool_call(?=[\\s>])',
}
# (Per token of the tag (its first; None: the blanks before it), the terminals the lexer
# finds no token of there: a call's stray text or a block's prose begins with no blank
# and no `<cofl:`, a call's opener is `<cofl:tool_call`; a value (the nest's) matches nothing at the blanks before a `<cofl:`
# tag nor at the tag, and is read from a tag only where the parser would not take it as
# it stands (see _AK_NEVER).)
_CF_NEVER = (frozenset(("STRAY", "BLOCK_TEXT", "CALL")), frozenset(("VALUE",)))

# Where a tag the reader reads may begin: its `<`, or the ignored blanks before an
# invoke format's tag (Driver._run asks the reader only at these; at those of its own
# reader, once it has one).
LEADS = ("<", "\n", " ", "\t", "\r", "\x0c")


# Whether the reader runs: the fast path's switch (_scan/fastpath.py's `enabled`, which
# tests turn off to compare with the general way). The parse layer cannot import the scan
# layer, so fastpath hands it down at its import: a function that reads its switch.
def on() -> bool:
    return True


# The patterns that may begin where a token of the tag does and yet, in the tag as the
# pattern reads it, never beat it (the lexer takes the longest match, the first of
# the state's terminals on a tie: literals before patterns): a quote followed by a key
# (no blank, no quote) or by blanks then a word or `>` is no _NO_NAME (`"`, blanks, `"`);
# `name`, `string`, `type` followed by `=` is a match of ATTR_NAME just as long (its
# characters hold no `=`), and the literal comes first; `<param…` is no `<invoke`, no
# `<function` and no close tag (`</`). And none of them, nor the tag's own patterns,
# runs into the end of the text from a token that ends this far before it (each stops
# at a character of the tag, or looks one past it): no stream waits on one.
_BEATEN = {
    _QUOTE: ("_invoke__NO_NAME",),
    "name": ("ATTR_NAME",),
    "string": ("ATTR_NAME",),
    "type": ("ATTR_NAME",),
    _PARAM: ("INVOKE", "INVOKE_CLOSE", "_invoke__PARAM_CLOSE"),
    # (`<invoke…`, `<function…` is no `<param…` and no close tag.)
    "INVOKE": (_PARAM, "INVOKE_CLOSE", "_invoke__PARAM_CLOSE"),
    # (`<parameter=` or `<parameter ` before `name=` is no `<function=`, `<function `;
    # and the other way round.)
    # (Nor is either a nameless `<parameter>`, which only `>` may follow: checked to
    # read so, _build_function_param.)
    _FP_PARAM: ("FUNCTION", _FP_BARE),
    "FUNCTION": (_FP_PARAM, _FP_BARE),
}


def verdict(cands: Any, term: Any, c: Any) -> Any:
    """Whether a token of `term` (None: ignored blanks) that the tag's pattern found is
    the lexer's, where `cands` (a state's _Plain at its first character) may begin:
    False: not told (the loop lexes it); else the literals that begin with that
    character too, which must not match there (the rest cannot beat it)."""
    if cands is None:
        return False
    if term is None:
        return () if not cands else False
    names = [t.name for t in cands]
    if term not in names:
        return False
    lit = c.terminals[term].literal
    beaten = _BEATEN.get(lit if lit is not None else term, ())
    literals = []
    for i, t in enumerate(cands):
        if t.name == term:
            continue
        if t.literal is not None:
            literals.append(t.literal)
        elif t.name not in beaten or (lit is not None and i < names.index(term)):
            return False
    return tuple(literals)


def reader(c: Any) -> Any:
    """(the tag pattern, its plan: per token, its group and terminal name, None for
    ignored blanks; the terminal per literal text; the characters a tag it reads may
    begin with, of LEADS) for c, or False: c has not the terminals (kept in c.derived)."""
    found = c.derived.get("tagread")
    if found is None:
        found = c.derived["tagread"] = _build(c)
    return found


def _build(c: Any) -> Any:
    found = _build_invoke(c)
    if found is False:
        found = _build_function_param(c)
    if found is False:
        found = _build_argkv(c)
    return found if found is not False else _build_cofl(c)


def _build_cofl(c: Any) -> Any:
    """Cohere's element tag, `<cofl:value name="k">`, `<cofl:value name="k" type="t">`
    (grammars/cohere_cofl_xml.lark), with the blanks before it (an optional part, as
    _build_invoke's): a value nested a thousand elements deep lexed each tag's fifteen
    tokens one by one. Other attributes, another order, a tag that closes itself: the
    loop's."""
    terms = c.terminals
    by_literal = {t.literal: name for name, t in terms.items() if t.literal is not None}
    if any(lit not in by_literal for lit in ("name", "type", "=", ">")):
        return False
    if any(name not in terms or terms[name].literal is not None or terms[name].source != source for name, source in _CF_SOURCES.items()):
        return False
    if len(c.ignore) != 1 or c.ignore[0].source != _WS:
        return False
    need = ("_VALUE", "_QUOTE", "ATTR")
    flags = {terms[name].pattern.flags for name in need} | {c.ignore[0].pattern.flags}
    if len(flags) != 1:
        return False
    ws = f"(?>{c.ignore[0].source})"
    opener, quote, attr = (f"(?>{terms[name].source})" for name in need)
    pattern = regex.compile(
        f"(?:({ws}))?({opener})({ws})(name)(=)({quote})({attr})({quote})(?:({ws})(type)(=)({quote})({attr})({quote}))?(>)",
        next(iter(flags)),
    )
    eq = by_literal["="]
    plan = (
        (1, None), (2, "_VALUE"), (3, None), (4, by_literal["name"]), (5, eq), (6, "_QUOTE"), (7, "ATTR"), (8, "_QUOTE"),
        (9, None), (10, by_literal["type"]), (11, eq), (12, "_QUOTE"), (13, "ATTR"), (14, "_QUOTE"), (15, by_literal[">"]),
    )  # fmt: skip
    # (Keyed as _build_invoke's plans: whether the match has the blanks before the tag;
    # its opener (always); its `type=` attribute.)
    plans = {}
    for has_lead in (False, True):
        for has_kind in (False, True):
            absent = (set() if has_lead else {1}) | (set() if has_kind else set(range(9, 15)))
            plans[has_lead, True, has_kind] = tuple(entry for entry in plan if entry[0] not in absent)
    c.derived["tagread_never"] = dict.fromkeys((None, "_VALUE"), _CF_NEVER)
    return pattern, plan, by_literal, LEADS, ((1, 2, 9), plans)


def _build_argkv(c: Any) -> Any:
    """GLM's and Hy3's key and value tags, `<arg_key>KEY</arg_key> <arg_value>`
    (shared/argkv.lark), the blanks before the tag and between its two halves each
    an optional part (skipped as _build_invoke's are). A value whose `<arg_value>` was
    left out (`</arg_key>` then the value), or a key whose close was, is no match: the
    loop's."""
    terms = c.terminals
    by_literal = {t.literal: name for name, t in terms.items() if t.literal is not None}
    if any(lit not in by_literal for lit in (_AK_KEY_OPEN, _AK_VALUE_OPEN, _AK_KEY_CLOSE)):
        return False
    if any(name not in terms or terms[name].literal is not None or terms[name].source != source for name, source in _AK_SOURCES.items()):
        return False
    if len(c.ignore) != 1 or c.ignore[0].source != _WS:
        return False
    flags = {terms["KEY"].pattern.flags, c.ignore[0].pattern.flags}
    if len(flags) != 1 or regex.match(r"\(\?[aiLmsuxV0-9]+\)", terms["KEY"].source):
        return False
    ws = f"(?>{c.ignore[0].source})"
    key = f"(?>{terms['KEY'].source})"
    pattern = regex.compile(
        f"(?:({ws}))?({regex.escape(_AK_KEY_OPEN)})({key})({regex.escape(_AK_KEY_CLOSE)})(?:({ws}))?({regex.escape(_AK_VALUE_OPEN)})",
        next(iter(flags)),
    )
    plan = ((1, None), (2, by_literal[_AK_KEY_OPEN]), (3, "KEY"), (4, by_literal[_AK_KEY_CLOSE]), (5, None), (6, by_literal[_AK_VALUE_OPEN]))
    # (Keyed as _build_invoke's plans, by whether the match has its optional groups: the
    # blanks before the tag; the tag (always); the blanks inside it, in the third place.)
    plans = {}
    for has_lead in (False, True):
        for has_mid in (False, True):
            absent = ({1} if not has_lead else set()) | ({5} if not has_mid else set())
            plans[has_lead, True, has_mid] = tuple(entry for entry in plan if entry[0] not in absent)
    c.derived["tagread_never"] = dict.fromkeys((None, *(by_literal[lit] for lit in (_AK_KEY_OPEN, _AK_KEY_CLOSE, _AK_VALUE_OPEN))), _AK_NEVER)
    return pattern, plan, by_literal, LEADS, ((1, 2, 5), plans)


def candidates(c: Any, state: Any, allowed: Any, firsts: Any, ch: str, term: Any, far: bool, never: tuple) -> Any:
    """The driver's _Plain at `ch` for a state's `allowed` (a token of `term` there, None:
    blanks), where the reader's grammar names terminals the lexer finds no token of at
    such a token (c.derived["tagread_never"], per term: those it finds none of there at
    all, and those only where the parser shifts the token at once, or at a blank in a
    whole text read far; _AK_NEVER): those passed over, the rest as _Plain tells them."""
    always, shifted = never
    if term is None:
        skip = always | shifted if far else always
    elif shifted and (far or not (c.terminals[term].literal or "").startswith("</")) and _shifts_plain(c, state, term, set()):
        # (At a close tag the lexer reads a run of close tags for such a value, and a
        # reading not yet far keeps that token in its checks (Driver._checked, for a
        # salvage to lex again): there, the lexer's.)
        skip = always | shifted
    else:
        skip = always
    return plain_starting(allowed, firsts, ch, skip)


def _shifts_plain(c: Any, state: Any, term: str, on_way: set) -> bool:
    """Whether the table at `state` takes `term` reducing no empty rule (no left-out tag
    supplied) first, whatever the stack under it (table.shifts_plain's answer for any
    stack with `state` on top; False: not sure)."""
    action = c.states[state].get(term)
    if action is None:
        return False
    if action[0] is Shift:
        return True
    rule = action[1]
    key = (state, term)
    if not rule.expansion or key in on_way:
        return False
    on_way.add(key)
    name = rule.origin.name
    for under in _under(c, state, len(rule.expansion)):
        goto = c.states[under].get(name)
        if goto is None or not _shifts_plain(c, goto[1], term, on_way):
            return False
    # (Off the way once told: a state two reductions reach (cofl's `__element_star` after
    # `value: VALUE`, under a value and under an element) is no cycle, and its answer was
    # taken for "not sure": each tag after a value was lexed token by token.)
    on_way.discard(key)
    return True


def _build_function_param(c: Any) -> Any:
    """Qwen3-Coder's tag, `<parameter=KEY>`: its tokens one after another, no blanks
    between them (KEY reads any but a line's break; a tag that breaks its line before
    its `>` is the loop's). And a call's opener, `<function=NAME>`, where the grammar
    reads its name so, each with the blanks before it (an optional part, skipped as
    _build_invoke's are): a value of a thousand of them, one a line, each a call of its
    own, lexed each tag's tokens one by one."""
    terms = c.terminals
    by_literal = {t.literal: name for name, t in terms.items() if t.literal is not None}
    if ">" not in by_literal or any(name not in terms or terms[name].source != source for name, source in _FP_SOURCES.items()):
        return False
    if _FP_BARE in terms and terms[_FP_BARE].source != _FP_BARE_SOURCE:
        return False
    need = (_FP_PARAM, "KEY")
    flags = {terms[name].pattern.flags for name in need}
    if len(flags) != 1:
        return False
    param, key = (f"(?>{terms[name].source})" for name in need)
    name = terms.get("NAME")
    if (
        name is None or name.literal is not None or name.source != _FP_NAME or name.pattern.flags not in flags
        or len(c.ignore) != 1 or c.ignore[0].source != _WS or c.ignore[0].pattern.flags not in flags
    ):
        pattern = regex.compile(f"({param})({key})(>)", next(iter(flags)))
        return pattern, ((1, _FP_PARAM), (2, "KEY"), (3, by_literal[">"])), by_literal, ("<",)
    ws = f"(?>{c.ignore[0].source})"
    function = f"(?>{terms['FUNCTION'].source})"
    pattern = regex.compile(f"(?:({ws}))?(?:({param})({key})|({function})((?>{name.source})))(>)", next(iter(flags)))
    plan = ((1, None), (2, _FP_PARAM), (3, "KEY"), (4, "FUNCTION"), (5, "NAME"), (6, by_literal[">"]))
    # (Keyed as _build_invoke's plans: whether the match has the blanks before the tag,
    # whether its opener is a parameter's.)
    plans = {}
    for has_lead in (False, True):
        for has_param in (False, True):
            absent = (set() if has_lead else {1}) | ({4, 5} if has_param else {2, 3})
            plans[has_lead, has_param, False] = tuple(entry for entry in plan if entry[0] not in absent)
    if "JSON" in terms:
        c.derived["tagread_never"] = dict.fromkeys((None, _FP_PARAM, "FUNCTION"), _FP_NEVER)
    return pattern, plan, by_literal, LEADS, ((1, 2, None), plans)


def _build_invoke(c: Any) -> Any:
    terms = c.terminals
    by_literal = {t.literal: name for name, t in terms.items() if t.literal is not None}
    need = (_PARAM, _QUOTE, _ATTR)
    if any(name not in terms or terms[name].literal is not None for name in need):
        return False
    if any(lit not in by_literal for lit in ("name", "=", ">")) or len(c.ignore) != 1 or c.ignore[0].source != _WS:
        return False
    if any(name in terms and terms[name].source != source for name, source in _SOURCES.items()):
        return False
    flags = {terms[name].pattern.flags for name in need} | {c.ignore[0].pattern.flags}
    if len(flags) != 1 or any(regex.match(r"\(\?[aiLmsuxV0-9]+\)", terms[name].source) for name in need):
        return False  # (a pattern with flags of its own: not set inside a larger one)
    ws = f"(?>{c.ignore[0].source})"
    param, quote, attr = (f"(?>{terms[name].source})" for name in need)
    kinds = [lit for lit in ("string", "type") if lit in by_literal]
    plan: list = []
    parts: list = []

    def group(source: str, term: Any) -> None:
        parts.append(f"({source})")
        plan.append((len(plan) + 1, term))

    # The blanks before the tag, if any (an optional part): skipped where no terminal of
    # the state begins with them, as the lexer skips them (a tag on a line of its own
    # comes after a line's break, which the driver's loop met before the tag's `<`).
    parts.append("(?:")
    group(ws, None)
    parts.append(")?")
    lead = len(plan)  # (the optional parts' groups, told apart below: `plans`)
    if "INVOKE" in terms:
        # (A call's opener, `<invoke name="f">`, `<function name="f">`, is read so too: a
        # value of a thousand of them, one a line, each a call of its own, lexed each tag's
        # tokens one by one. One of the two groups matches; the other's part is passed
        # over, as an optional one.)
        if terms["INVOKE"].pattern.flags not in flags or regex.match(r"\(\?[aiLmsuxV0-9]+\)", terms["INVOKE"].source):
            return False
        parts.append("(?:")
        group(param, _PARAM)
        parts.append("|")
        group(f"(?>{terms['INVOKE'].source})", "INVOKE")
        parts.append(")")
        invoke = len(plan)
    else:
        group(param, _PARAM)
        invoke = None
    opener = lead + 1
    group(ws, None)
    group("name", by_literal["name"])
    group("=", by_literal["="])
    group(quote, _QUOTE)
    group(attr, _ATTR)
    group(quote, _QUOTE)
    head = "".join(parts)
    parts.clear()
    kind_groups: tuple = ()
    if kinds:
        first_kind = len(plan) + 1
        group(ws, None)
        group("|".join(kinds), "kind")
        group("=", by_literal["="])
        group(quote, _QUOTE)
        group(attr, _ATTR)
        group(quote, _QUOTE)
        head += "(?:" + "".join(parts) + ")?"
        parts.clear()
        kind_groups = tuple(range(first_kind, len(plan) + 1))
    group(">", by_literal[">"])
    head += "".join(parts)
    pattern = regex.compile(head, next(iter(flags)))
    # The plan's groups that a match has, told by its optional parts: the blanks before
    # the tag, the opener (`<param…` or the call's `<invoke…`), the `string=`/`type=`
    # attribute. Keyed by whether each of the three has its group (the first of the
    # attribute's), each plan lists only groups the match then has: the reader passes
    # over no absent group one by one (half of an invoke tag's fifteen).
    plans = {}
    for has_lead in (False, True):
        for has_param in (False, True) if invoke is not None else (True,):
            for has_kind in (False, True) if kind_groups else (False,):
                absent = set() if has_lead else {lead}
                if invoke is not None:
                    absent.add(invoke if has_param else opener)
                if not has_kind:
                    absent.update(kind_groups)
                plans[has_lead, has_param, has_kind] = tuple(entry for entry in plan if entry[0] not in absent)
    probes = (lead, opener, kind_groups[0] if kind_groups else None)
    return pattern, tuple(plan), by_literal, LEADS, (probes, plans)
