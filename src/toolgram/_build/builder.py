"""From a region's parse tree to calls.

A grammar frames a region; its rule names say what each part means. They are the
vocabulary of _grammar/vocabulary.py (grammars/README.md's table is made from it):
the rules read at region level each have a handler here (_on_<rule>, the table
_HANDLERS); a call's parts are read by _call.
"""

from __future__ import annotations

import json
import functools
import re
from contextvars import ContextVar
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .._lalr.tree import Tree
from .._tools.tools import unknown_tool

from .._recover import repair as _repair
from .._grammar.vocabulary import CALL_HOLDERS, OPAQUE, REGION_LEVEL, rule_name
from .._grammar.vocabulary import _RULE_NAMES
from .._grammar.vocabulary import CALL_KINDS as _CALL_KINDS
from .._lalr.table import ends_something
from .._lalr.tokens import Tok
from .._lalr.close import CUT_ROOM, cut_markup, cut_marker, value_closers
from .._lalr.extent import _string_end, outside_strings
from .loose import StrayDelimiter, decode_loose
from .depth import VALUE_DEPTH, TooDeep, too_deep_message
from .coerce import Node, coerce_param, repeated_item
from .._grammar.words import lazy



@dataclass
class Draft:
    """A call as read, before the offered tools are consulted."""

    name: str
    arguments: Any = None  # dict when readable
    id: str | None = None
    kind: str = "tool"
    span: tuple[int, int] = (0, 0)
    repairs: list[str] = field(default_factory=list)
    error: str | None = None  # e.g. non-object arguments
    # (The error is that an argument's value cannot be read: Unreadable.value. Asked by
    # the issue-19 list rule, _scan/region.py's _offered_broken.)
    value_broke: bool = field(default=False, compare=False)
    instructions: str | None = None
    params: list[tuple[str, str, str | None]] = field(default_factory=list)
    # Where the call's own markers start, where Builder.items moved its span's start back
    # to the region's (the first of several calls of a format a stream announces by
    # name: its id is made from it); None: where its span starts (not -1: a position moved back by a
    # buffer's base may be negative for a while, and must be moved forward again). A call refused there is
    # an error from here on, the region's opener before it markup (issue 19), as it was
    # before the move: the move is for a call's id, which an error has none of.
    opened: int | None = field(default=None, compare=False)


@dataclass
class Prose:
    text: str
    # Where it lies in the reply, when it is the reply's own text there (a grammar's
    # `prose` or `reasoning` rule), for the segments; None: text made from the reply
    # (a JSON message's decoded string).
    span: tuple[int, int] | None = field(default=None, compare=False)


@dataclass
class Reasoning(Prose):
    """Text a grammar marks as reasoning (e.g. gpt-oss's analysis channel). A Prose
    subclass so that code unaware of it still keeps the text; check it first."""


def _draft(
    kind: str, span: tuple[int, int], name: str = "", arguments: Any = None, repairs: list | None = None, params: list | None = None, _new=object.__new__
) -> Draft:
    """Draft(name="", kind=kind, span=span) (or with the name, arguments, repairs and
    params given) without the dataclass's __init__ (its defaults each set in turn, a
    factory called for each list): the record given its __dict__ whole, as
    _result.model.make_call makes a ToolCall; Builder._call makes one per call. Every
    field, in the class's order (tests/test_public_api.py checks it)."""
    draft = _new(Draft)
    draft.__dict__ = {
        "name": name, "arguments": arguments, "id": None, "kind": kind, "span": span,
        "repairs": [] if repairs is None else repairs, "error": None,
        "value_broke": False, "instructions": None, "params": [] if params is None else params,
        "opened": None,
    }  # fmt: skip
    return draft


_PLAIN_PY = re.compile(r'-?(?:0|[1-9][0-9]{0,17})|"[^"\\\x00-\x1f]*"')  # (Builder._coerce: a value read at once)
_PLAIN_TRIES = 64  # (Builder._plain_memo: the keys it makes before one is found, or it is dropped)
_PLAIN_FOUND = 1 << 62  # (one was found: tries left that never run out)
_NONE: frozenset = frozenset()  # (Builder._call's no_value, for a plain call: none)
_NO_COLLECT: dict = {}  # (Builder._collected where no key is written twice: only read)
_QUOTE_ENDS = ("'", '"')  # (Builder._slipped reads a value that ends with one)


class Unreadable(Exception):
    """The region is not a call we can read; str() says why. `called`: the grammar read
    it whole as a call, which only its arguments break (`f(a=1, a=2)`): its failure is
    told even where a format's failures are not (a quiet one, a bare reply), as a stray
    quote's is (see _scan/mention.py's note_failure). `deep`: an argument nests deeper
    than VALUE_DEPTH, which no shorter reading of the region mends (see salvage_points).
    `value`: an argument's value is what cannot be read (_value_broke; _scan/salvage.py's
    salvage tells a bare call so broken)."""

    called = False
    deep = False
    value = False
    name: str | None = None  # (a deep call's name, where read before its arguments: see build)
    # (A call read whole before the call the end of the reply cut, held back as that call
    # is kept (Builder._before_a_cut_call), without tools: its parts, for _keyword_first
    # to tell should every call of the region break (held_parts); and whether it is then
    # a call to tell, should no reading of the region keep that cut call either (held:
    # see _held_told, _scan/salvage.py's salvage).)
    held_parts: Any = None
    held = False
    unknown: str | None = None  # (a call of this tool, not offered: told as Unknown tool, see _unreadable)


def _too_deep(key: str | None) -> Unreadable:
    exc = Unreadable(too_deep_message(key))
    exc.deep = True
    return exc


def _value_broke(key: str, why: Exception) -> Unreadable:
    exc = Unreadable(f"cannot read the value of {key!r} ({why})")
    exc.value = True
    return exc


def _text(node: Any, buf: str | None = None) -> str:
    """A rule's text: what the reply holds from its first token's start to its last
    token's end (buf: the text the tokens' places index). Not the tokens joined:
    that would lose what lies between them, `%ignore`d spaces (`New   York`) and
    literals Lark leaves out of the tree (the dots of `NAME ("." NAME)*`). Tokens
    left out at either end stay out (a value's quotes); a token of no length is one
    the parser supplied (a missing close marker), not the model's text. Without
    buf (a tree not read from a reply), the tokens joined."""
    if isinstance(node, Tok):
        return node.value
    if not isinstance(node, Tree):
        return ""
    if buf is None:
        return "".join(_text(c) for c in node.children)
    children = node.children
    if len(children) == 1 and type(children[0]) is Tok:
        # (A rule of one token, the commonest: a name, a value. Read without the walk,
        # which is most of the cost of a small call's parts.)
        t = children[0]
        return buf[t.start_pos : t.end_pos] if t.end_pos > t.start_pos else ""
    lo = hi = -1
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, Tok):
            if n.end_pos > n.start_pos:
                lo = n.start_pos if lo < 0 else min(lo, n.start_pos)
                hi = max(hi, n.end_pos)
        elif isinstance(n, Tree):
            stack.extend(n.children)
    return buf[lo:hi] if lo >= 0 else ""


def _shown(text: str, most: int = 40) -> str:
    """A model's text quoted in a message, shortened when long (the text itself
    stays whole in the reply's segments)."""
    text = text.strip()
    return f"`{text}`" if len(text) <= most else f"`{text[: most - 1]}…`"


def _extent(node: Any) -> tuple[int, int] | None:
    if type(node) is Tree:
        got = _shallow_extent(node.children)
        if got is not False:
            return got
    lo = hi = None
    stack = [node]
    pop, push = stack.pop, stack.extend  # (a call's whole tree: thousands of nodes)
    while stack:
        n = pop()
        kind = type(n)  # (told by type first: the isinstance of each of its nodes was a third of the walk)
        if kind is Tree or (kind is not Tok and isinstance(n, Tree)):
            push(n.children)
        elif kind is Tok or isinstance(n, Tok):
            start = n.start_pos
            if start is not None:
                if lo is None or start < lo:
                    lo = start
                end = n.end_pos
                if hi is None or end > hi:
                    hi = end
    return None if lo is None else (lo, hi)


def _shallow_extent(children: list, deeper: bool = True) -> Any:
    """_extent of a rule whose children are tokens, rules of one token each (a name,
    a value: most small calls) and (deeper) rules of those (a keyword argument, its
    key and value), without the walk; False for any other."""
    lo = hi = None
    for c in children:
        if type(c) is Tree:
            inner = c.children
            if not inner:
                continue  # (a rule of nothing, no token in it: a close tag left out, `unclosed`)
            if len(inner) != 1 or type(inner[0]) is not Tok:
                if not deeper:
                    return False
                # (_shallow_extent(inner, False), written out: asked of each parameter of
                # a call of a thousand.)
                for g in inner:
                    if type(g) is Tree:
                        kids = g.children
                        if not kids:
                            continue
                        if len(kids) != 1 or type(kids[0]) is not Tok:
                            return False
                        g = kids[0]
                    elif type(g) is not Tok:
                        return False
                    start = g.start_pos
                    if start is not None:
                        if lo is None or start < lo:
                            lo = start
                        if hi is None or g.end_pos > hi:
                            hi = g.end_pos
                continue
            c = inner[0]
        elif type(c) is not Tok:
            return False
        start = c.start_pos
        if start is not None:
            if lo is None or start < lo:
                lo = start
            if hi is None or c.end_pos > hi:
                hi = c.end_pos
    return None if lo is None else (lo, hi)


def _call_extent(node: Any) -> tuple[int, int] | None:
    """A call's extent, up to the end of its last token, kept or not (the driver
    notes where a call's closing `)` ends: see _driver._close_extent)."""
    extent = _extent(node)
    meta = getattr(node, "_meta", None)
    if extent is not None and meta is not None:
        end = getattr(meta, "end_pos", None)
        if end is not None and end > extent[1]:
            return extent[0], end
    return extent


def _unescape_md(name: str, repairs: list[str]) -> str:
    """A name written Markdown-escaped (`get\\_weather`), as chat models do: unescaped."""
    if "\\_" not in name:
        return name
    _add(repairs, ["escaped_underscores"])
    return name.replace("\\_", "_")


# A parameter name in quotes, or as an attribute: `<parameter="city">`,
# `<parameter=name="city">` (MiniMax's `<parameter name="city">` written in Qwen's tag).
_QUOTED_KEY = lazy(re.compile, r"""(?:name\s*=\s*)?(["'])(.*)\1""", re.S)
# A close tag misspelled (`</parmeter>`, `</param>`) ends a value that the grammar
# ran on to the next parameter: it is markup, not the value's end.
# (Matched from the value's last "</", the only one it can start at, with the blanks
# before it: a search, from each place of a run of blanks, ran to the run's end.)
_MISSPELT_CLOSE = lazy(re.compile, r"</\s*par\w*\s*>\s*")
# The one space between a tag and a value on its line, where no close frames the value
# (see _param_value): a separator, as after `key:` in prose. More than one, or a tab,
# is indentation, the value's own text.
_HEAD_SPACE = lazy(re.compile, r" (?=\S)")
_CUT_WORD = lazy(re.compile, r"[A-Za-z_][\w.]*")  # (Builder._call: a word the end of the reply cut)
_LIST_SHUT = lazy(re.compile, r"[\s\]]*")  # (Builder.build: a list's `]` after its one call)
_FENCE_CLOSE_LINE = lazy(re.compile, r"[ \t]*(\r?\n)(?:[ \t]*\r?\n)*[ \t]*```")  # (Builder.build: a fence's close on a line after prose, blank lines between)
# A close tag opening the text after a payload (Builder._misspelt_end).
_CLOSE_TAG = lazy(re.compile, r"\s*(</\s*[\w\-|]+\s*>?)")


# The character references of XML text (an attribute's value in quotes).
XML_REF_SOURCE = r"&(?:(amp|lt|gt|quot|apos)|#([0-9]{1,7})|#[xX]([0-9a-fA-F]{1,6}));"
_XML_REF = lazy(re.compile, XML_REF_SOURCE)
_XML_NAMED = {"amp": "&", "lt": "<", "gt": ">", "quot": '"', "apos": "'"}


def _xml_char(m: re.Match[str]) -> str:
    if m.group(1):
        return _XML_NAMED[m.group(1)]
    code = int(m.group(2), 10) if m.group(2) else int(m.group(3), 16)
    return chr(code) if 0 < code <= 0x10FFFF and not 0xD800 <= code <= 0xDFFF else m.group(0)


def _attr_text(node: Any, buf: str | None) -> str:
    """A rule's text (see _text); when its token is XML text (a terminal whose name
    ends in `_XML`: the inside of a quoted attribute, Kimi K3's `key="say &quot;hi&quot;"`),
    with its character references read."""
    text = _text(node, buf)
    if isinstance(node, Tree) and "&" in text:
        return _xml_text(node, text)
    return text


def _xml_text(node: Tree, text: str) -> str:
    """`text`, the rule `node`'s, with its character references read where its tokens
    are XML text (_attr_text); as written otherwise."""
    toks = [t for t in node.children if isinstance(t, Tok)]
    if toks and all(t.type.endswith("_XML") for t in toks):
        return xml_refs(text)
    return text


def xml_refs(text: str) -> str:
    """XML text with its character references read: the five named ones (`&quot;`,
    `&amp;`, `&lt;`, `&gt;`, `&apos;`) and numeric ones (`&#34;`, `&#x22;`). Anything
    else with an `&` stays as written (an XML parser would refuse it; the model's text
    is kept). (AttrEcho streams a value so read, holding back a reference begun.)"""
    if "&" not in text:
        return text
    if "&#" in text:
        return _XML_REF.sub(_xml_char, text)
    # (The named ones alone, as the pattern reads them, left to right: `&amp;` last, so
    # that `&amp;lt;` is `&lt;`. A Python call a reference cost a 30 KB value 1.4 ms.)
    return text.replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", '"').replace("&apos;", "'").replace("&amp;", "&")


def _param_key(key: str, repairs: list[str]) -> str:
    key = key.strip()
    if key[-1:] not in ("'", '"'):
        return key  # (_QUOTED_KEY ends with a quote: the commonest key needs no match)
    m = _QUOTED_KEY.fullmatch(key)
    if m is None:
        return key
    _add(repairs, ["quoted_key"])
    return m.group(2).strip()


# A call's name written as an attribute in Qwen's function tag (`<function name=f>`).
_NAME_ATTR = lazy(re.compile, r"name\s*=\s*(?=\S)")


def _call_name(name: str, repairs: list[str]) -> str:
    """A call's name, where the model wrote it in quotes or as an attribute
    (`<function="f">`, `<function name="f">` in Qwen's block): repair quoted_key, as for
    a parameter's name (_param_key)."""
    name = name.strip()
    m = _NAME_ATTR.match(name) if name.startswith("name") else None
    if m is not None:
        _add(repairs, ["quoted_key"])
        name = name[m.end() :]
    return _param_key(name, repairs)


_NOT_FOUND = object()  # (_param_value: the `unclosed` not looked for yet)


def _param_value(param: Tree, buf: str | None, cut: bool = False, text: str | None = None, unclosed: Any = _NOT_FOUND) -> str:
    """The text of a parameter's value. `cut`: the end of the reply cut it (it runs to
    the last token read): no close came, so the one space between its tag and a value
    on the tag's line is layout, as where the close was left out; but it has no end to
    frame, and all the rest is what the model wrote, its trailing whitespace too.
    (text, unclosed: the value's text and the parameter's `unclosed`, found already.)"""
    value = _text(_find(param, "value"), buf) if text is None else text
    if cut:
        return _after_head_space(value)
    if (_find(param, "unclosed") if unclosed is _NOT_FOUND else unclosed) is not None:
        # The close tag was left out (repair closed_tag): the model left the template's
        # layout, and the whitespace before the next tag is layout (`Madrid\n<parameter=unit>`),
        # as is one space between the tag and a value on its line.
        if "</" in value:
            at = value.rfind("</")
            if _MISSPELT_CLOSE.fullmatch(value, at) is not None:
                value = value[:at]
        return _after_head_space(value.rstrip())  # (\s: what rstrip() strips)
    return value


def _simple_param(param: Tree, buf: str | None) -> Any:
    """(the parameter's parts by rule, the first of each, as _find finds it; its value's
    text) where each of its children is a token or a rule of tokens (or none: `unclosed`)
    and its value is written, not blank (so it is no part _cut_short or _valueless
    drops); None for any other (its parts are found one by one). A call of a thousand
    parameters asked each for its value four times, its key, its `unclosed`."""
    found: dict = {}
    for c in param.children:
        if type(c) is not Tree:
            if type(c) is Tok:
                continue
            return None
        kids = c.children
        if kids and (type(kids[0]) is not Tok if len(kids) == 1 else any(type(g) is not Tok for g in kids)):
            return None
        name = _RULE_NAMES.get(c.data) or _rule(c)  # (_rule, its lookup written out: per part of each parameter)
        if name not in found:
            found[name] = c
    value = found.get("value")
    if value is None:
        return None
    text = _text(value, buf)
    if not text.strip():
        return None
    return found, text


def _after_head_space(value: str) -> str:
    """A value whose close never came, without the one space a model writes between
    the tag and a value on its line (`<parameter=path> notes.txt`: Continue #13057, a
    template's newline written as a space). Any more, or a tab, is the value's own
    indentation (`    def f():`) and is kept, as in a closed value: a value's start
    is never cut, and cut_value speaks of its end only."""
    return value[1:] if _HEAD_SPACE.match(value) else value


_SCALARS = frozenset({str, int, float, bool, type(None)})  # (values no caller can change in place)


def _nesting(arguments: dict) -> bool | None:
    """Builder._plain_memo: None where every value of a call's arguments is a scalar (a
    copy of the dict is the call's own); True where some are lists or dicts whose
    elements are such values or containers in turn, to any depth (_json_copy makes the
    call its own); False where any holds something else (not kept)."""
    nested = None
    for v in arguments.values():
        t = type(v)
        if t in _SCALARS:
            continue
        if (t is not list and t is not dict) or not _json_like(v):
            return False
        nested = True
    return nested


def _json_like(value: Any) -> bool:
    """Whether `value` is a scalar, or a list or dict (str keys) of such values, to any depth."""
    t = type(value)
    if t in _SCALARS:
        return True
    if t is list:
        return all(_json_like(v) for v in value)
    if t is dict:
        return all(type(k) is str and _json_like(v) for k, v in value.items())
    return False


def _json_copy(value: Any) -> Any:
    """A copy of a _json_like value that shares no list or dict with it."""
    t = type(value)
    if t is dict:
        return {k: _json_copy(v) for k, v in value.items()}
    if t is list:
        return [_json_copy(v) for v in value]
    return value


def _add(repairs: list[str], more) -> None:
    for r in more:
        if r not in repairs:
            repairs.append(r)


class Builder:
    # Where the last token read from the text ends, when the missing markers were
    # supplied after it (the region was closed for the model); -1: not so.
    cut_at = -1
    # The region ended because the reply did (Driver.ended): (where the last token read
    # from the text ends, where the text ends, whether that token closes something:
    # True, False, or None when it is not known, whether the driver supplied markers
    # there: the frame has a close that never came). None: it did not. Then the region's
    # last call, unless its own end was read, is the one the end cut: what it cut
    # short is the repair cut_value (see _call_end, _call, _json_calls).
    ended: tuple | None = None
    # Where the region's text ends, where it is past the region's end: where the reply
    # did, its last value cut short holding the whitespace after it (_cut_text). -1: not so.
    took_to = -1
    _last: Any = None  # (with ended: the region's last call, or payload of calls)
    # The reply goes on inside the region's last call past the text read (a salvage
    # point inside it: what was begun after it is dropped): its last value was not
    # closed by a tag inside it with prose after (_closed_inside), the call took the rest.
    goes_on = False
    _tail: Prose | None = None  # the prose after the call _call just read (_walk adds it after the call)
    spans: Any = None  # the text's _repair.Spans (see _loads_leading), set by the scanner

    def __init__(self, fmt, tools, region: tuple[int, int], read_calls=None, buf: str | None = None) -> None:
        self.fmt = fmt
        # The text the tree's tokens were read from (their places index it): a rule's
        # text is what it holds between its first and last token (see _text).
        self.buf = buf
        self.quote_passed: dict = {}  # (_repair.quoted_end's record for buf: see _slipped)
        # Python-style calls nested in a JSON format's payload are read by the whole
        # parser, given as read_calls(text, listed) -> calls or None (see _python_calls);
        # None: they are not read.
        self.read_calls = read_calls
        self.tools = tools  # ToolSet or None
        self.fenced, self.unmarked = _shape(fmt)
        self.region = region
        self.args_key = "arguments"
        self.items: list[Draft | Prose] = []
        self.leading_objects = False  # several JSON call objects, the first right after the opener
        self.leading_list = False  # a JSON list of call objects right after the opener
        # Whether a stream announces this format's JSON call objects by their name (its fast
        # frame reads them: set by the scanner, a layer above, see _scan/region.py).
        self.json_named = False
        self._broken: list[Unreadable] = []  # the calls _walk could not read (see build)
        # (raw, type, schema, the tool's schema) -> (value, repairs): a parameter's value
        # as coerce_param read it, for another written the same in this region (`unit=
        # 'celsius'` in each call of a list, a key repeated), where the value is no
        # container a caller could change in one call only.
        self._coerced: dict = {}
        # (text, cut) -> decode_loose's answer, for arguments written the same in another
        # call of the region (Gemma's `call:f{a:1}` lines): only read, never changed.
        self._loose: dict = {}
        # A call's name, and a keyword, as written -> (the name, its repairs): see _named.
        self._call_names: dict = {}
        self._key_names: dict = {}
        # _plain_key -> (name, arguments, repairs, params, _nesting) of a plain call the end of the
        # reply did not cut, read whole: another written the same (a list of one call
        # repeated, thousands) is read as it, its span its own. Its arguments are scalars,
        # or lists and dicts of them (each call given a copy of the dict, and of those:
        # _nesting, _json_copy), and no value of it looked at the text
        # around it (repair.slip_told): what it reads to is its key's. None until the
        # region's first plain call is read (a region of one call keys none); and None
        # again where _PLAIN_TRIES calls were keyed and none was found in it (a list of
        # calls each its own, `f(a="x1")`, `f(a="x2")`, …: each key made and kept for
        # nothing), for _plain_rest calls (twice as many each time it is dropped so),
        # or till lists of a call written the same follow each other (see _call).
        self._plain_memo: dict | None = None
        self._plain_tries = _PLAIN_TRIES  # (keys left to make before one is found: see above)
        self._plain_rest = 0
        self._plain_wait = _PLAIN_TRIES
        # (The call _call began last and its _call_extent: a call it cannot read is
        # spanned so, and the walk of its whole tree is not made again.)
        self._spanned: tuple = (None, None)
        self._pos_cut = False  # (see _call)
        # ([what the builds read by, {id(node): (node, why, unknown, parts, name, span,
        # kind)}]: the plain calls whose positional arguments no parameter names that a
        # build of the region found, given by its RegionReader (region.py's _build; see
        # _failed_of). A salvage's replays share most of their call nodes with the reading
        # they replay: a list of 1,310 such calls was built three times, each read anew.)
        self.failed_memo: list | None = None
        self._failed: dict | None = None
        self._unnamed: tuple | None = None  # (_call's last such failure, for _on_call to keep)
        self._cut_before = False  # (see build)

    # -- entry --------------------------------------------------------------
    def build(self, tree: Any) -> list[Draft | Prose]:
        if self.ended is not None:
            self._last = last = _last_holder(tree)
            # (_before_a_cut_call's answer for any call but the last: asked of each.)
            self._cut_before = not self.ended[2] and last is not None and self._reaches(last)
        if self.failed_memo is not None:
            self._failed = self._failed_of(self.failed_memo)
        self._walk(tree)
        if self._broken:
            # A call that cannot be read, among calls that can (one broken call of a
            # Kimi or DSML section): it is an error, and the others are kept. A region
            # of nothing but broken calls is unreadable as a whole (it stays prose).
            # (Not where one is nested too deeply: that call is its error, its region read,
            # its markup in no text, as one that only _pipeline.finish_call finds too deep
            # is: issue 19, Gemma's, MiniMax-M3's and Cohere's were left as text.)
            # (Nor where that call's name, read before its arguments, is no offered tool:
            # a word of prose read as one, functionary v3.2's `Sure.\n{…}`, whose region
            # would take that prose into the error; qa41 F2. The region stays unreadable,
            # as on main, and the format that reads the call itself may tell it.)
            if len(self._broken) == len([i for i in self.items if isinstance(i, Draft)]) and not any(
                e.deep and (self.tools is None or not e.name or e.name in self.tools) for e in self._broken
            ):
                # (Taken out of the list as it is raised: kept there, its traceback's
                # frames would hold this builder, a cycle only the collector frees.)
                raise _held_told(self._broken.pop(0), self.buf)
        drafts = [i for i in self.items if isinstance(i, Draft)]
        if len(drafts) == 1:
            # The call is the region, its markers included; but for the reply's own text
            # in it, before or after the call (Kimi K2 text in the section), which is not.
            draft = drafts[0]
            at = self.items.index(draft)
            before = any(isinstance(i, Prose) and i.span is not None for i in self.items[:at])
            after = any(isinstance(i, Prose) and i.span is not None for i in self.items[at + 1 :])
            start = draft.span[0] if before and draft.span else self.region[0]
            end = draft.span[1] if after and draft.span else max(self.region[1], self.took_to)
            if after and not before and draft.span and self.buf is not None:
                # (The list's `]` after the call, before the prose, is the call's, as the
                # `[` before it is: ```` ```python\n[f(a=1)]  # note ````; issue 19: the
                # span ended at its `)`.)
                # (Only closers and blanks between them: not an envelope's `]}`, xlam's.)
                shut = _LIST_SHUT.match(self.buf, end)
                then = next(i.span[0] for i in self.items[at + 1 :] if isinstance(i, Prose) and i.span is not None)
                if shut is not None and "]" in shut.group() and shut.end() == then:
                    end = shut.start() + len(shut.group().rstrip())
            draft.span = (start, end)
        elif drafts and drafts[0].span and self._streams_by_name() and not any(
            isinstance(i, Prose) and i.span is not None for i in self.items[: self.items.index(drafts[0])]
        ):
            # Several calls, of a format whose calls a stream announces by their name (its
            # header declares its tags: `stream_call:`; or JSON call objects): the first holds the region's opening
            # markers, as a lone call does, so that its span, and the id made from where it
            # starts, are known once it begins (the stream cannot know yet whether more
            # calls follow: _stream/parser.py).
            draft = drafts[0]
            if draft.span[0] > self.region[0]:
                draft.opened = draft.span[0]
                draft.span = (self.region[0], draft.span[1])
        if self.buf is not None and self.items and type(self.items[-1]) is Prose and self.items[-1].span is not None:
            # The line break that ends the region's last prose line (a fenced `# note`),
            # right before the fence's close on its own line, is the prose's: markup is
            # the close alone, and the text after the fence keeps its own line (issue 19:
            # ```` # note\n``` Done. ```` read `# note Done.`; so did blank lines between
            # the comment and the close, which are the fence's, as blanks before it are).
            last = self.items[-1]
            brk = _FENCE_CLOSE_LINE.match(self.buf, last.span[1], self.region[1])
            if brk is not None and brk.end() == self.region[1]:
                self.items[-1] = Prose(last.text + brk.group(1), (last.span[0], last.span[1] + len(brk.group(1))))
        return self.items

    def _streams_by_name(self) -> bool:
        """Whether a stream announces the calls of this region by their name (StreamParser's
        announce="name"; Scanner.early_call) from its start: the format's header declares its
        tags (`stream_call:`) or its calls' opener (`stream_json:`, `stream_python:`), or the region is JSON call objects one after another,
        or a list of them, the first right after the opener, read through a fast frame."""
        fmt = self.fmt
        if getattr(fmt, "stream_call", None) is not None or getattr(fmt, "stream_json", "") or getattr(fmt, "stream_python", ""):
            return True
        if getattr(fmt, "stream_pycall", "") or getattr(fmt, "stream_loose", "") or getattr(fmt, "stream_attr", ""):
            return True  # (a Python-style call's own opener, Gemma's call, BFCL's: see _grammar/tags.py)
        return (self.leading_objects or self.leading_list) and self.json_named

    def _walk(self, node: Any) -> None:
        # A rule of the vocabulary read at region level goes to its handler (_on_<rule>,
        # see _HANDLERS); any other rule is structure: its children are walked.
        handlers, known = _HANDLERS, _RULE_NAMES
        stack = [node]
        while stack:
            n = stack.pop()
            if type(n) is not Tree and not isinstance(n, Tree):
                continue
            d = known.get(n.data)  # (_rule, its lookup written out: a list of thousands of calls asks it of each)
            handler = handlers.get(d if d is not None else rule_name(n.data))
            if handler is not None:
                handler(self, n)
            else:
                stack.extend(reversed(n.children))

    def _failed_of(self, held: list) -> dict:
        """The memo of broken plain calls this build shares with the region's earlier
        ones (held: [key, memo]), a new one where they read another text (the object: a
        stream's grows anew), tools, format or nested calls' reader. Where the reply's end
        is not in a plain call (cut_open), _call reads it from its node and those alone, up
        to its positional arguments' failure, whose telling alone reads the build's end
        (_unnamed_told, made again at each build). Not the items before it (_broken is read
        only where the end cut the call), nor the plain memo (whose answers are _call's)."""
        key = (self.fmt, self.tools, self.buf, self.read_calls)
        kept = held[0]
        if kept is not None and all(a is b for a, b in zip(kept, key)):
            return held[1]
        held[0], held[1] = key, {}
        return held[1]

    def _on_call(self, n: Tree) -> None:
        failed = self._failed
        if failed is not None and (self.ended is None or n is not self._last):
            got = failed.get(id(n))
            if got is not None and got[0] is n:
                # (Read by an earlier build, broken so: told again in its place, as _call
                # would, its exception made afresh.)
                exc = Unreadable(got[1])
                if got[2] is not None:
                    exc.unknown = got[2]
                self._unnamed_told(exc, n, got[3], got[4], False)
                self._unreadable(exc, got[5], got[6])
                return
        else:
            failed = None
        kind = _CALL_KINDS.get(_RULE_NAMES.get(n.data)) or _CALL_KINDS[_rule(n)]
        self._tail = None
        try:
            self.items.append(self._call(n, kind))
            if self._tail is not None:
                # Its payload ran on past its arguments, into prose: the model left
                # out the close marker and wrote on (Gemma's `}` then a sentence).
                self.items.append(self._tail)
        except Unreadable as exc:
            span = self._spanned[1] if self._spanned[0] is n else _call_extent(n)
            told = self._unnamed
            if failed is not None and told is not None and told[0] is exc and span is not None:
                failed[id(n)] = (n, str(exc), exc.unknown, told[1], told[2], span, kind)
            self._unnamed = None
            self._unreadable(exc, span, kind)

    _on_agent_call = _on_memory_call = _on_call

    def _unreadable(self, exc: Unreadable, span: tuple[int, int] | None, kind: str = "tool") -> None:
        """A part of the region that is no call it can read: an error for the model,
        in its place; the region's other calls stand (see build)."""
        self._broken.append(exc.with_traceback(None))  # (see build: its frames hold this builder)
        if exc.unknown is not None and self.tools is not None:
            error = unknown_tool(exc.unknown, self.tools)
        else:
            error = f"Couldn't read a tool call: {exc}."
        self.items.append(Draft(name="", kind=kind, span=span or self.region, error=error, value_broke=exc.value))

    def _on_not_call(self, n: Tree) -> None:
        # An element of a list of calls that is no call (`5`, `None`): an error for the
        # model, in its place; the list's other calls stand (as in a JSON list).
        self._unreadable(Unreadable(f"the list holds {_shown(_text(n, self.buf))} where a call belongs"), _extent(n))

    def _payload_cut(self, n: Tree) -> bool:
        """Whether the payload `n` (JSON of calls) runs to where the reply ended: it is
        the region's last, and the last token read from the text (see ended)."""
        if self.ended is not None and n is self._last and self._reaches(n):
            return True
        # Or an end-of-turn token of the format that its grammar reads follows it
        # (Hermes's `<|im_end|>`): the model's turn, and so its reply, ended there.
        extent = _extent(n) if self.fmt.end_of_turn else None
        if extent is None:
            return False
        at = extent[1]
        while at < self.region[1] and self.buf[at].isspace():
            at += 1
        return self.buf.startswith(self.fmt.end_of_turn, at)

    def _on_json_calls(self, n: Tree) -> None:
        try:
            self._json_calls(n, self._payload_cut(n))
        except Unreadable as exc:
            # (A JSON element of a Python list of calls that is none, `{"x": 1}`: alone
            # in its region, build() raises it again.)
            self._unreadable(exc, _extent(n))

    def _on_keyed_calls(self, n: Tree) -> None:
        self._keyed_calls(n, self._payload_cut(n))

    def _on_json_reply(self, n: Tree) -> None:
        try:
            self._json_reply(n, self._payload_cut(n))
        except Unreadable as exc:
            if not any(type(i) is Draft and not i.error for i in self.items):
                raise
            # An object after calls (one a line, or after `;`) that cannot be read: the
            # model's next call, broken. An error in its place; the calls before it stand
            # (as in a JSON list of calls, and as Llama 3's objects on their lines).
            self._unreadable(exc, _extent(n))

    def _on_reasoning(self, n: Tree) -> None:
        self.items.append(Reasoning(_text(n, self.buf), _extent(n)))

    def _on_prose(self, n: Tree) -> None:
        self.items.append(Prose(_text(n, self.buf), _extent(n)))

    def _on_unclosed(self, n: Tree) -> None:
        # A call's end marker supplied outside its rule (Step-3's block around the
        # call): the call before it was left open.
        last = next((i for i in reversed(self.items) if isinstance(i, Draft)), None)
        if last is not None:
            _add(last.repairs, ["closed_tag"])

    def _on_missing_comma(self, n: Tree) -> None:
        # Two calls of a list with no comma between them (a line break, a space, a `;`):
        # both are read, the one before the gap records it.
        last = next((i for i in reversed(self.items) if isinstance(i, Draft)), None)
        if last is not None:
            _add(last.repairs, ["missing_comma"])

    # -- one call from grammar parts ------------------------------------------
    def _call(self, node: Tree, kind: str) -> Draft:
        meta = node._meta
        # (A call pyframe put on the stack whole is plain by its making: see Meta.plain.)
        plain = node.children if meta is not None and meta.plain else _plain_parts(node)
        memo = None
        if plain is not None and self._plain_memo is not None and self.buf is not None and (self.ended is None or node is not self._last):
            # (A plain call written as one before it in the region, name, keywords and
            # values, the end of the reply not in it: what it reads to but for its span,
            # that call's; see _plain_memo.)
            twin = meta.twin if meta is not None else None
            memo = twin._meta.key if twin is not None else None  # (written the same: pyframe._again)
            if memo is None or memo[0] != kind:
                memo = _plain_key(kind, plain, self.buf)
                if meta is not None and meta.plain:
                    meta.key = memo
            got = self._plain_memo.get(memo) if memo is not None else None
            if got is None:
                self._plain_tries -= 1
            else:
                self._plain_tries = _PLAIN_FOUND  # (found once: the memo is kept for the region)
                # (A call pyframe made ends with its `)`, past its other tokens.)
                span = (plain[0].children[0].start_pos, meta.end_pos) if meta is not None and meta.plain else _plain_span(node, plain)
                return _draft(kind, span, got[0], dict(got[1]) if got[4] is None else _json_copy(got[1]), list(got[2]), list(got[3]))
        elif self._plain_rest:
            # (The memo dropped: tried again after so many calls, or at once where calls
            # are written the same after all, a list each, one after another: pyframe._again.)
            self._plain_rest -= 1
            if not self._plain_rest or (meta is not None and meta.twin is not None):
                self._plain_rest = 0
                self._plain_memo, self._plain_tries = {}, _PLAIN_TRIES
        if plain is None:
            self._spanned = (node, _call_extent(node))
        draft = _draft(kind, self.region if plain is not None else self._spanned[1] or self.region)
        name_end = -1
        positional: list[str] = []
        args_text = None
        code_text = None
        elements: list[Node] = []
        # The reply ended in this call (the region's last, its own end not read): whether
        # that end cut a value short (`short`, once a part that reads its own end has
        # told: a JSON or Python value, Gemma's object; see the end of this method).
        end = self._call_end(node) if self.ended is not None and node is self._last else _READ
        cut_open = end is not _READ
        self._pos_cut = False  # (the reply's end cut a positional argument of this call: _call_end)
        if plain is not None:
            # (A Python call's name and arguments, each one token: read at once, as the
            # loop below reads them.)
            parts = plain
            last_arg = (plain[-1] if len(plain) > 1 else None) if cut_open else None
            name_end, short = self._plain(node, plain, draft, positional, cut_open)
        else:
            parts = _parts(node)
            last_arg = _last_arg(node, parts) if cut_open else None
            short = None
        # (The call's last part that holds arguments, whether or not the end cut it: asked
        # of each parameter whose close is missing, found once. Each of a thousand such
        # parameters looking again through all the call's parts made the call quadratic.)
        final_arg = last_arg if last_arg is not None else _NOT_YET
        args_cut = False
        args_at = -1
        cut_param = -1  # (the index in draft.params of a raw value the end of the reply cut)
        no_value: set[int] = set() if plain is None else _NONE  # (the `unclosed` of parameters whose value never began)
        known = _RULE_NAMES
        for child in parts if plain is None else ():
            d = known.get(child.data) or _rule(child)  # (_rule, its lookup written out: a call of a thousand parameters has eight thousand parts)
            if d not in _CALL_PARTS:
                continue  # (a part's own parts, a kwarg's key and value: read with it)
            if d == "unclosed":
                # (Each of a thousand parameters whose closes were left out has one: told
                # first, as the last branch below told it.)
                if id(child) not in no_value and "closed_tag" not in draft.repairs:
                    draft.repairs.append("closed_tag")
                continue
            if d == "name":
                draft.name = self._named(_attr_text(child, self.buf), draft.repairs, True)
                name_end = (_extent(child) or (0, 0))[1]
            elif d == "id":
                draft.id = _text(child, self.buf).strip()
            elif d == "instructions":
                draft.instructions = _text(child, self.buf).strip()
            elif d == "args":
                args_text = _text(child, self.buf)
                args_at = (_extent(child) or (-1, -1))[0]
                args_cut = cut_open and self._reaches(child)
            elif d == "param" and _find(child, "key") is None and _text(_find(child, "value"), self.buf).strip():
                # A parameter tag with no name at all (Qwen's `<parameter>`) holding a
                # value, whole or cut by the end: nothing tells which parameter it is,
                # and the call is not run with that value missing (issue 19). Told, as
                # BFCL's nameless `<param>hello</param>` is, where the end cut it too.
                nameless = Unreadable("a parameter has no name")
                nameless.called = True
                raise nameless
            elif (d == "param" or d == "typed_param") and (simple := (None if child is last_arg else _simple_param(child, self.buf))) is None and (
                self._cut_short(child) or (child is last_arg and (_unbegun(child) or self._cut_unwritten(child) or self._cut_tag(child)))
                or _valueless(child)
            ):
                # (The last one, where the end cut the call: a key with no value. Or one
                # whose value never began, the next part right after it: its empty
                # `unclosed` stands for the value, no tag left open.)
                _add(draft.repairs, ["dropped_partial_argument"])
                if _valueless(child):
                    no_value.add(id(child.children[-1]))
                unopened = _find(child, "unopened")
                if unopened is not None:
                    no_value.add(id(unopened))  # (its open tag was cut, not left out: _cut_tag)
                if child is last_arg:
                    short = True
            elif d == "param" or d == "typed_param":
                # (simple: its parts, each found once, where each is a rule of tokens, its
                # value written: _simple_param. Else each is found as it is asked.)
                found = simple[0] if simple is not None else None
                key = _param_key(_attr_text(found.get("key") if found is not None else _find(child, "key"), self.buf), draft.repairs)
                if not key:
                    # A parameter tag with no name (`<parameter>`, `<parameter e=>`): no
                    # argument can be made of it, and none named "" is made silently.
                    raise Unreadable("a parameter has no name")
                if d == "typed_param":
                    typ = _attr_text(found.get("type") if found is not None else _find(child, "type"), self.buf).strip()
                else:
                    typ = None
                if simple is not None:
                    value = _param_value(child, self.buf, text=simple[1], unclosed=found.get("unclosed"))
                else:
                    value = _param_value(child, self.buf)
                tail = None
                last = child.children[-1] if child.children else None
                if type(last) is Tree and known.get(last.data) == "unclosed":
                    missing = True  # (_close_missing's first answer, asked of each parameter whose close was left out)
                else:
                    missing = self._close_missing(child)
                if missing and final_arg is _NOT_YET:
                    final_arg = _last_arg(node, parts)
                if missing and child is final_arg and _left_open(node) and not (self.goes_on and node is self._last):
                    value, tail = self._closed_inside(child, value)
                    if tail is not None:
                        self._tail = tail  # (see _walk)
                        if tail.span is not None and draft.span:
                            # (The call ends with the tag that closed its value; the prose is
                            # the reply's own text, a segment of its own.)
                            draft.span = (draft.span[0], tail.span[0])
                        if child is last_arg:
                            short = False  # (its own close ended it: the end cut no value)
                if tail is None and cut_open and child is last_arg and self._reaches(_find(child, "value")):
                    # (The end of the reply cut it: no close frames it, all of it is kept;
                    # but for a close the end cut, `a\n</param`: markup, which closed the
                    # value, framed so. Its repairs are those of the cut, as before.)
                    raw = _text(_find(child, "value"), self.buf)
                    at = self._cut_markup(raw)
                    if at >= 0:
                        value = raw[:at]
                    else:
                        value = _param_value(child, self.buf, True)
                        cut_param = len(draft.params)
                draft.params.append((key, value, typ))
            elif d == "kwarg":
                key = self._named(_text(_find(child, "key"), self.buf), draft.repairs, False)
                value = _find(child, "value")
                text = _text(value, self.buf)
                reaches = cut_open and self._reaches(value)
                extent = _extent(value) or (-1, -1)
                said = self._string_said(text, extent[0], True) if reaches or (child is parts[-1] and self._close_left_out(extent[1])) else None
                if said is not None:
                    (text, said_end), reaches, short = said, False, False
                    if draft.span:
                        draft.span = (draft.span[0], said_end)
                elif reaches:
                    short = _repair.cut_short(text + self._spaced())
                    text = self._cut_text(text, short)
                else:
                    text = self._slipped(value, text, draft.repairs)
                self._python_kwarg(draft, key, text, reaches)
            elif d == "posarg":
                text = _text(child, self.buf)
                if cut_open and self._reaches(child):
                    short = _repair.cut_short(text + self._spaced())
                    text = self._cut_text(text, short)
                    self._pos_cut = True
                else:
                    text = self._slipped(child, text, draft.repairs)
                positional.append(text)
            elif d == "code":
                code_text = _text(child, self.buf)
            elif d == "element":
                if cut_open and child is last_arg and self.ended[2] is False and _tag_cut_unnamed(child):
                    # (BFCL's `<param` the end of the reply cut before its `name=` came:
                    # a parameter begun, its name unknown. Dropped as a cut, not read as
                    # a nameless "item" that collected with a parameter of that name:
                    # `{'item': [42, '']}`, issue 19. Its name may yet follow its other
                    # attributes, `<param value="x"`: dropped too. Not where the last token
                    # read closes something, `<param</params>`: that close ended it, as before.)
                    _add(draft.repairs, ["closed_tag", "dropped_partial_argument", "cut_value"])
                    short = True
                    continue
                cut = (self.ended[0], self._cut_markup) if cut_open and child is last_arg else None
                node = _element(child, draft.repairs, self.buf, cut=cut)
                if not node.key:
                    # An argument with no name (`<param>hello</param>`, `<param value="x"/>`,
                    # `<param</params>`): it was keyed `item`, a name the model never
                    # wrote (`{'item': [42, '']}` beside a parameter so named, issue 19).
                    # With a value, nothing tells which parameter it is: told, as a
                    # nameless `<parameter>` is. With none (`<param/>`, `<param</params>`,
                    # `<param>` the end cut): no argument, dropped and said.
                    if node.text.strip() or node.children:
                        nameless = Unreadable("a parameter has no name")
                        nameless.called = True  # (read whole as a call: told, as a key given twice is)
                        raise nameless
                    _add(draft.repairs, ["dropped_partial_argument"])
                    if cut is not None and self._reaches(child):
                        _add(draft.repairs, ["cut_value"])
                        short = True
                    continue
                elements.append(node)
            elif d == "loose_args":
                reaches = cut_open and self._reaches(child)
                loose = _text(child, self.buf) + (self._spaced() if reaches else "")
                try:
                    root, repairs, tail = self._loose_args(loose, reaches)
                except TooDeep as exc:
                    raise _too_deep(exc.key) from None
                except StrayDelimiter as exc:
                    # (A string holding the format's own quote where no later one ends it:
                    # neither where it ends nor the arguments after it can be told.)
                    what = f'the value of "{exc.key}"' if exc.key else "a value"
                    raise Unreadable(f"{what} holds {exc.delim} where its string cannot end; write it again without that token") from None
                _add(draft.repairs, repairs)
                if reaches:
                    short = "cut_value" in repairs
                elements.extend(root.children)
                if tail.strip() and not self._cut_end(tail):
                    # Prose after the arguments (the close marker left out): prose, in the
                    # region, which runs to the next call or the end, as Hermes's does;
                    # its place in the reply a text segment of its own, the call ending
                    # with its `}` (each character in one segment: QA18 Q10).
                    extent = _extent(child)
                    span = None
                    if extent is not None and self.buf is not None:
                        at = extent[0] + len(loose) - len(tail)
                        span = (at + len(tail) - len(tail.lstrip()), at + len(tail.rstrip()))
                        if draft.span:
                            draft.span = (draft.span[0], at)
                    self._tail = Prose(tail, span)  # (see _walk)
            elif d == "unopened" and id(child) not in no_value:
                _add(draft.repairs, ["opened_tag"])
            elif d == "stray":
                # (Text between the call's values, or before its close: no value holds it,
                # and it is no prose, the call going on after it. Dropped, and said.)
                _add(draft.repairs, ["stray_text"])
        if not draft.name and code_text is not None:
            draft.name = getattr(self.fmt, "code_tool", "")
        if not draft.name:
            if cut_open and (draft.instructions or draft.id or args_text is not None or elements):
                # The end of the reply cut the call before its name came, after a field
                # the format lets come first (MFCS's <instructions>): a call begun, not
                # a mention of the marker, and not an unnamed call to refuse.
                message = "Couldn't read a tool call: the reply ended before the call's name."
                return Draft(name="", kind=kind, span=draft.span, error=message)
            raise Unreadable("the call has no name")
        if cut_open and name_end >= 0 and name_end == self.ended[0] and not self._sure_name(draft.name):
            # The text ends with the name, its closing delimiter supplied (by the driver,
            # or the grammar's `unclosed`: DeepSeek V3's `<｜tool▁sep｜>get_wea`): the name
            # itself may be cut (`<function=special_function` of special_function_with_opt).
            # Only an offered name that no other offered name extends is read (none
            # without tools): told as a cut, not as an unknown tool.
            message = "Couldn't read a tool call: the reply ended inside the call's name."
            return Draft(name="", kind=kind, span=draft.span, error=message)
        if args_text is not None:
            draft.arguments = self._decode_args(args_text, draft, args_cut, args_at)
            if self._tail is not None and self._tail.span is not None and draft.span:
                draft.span = (draft.span[0], self._tail.span[0])  # (the call ends with its value)
            if args_cut:
                short = "cut_value" in draft.repairs
        elif code_text is not None:
            # Raw code (a python tool): the whitespace around it is dropped.
            import textwrap  # (not at import: few replies hold raw code)

            draft.arguments = {"code": textwrap.dedent(code_text.strip("\r\n")).strip()}
        else:
            draft.arguments = {}
        schema = self.tools.schema(draft.name) if self.tools is not None else None
        if positional:
            names = list((schema or {}).get("properties", {}) or {})
            if len(names) < len(positional) and self._pos_cut and self._broken and _CUT_WORD.fullmatch(positional[-1].strip()):
                # A word the end of the reply cut as the call's last argument, no parameter
                # to name it (`get_time(t`), after a broken call of the region: a keyword's
                # name begun, dropped, as the salvage drops it where the broken call is the
                # list's first (issue 19: it was read as a positional argument, the cut call
                # an error). (Only there: a bare reply cut so, `f.g(de`, stays prose.)
                positional.pop()
                _add(draft.repairs, ["dropped_partial_argument", "cut_value"])
            if len(names) < len(positional):
                if any(typ == "python" and _closes_list(raw) for _, raw, typ in draft.params):
                    # A keyword's value ran on over the list's `]` (`[f(a=1],<|tool_call_end|>`):
                    # what follows the `]` was read as arguments, and the call has none
                    # positional. Why it fails is that `]`, as salvage.list_closed tells it.
                    unnamed = Unreadable(LIST_CLOSED_EARLY)
                else:
                    # (A bare name among them after a keyword one, `[f(a=1, x)]`, is named: a
                    # parameter whose `=value` the model left out, or a word left unquoted.)
                    # (Not one the end of the reply or a marker may have cut, the call's `)` unread.)
                    shut = not cut_open and self.buf is not None and draft.span is not None and self.buf[draft.span[0] : draft.span[1]].rstrip().endswith(")")
                    bare = [t.strip() for t in positional if t.strip().isidentifier() and t.strip() not in ("True", "False", "None")] if draft.params and shut else ()
                    has = f" ({', '.join(bare)} {'has' if len(bare) == 1 else 'have'} none)" if bare else ""
                    unnamed = Unreadable(f'positional arguments for "{draft.name}" need parameter names{has}')
                    if self.tools is not None and draft.name not in self.tools:
                        # (A tool not offered: that is what is wrong first, and what the
                        # model can mend, not how to name arguments no schema here names.
                        # The region fails as before; the call's error, where a region's
                        # calls are told, is `Unknown tool` (_unreadable; issue 19).)
                        unnamed.unknown = draft.name
                # A call of an offered tool, read whole, that only its arguments break
                # (`[get_weather("Paris")]`): told where a quiet format's failures are not
                # (the whole reply a list, a ```python fence), as it is after a marker
                # (lfm2's) or as a list's second call. A real call is never silent prose.
                self._unnamed_told(unnamed, node, parts, draft.name, cut_open)
                if plain is not None and not cut_open:
                    self._unnamed = (unnamed, parts, draft.name)  # (for failed_memo: _on_call)
                raise unnamed
            draft.params[:0] = [(k, v, "python") for k, v in zip(names, positional)]
        if draft.params and isinstance(draft.arguments, dict):
            props = schema.get("properties") if schema is not None and isinstance(schema, Mapping) else None
            if props is not None and not isinstance(props, Mapping):
                props = None  # (no schema of any parameter: asked once, not of each)
            given: set[str] = set()
            collect = self._collected(draft.params, props, schema)
            for i, (key, raw, typ) in enumerate(draft.params):
                prop = props.get(key) if props is not None else None
                if key in collect:
                    prop = collect[key]
                if typ == "python" and type(raw) is str and _PLAIN_PY.fullmatch(raw) is not None:
                    value, repairs = (raw[1:-1] if raw[0] == '"' else int(raw)), ()  # (_coerce's first reading, written out)
                else:
                    try:
                        value, repairs = self._coerce(raw, typ, prop, schema, i != cut_param)
                    except _repair.RepairError as exc:
                        if str(exc) == _repair.TOO_DEEP:
                            # (Past what the decoder reads, 272 levels: the call an error, its
                            # region read, as one the decoder read past VALUE_DEPTH is
                            # (_pipeline.finish_call), not a broken region whose markup stays
                            # in the text (issue 19).)
                            draft.error = f"Couldn't read a tool call: {too_deep_message(key)}."
                            break
                        raise _value_broke(key, exc) from None
                if repairs:
                    _add(draft.repairs, repairs)
                if key in collect:
                    if key in given:
                        draft.arguments[key].append(value)
                    else:
                        draft.arguments[key] = [value]
                    given.add(key)
                    continue
                if key in given and draft.arguments[key] != value:
                    # An argument given twice, with two values (`f(a=1, a=2)`, which Python
                    # refuses; a parameter tag written twice): which one the model meant,
                    # nothing tells (as for a JSON key written twice: _repair.loads).
                    twice = Unreadable(_repair.given_twice(key, draft.arguments[key], value))
                    twice.called = not self._before_a_cut_call(node)
                    raise twice
                given.add(key)
                draft.arguments[key] = value
        if elements and isinstance(draft.arguments, dict):
            # Nested elements are typed together, as one object against the whole
            # schema, so that repeated names collect into lists.
            try:
                value, repairs = coerce_param(
                    Node(type="object", children=elements), None, schema, schema, self.fmt.framing, self.fmt.repeated
                )
            except _repair.RepairError as exc:
                if str(exc) == _repair.TOO_DEEP:
                    raise _too_deep(getattr(exc, "key", None)) from None  # (a value too deep for the decoder: coerce._strict)
                twice = Unreadable(str(exc))  # (a name given twice: see coerce_node)
                twice.called = True
                raise twice from None
            _add(draft.repairs, repairs)
            draft.arguments.update(value)
        if cut_open:
            if short is None or self._end_marker_last():
                # (A value left empty right before the format's end marker, the last token
                # read, was not cut by the end of the reply: the block was closed.)
                short = self._cut_unread(end, last_arg)
            if short:
                _add(draft.repairs, ["cut_value"])
        nested = _nesting(draft.arguments) if memo is not None and type(draft.arguments) is dict else False
        if nested is not False:
            if self._plain_tries <= 0:
                # (Never found: dropped, for twice as many calls as the last time; see _plain_memo.)
                self._plain_memo, self._plain_rest = None, self._plain_wait
                self._plain_wait *= 2
            else:
                # (A value that is a list or dict, `q=["x"]`, is kept as a copy and each call
                # given its own: no call's container is another's. Such a list repeated went
                # through coerce_param at each call: issue 17.)
                args = dict(draft.arguments) if nested is None else _json_copy(draft.arguments)
                self._plain_memo[memo] = (draft.name, args, tuple(draft.repairs), tuple(draft.params), nested)
        elif plain is not None and self._plain_memo is None and not self._plain_rest:
            self._plain_memo = {}  # (from the region's second plain call on: see _plain_memo)
        return draft

    def _plain(self, node: Tree, parts: list, draft: Draft, positional: list, cut_open: bool) -> tuple[int, bool | None]:
        """What _call's loop reads of the parts of a plain call (_plain_parts): its
        name (in draft), keyword arguments (draft.params) and positional ones, and
        its span (_call_extent, of its tokens); where its name ends, and whether the
        end of the reply cut a value short (None: no value reaches it)."""
        # (Each part a rule of one token: its text, _attr_text's, _token_text's and
        # _python_kwarg's readings written out, asked only where they may differ from
        # the text as it is (an `&` in an XML token, a quote that ends a value, an `=`
        # in it): a list of thousands of calls reads each of them.)
        buf, repairs = self.buf, draft.repairs
        name = parts[0].children[0]
        lo, hi = name.start_pos, name.end_pos
        if buf is None:
            text = name.value
        else:
            text = buf[lo:hi] if hi > lo else ""
        if "&" in text and name.type.endswith("_XML"):
            text = _attr_text(parts[0], buf)
        names = self._call_names
        got = names.get(text)
        if got is None:
            got = names[text] = self._name_of(text, True)
        if got[1]:
            _add(repairs, got[1])
        draft.name = got[0]
        short = None
        params, keys = draft.params, self._key_names
        ended = self.ended[0] if cut_open else -1
        said_end = -1
        for child in parts[1:]:
            children = child.children
            value = children[-1] if len(children) == 1 else children[1].children[0]  # (posarg; kwarg: key, value)
            s, e = value.start_pos, value.end_pos
            if buf is None:
                text = value.value
            else:
                text = buf[s:e] if e > s else ""
            reaches = cut_open and e == ended  # (_reaches: its extent is its token's)
            said = self._string_said(text, s, len(children) == 2) if reaches or (child is parts[-1] and self._close_left_out(e)) else None
            if said is not None:
                (text, said_end), reaches, short = said, False, False
                hi = e = said_end  # (the call ends with its string: _string_said)
            elif reaches:
                short = _repair.cut_short(text + self._spaced())
                text = self._cut_text(text, short)
                self._pos_cut = len(children) == 1
                if self.took_to > hi:
                    hi = self.took_to  # (the whitespace it holds)
            elif text[-1:] in _QUOTE_ENDS and buf is not None and not _whole_string(text):
                text = self._slipped(value, text, repairs)
            if len(children) == 2:
                key = children[0].children[0]
                ks, ke = key.start_pos, key.end_pos
                if buf is None:
                    word = key.value
                else:
                    word = buf[ks:ke] if ke > ks else ""
                got = keys.get(word)
                if got is None:
                    got = keys[word] = self._name_of(word, False)
                if got[1]:
                    _add(repairs, got[1])
                if "=" in text:
                    self._python_kwarg(draft, got[0], text, reaches)
                else:
                    params.append((got[0], text, "python"))  # (_python_kwarg: no keyword can follow)
                if ks < lo:
                    lo = ks
                if ke > hi:
                    hi = ke
            else:
                positional.append(text)
            if s < lo:
                lo = s
            if e > hi:
                hi = e
        end = getattr(getattr(node, "_meta", None), "end_pos", None)
        draft.span = (lo, end) if end is not None and end > hi and said_end < 0 else (lo, hi)
        return name.end_pos, short

    def _named(self, text: str, repairs: list[str], call: bool) -> str:
        """A plain call's name (`call`) or keyword as written, as _call reads it (a
        call's: _call_name, then _unescape_md; a keyword's: stripped, then _unescape_md),
        its repairs added; read once for each name written the same in the region (a
        list of calls names a few tools and keywords, each many times)."""
        names = self._call_names if call else self._key_names
        got = names.get(text)
        if got is None:
            got = names[text] = self._name_of(text, call)
        if got[1]:
            _add(repairs, got[1])
        return got[0]

    @staticmethod
    @functools.lru_cache(maxsize=1024)
    def _name_of(text: str, call: bool) -> tuple[str, tuple[str, ...]]:
        """_named's reading of a name not read before: (the name, its repairs). Of the
        text alone, kept for the process (with tools each line's list is a region, read
        by a builder of its own)."""
        added: list[str] = []
        name = _unescape_md(_call_name(text, added) if call else text.strip(), added)
        return name, tuple(added)

    def _python_kwarg(self, draft: Draft, key: str, text: str, cut: bool) -> None:
        """A Python keyword argument, `key` and its value's text, into draft.params. A
        whole value, then the next keyword argument with no comma before it (`text="ok"
        n=1`, QA19 R11), is each its own argument (not the first value's text, an
        unquoted_string), and the call records missing_comma. `cut`: the end of the reply
        cut the text; a keyword with nothing after its `=` there (`"ok" n=`) is dropped
        (dropped_partial_argument), as `f(a=1, n=` drops it."""
        run_on = _kwargs_run_on(text, cut)
        if run_on is not None:
            _add(draft.repairs, ["missing_comma"])
            for k, v in run_on:
                draft.params.append((key, v, "python"))
                key = _unescape_md(k, draft.repairs)
            text = run_on.last
            if not text:
                _add(draft.repairs, ["dropped_partial_argument"])
                return
        draft.params.append((key, text, "python"))

    def _loose_args(self, text: str, cut: bool) -> tuple:
        """decode_loose(text, cut), once for the arguments a region's calls write the
        same. (Its Nodes and repairs are only read: coerce_param makes new values of
        them, and a failure, raised, is not kept.)"""
        got = self._loose.get((text, cut))
        if got is None:
            got = self._loose[text, cut] = decode_loose(text, cut)
        return got

    def _coerce(self, raw: Any, typ: str | None, prop: Any, schema: Any, closed: bool = True) -> tuple[Any, tuple[str, ...]]:
        """coerce_param, for a parameter of one of the region's calls (`closed`: see
        coerce.frame)."""
        if type(raw) is not str:
            return coerce_param(raw, typ, prop, schema, self.fmt.framing, self.fmt.repeated)
        if typ == "python" and _PLAIN_PY.fullmatch(raw) is not None:
            # (A Python integer, or a "string" of no quote, escape or control character in
            # it: what coerce_param reads it as, json's value, no repair, whatever the
            # schema, without its decoder's call and checks, nor a key for each of a
            # list's thousands of values each its own, `"x1"`, `"x2"`, ….)
            return (raw[1:-1] if raw[0] == '"' else int(raw)), ()
        key = (raw, typ, id(prop), id(schema), closed)
        got = self._coerced.get(key)
        if got is None:
            value, repairs = coerce_param(raw, typ, prop, schema, self.fmt.framing, self.fmt.repeated, closed)
            if type(value) not in _SCALARS:
                return value, repairs
            # (The schemas are kept with it: no other object takes their ids meanwhile.)
            got = self._coerced[key] = (value, repairs, prop, schema)
        return got[0], got[1]

    def _collected(self, params: list, props: Any, schema: Any) -> dict[str, Any]:
        """The parameters written more than once whose values collect into a list (see
        repeated_item), each with the schema of its items."""
        if len(params) < 2:
            return _NO_COLLECT  # (no key written twice)
        seen: set[str] = set()
        twice: set[str] = set()
        for key, _, _ in params:
            (twice if key in seen else seen).add(key)
        collect = {}
        for key in twice:
            prop = props.get(key) if isinstance(props, Mapping) else None
            ok, item = repeated_item(prop, schema, self.fmt.repeated)
            if ok:
                collect[key] = item
        return collect

    def _closed_inside(self, param: Tree, value: str) -> tuple[str, Prose | None]:
        """A raw value its close never closed, which ran on to the next call or the end
        of the reply, holding its own close tag with text after it on the same line
        (GLM's `Paris</arg_value> I will report back.`, Qwen's `</parameter>` then a
        sentence): that tag closed it, and the model left out the call's close and wrote
        on. (value, the prose after the tag, with its place in the reply), or (value,
        None) where it is not so. The
        grammar reads a close tag followed by text as the value's own (a value that
        shows markup), unless a later close ends the value: where none does, the last
        such tag was its close. Only for the last parameter of a call left open (its
        close supplied); not where the text after the tag holds a tag (`<`), which is
        more markup, nor a line break inside it (one line of prose, on the tag's line or
        the next: Qwen writes its close tags on lines of their own)."""
        nest = self.fmt.compiled.nest
        own = nest.own if nest is not None else ()
        # The first such tag that ends its line, as a template writes it, with a line
        # of prose after it that holds no markup but the tag named
        # inside a sentence (`every value ends with </parameter> and …`); else the last
        # such tag, with a line of prose after it that holds no tag at all.
        at, tag = _line_close(value, own)
        if not _closes_then_prose(nest, value, at, tag, True):
            at, tag = max(((value.rfind(t), t) for t in own), default=(-1, ""))
            closes = _closes_then_prose(nest, value, at, tag, False)
            if closes and _named_after_blank(value, at):
                # (The last one named in a sentence after a blank, `It ends with
                # </parameter> here.`: a close glued to the value before it, then that
                # sentence, closed it (QA10 P6); where none did, as before.)
                glued, glued_tag = _sentence_close(nest, value)
                if 0 <= glued < at and not _nested_open(nest, value[:glued], glued_tag):
                    at, tag = glued, glued_tag
            elif not closes:
                # Else the first close (the value's own, or the call's or block's, which
                # the model wrote right after the value: `beta</tool_call> Done.`) with
                # a line of prose after it that names no tag but closers in a sentence.
                at, tag = _sentence_close(nest, value)
                if at < 0 or _nested_open(nest, value[:at], tag):
                    return value, None
        rest = value[at + len(tag) :]
        span = None
        extent = _extent(_find(param, "value"))
        if extent is not None and self.buf is not None:
            raw = self.buf[extent[0] : extent[1]]
            found = -1
            for _ in range(value.count(tag, 0, at) + 1):  # (the same tag, in the raw text)
                found = raw.find(tag, found + 1)
            if found >= 0:
                after = raw[found + len(tag) :]
                start = extent[0] + found + len(tag)
                span = (start + len(after) - len(after.lstrip()), extent[0] + len(raw.rstrip()))
                # (The prose is the reply's text in its span: `value` lost a misspelt
                # close at its end (_param_value), which ends the prose here, not the
                # value: `</function>s\n</paramel>` kept `s` alone, fuzz s7 #11534.)
                rest = after
        return value[:at], Prose(rest.strip(), span)

    def _end_marker_last(self) -> bool:
        """Whether the last token read before the reply ended is the format's end marker."""
        return bool(self.ended[2]) and self.buf.endswith(self.fmt.ends, 0, self.ended[0])

    def _cut_unread(self, end: str, last_arg: Tree | None) -> bool:
        """For the call the reply ended in, where no part that reads its own end (JSON,
        a Python value, Gemma's object) told: whether the end cut it short. Its
        arguments never began (`get_weather(`, `<|message|>`, a name alone) unless the
        last token read ends something; a raw value (XML-ish text, code) ran to the end
        where the format has a close for it that never came; something was begun that
        is no value (a `,`, an opening tag or its `>`). Not so after a close
        (`</parameter>`, `)`, a turn's end token): the values before it were whole; nor
        for a raw value that nothing but the end of the message ends (functionary's
        `>>>python` code): nothing tells a cut one."""
        closer, supplied = self.ended[2], self.ended[3]  # (closer None: not known, an Earley parse)
        if self._end_marker_last():
            # The format's end marker was the last token read: the call was whole, its own
            # close left out before it (Seed-OSS's `<function=f>` then `</seed:tool_call>`).
            return False
        if last_arg is None:
            return end is _MISSING or closer is False or (closer is None and supplied)
        if closer:
            return False
        if self._reaches(last_arg):
            return end is _MISSING or supplied or _ends_unclosed(last_arg)
        return closer is False

    def _decode_args(self, text: str, draft: Draft, cut: bool = False, at: int = -1) -> Any:
        """`cut`: the text ends where the reply ended (see _repair.loads). `at`: where
        the text lies in the reply (-1: not known), for the prose after the value."""
        if not text.strip():
            if cut:
                _add(draft.repairs, ["cut_value"])  # (the arguments never began)
            return {}
        if cut:
            text = self._begun_marker(text)
        # (A text loads() refused before, at this place or another, is not read again:
        # the same value read by the driver that cut it, _lalr/close.py cut, another
        # candidate's build of the region, the same call again in a storm. Spans, as
        # _loads_leading asks it; nothing it knows under cut, which loads reads otherwise.)
        spans = self.spans if not cut and at >= 0 and self.buf is not None else None
        known = _repair._UNSEEN if spans is None else spans.known(self.buf, at, text)
        try:
            if known is not None and known is not _repair._UNSEEN:
                raise _repair.RepairError(known[0])
            try:
                value, repairs = _repair.loads(text, cut)
            except _repair.RepairError as exc:
                if spans is not None:
                    spans.note(self.buf, at, text, exc)
                raise
            if spans is not None and known is _repair._UNSEEN:
                spans.note(self.buf, at, text, None)
        except _repair.RepairError as exc:
            if str(exc) == _repair.TOO_DEEP:
                shallow = _shallow(text)
                if shallow != text:
                    # (Past the decoder's depth: read as the same text made shallow is,
                    # whose value, deeper than VALUE_DEPTH, finish_call tells as the
                    # call's error; where that text reads as no call, as prose: qa42 N2.)
                    return self._decode_args(shallow, draft, cut)
            split = _value_then_prose(text)
            if split is None or str(exc) == _repair.TOO_DEEP:
                failed = Unreadable(str(exc))
                failed.deep = str(exc) == _repair.TOO_DEEP  # (see _loads_leading)
                failed.name = draft.name  # (see build: a deep call of a name not offered)
                raise failed from None
            # A whole JSON value, then prose (DeepSeek V3.1's `{…} Let me know.`,
            # its close marker after the sentence or left out): the value is the
            # arguments, decoded up to its end; the sentence is the reply's prose.
            value_end, prose_start, prose_end = split
            try:
                value, repairs = _repair.loads(text[:value_end])
            except _repair.RepairError:
                raise Unreadable(str(exc)) from None
            span = (at + prose_start, at + prose_end) if at >= 0 else None
            self._tail = Prose(text[prose_start:prose_end], span)  # (see _walk)
        _add(draft.repairs, repairs)
        return self._object_args(value, draft)

    def _list_broke(self, text: str, bracketed: bool) -> bool:
        """A payload of its own (the format's JSON token: xLAM's bare list) that opens as
        a list of calls, its first naming an offered tool (any, with no tools) and giving
        its arguments, and that JSON cannot read: the model's calls, which an item broke
        (`[{"name": "get_weather", "arguments": {…}}, {…, "arguments": {"tz": UTC}}]`).
        Its failure is to be told (Unreadable.called), as a stray quote's, where a quiet
        format's are not: markup of calls is never silent prose."""
        m = _CALL_LIST_HEAD.match(text) if bracketed else None
        return m is not None and (self.tools is None or m.group(1) in self.tools)

    def _object_broke(self, text: str) -> bool:
        """A payload that opens as one call object naming an offered tool and giving
        its arguments' object (`{"name": "get_weather", "arguments": {"city": Paris}}`),
        that JSON cannot read: the model's call, which its arguments broke. Told
        (Unreadable.called), as a broken item of a list of calls is (_list_broke), and
        as the same object naming no tool is (Unknown tool): a call of an offered tool
        is never lost as silent prose. With no tools given, nothing says it is a call.
        Not where a string runs on past its line's end: whether the text after that is
        the string's (a call it quotes) or a call of its own after a string left open is
        the scanner's to read (_scan/instring.py), from the line on, as before."""
        m = _CALL_OBJECT_HEAD.match(text)
        if m is None or self.tools is None or m.group(1) not in self.tools:
            return False
        return not _string_at_line_end(text, m.end())

    def _object_args(self, value: Any, draft: Draft) -> Any:
        if isinstance(value, str):
            # Arguments encoded as a JSON string: decode once more. The string ends
            # where the model stopped writing the arguments: a value it cut short
            # there (`"{\"ticker\": \"AA"`) is cut_value, as at the end of a reply.
            try:
                inner, repairs = _repair.loads(value, cut=True)
            except _repair.RepairError:
                inner = None
                repairs = ()
            if isinstance(inner, dict):
                _add(draft.repairs, ("string_arguments", *repairs))
                return inner
        if value is None:
            return {}
        if not isinstance(value, dict):
            draft.error = f'Arguments for "{draft.name}" must be a JSON object.'
        return value

    # -- JSON payloads ------------------------------------------------------
    def _json_calls(self, node: Tree, cut: bool = False) -> None:
        """`cut`: the payload runs to where the reply ended (see _repair.loads); what
        that end cut short is the last call's (cut_value)."""
        text = _text(node, self.buf)
        whole = _extent(node)
        start = whole[0] if whole else self.region[0]
        # A JSON token is one value already, delimited by its brackets (or cut off by
        # the end): no complete value can lead it with more after.
        bracketed = len(node.children) == 1 and getattr(node.children[0], "type", "") == "JSON"
        fence = _FENCE.match(text) if not bracketed else None
        if fence is not None:
            # A markdown fence around the payload (`<tool_call>```json{…}```</tool_call>`):
            # the JSON is what it holds.
            close = len(text.rstrip())
            if text.endswith("```", fence.end(), close):
                close -= 3
                cut = False  # (the fence closed: its JSON did not run to the end)
            else:
                close = len(text)
            text = text[fence.end() : close]
            start += fence.end()
        if cut and not bracketed:
            text = self._begun_marker(text)
        if not bracketed and not self.fenced and _PY_CALL.match(text):
            calls = _python_calls(text, start, self.read_calls, cut) if self.read_calls is not None else None
            if calls is not None:
                self.items.extend(calls)
                return
        # (In a fence, the word after the backticks is its language, not a call's name.)
        named = _NAMED.match(text) if not bracketed and not self.fenced else None
        broke = ()
        own: list = []  # (a list's elements' own repairs, see _repair.loads)
        if named is not None:
            # The name before the arguments' object, outside it (`get_weather\n{"city": …}`,
            # as functionary writes a call, between Hermes's tags): the object is the arguments.
            left_open: list = []
            arguments, repairs, tail = _loads_leading(text[named.end() :], cut=cut, left_open=left_open)
            value = {"name": named.group(1), "arguments": arguments}
            if id(arguments) in left_open:
                left_open.append(id(value))  # (the call is open where its arguments are)
            repairs = ("name_outside_json", *repairs)
        else:
            left_open = []
            twice: list = []  # an object of calls' fields given twice (see _fields_twice)
            try:
                spans = (self.spans, self.buf, start) if self.spans is not None and self.buf is not None else None
                value, repairs, tail = _loads_leading(
                    text, leading=not bracketed, cut=cut, left_open=left_open, spans=spans, owned=own
                )
            except Unreadable as exc:
                # An object of calls that gives one of its own fields twice: its calls are
                # read, the field is an error (_envelope).
                value = _fields_twice(text, twice) if bracketed else None
                if value is not None:
                    repairs, tail = (), ""
                else:
                    # Call objects a line each, one missing its closing brace (MiniMax-M1's
                    # `{…"cats"}\n{…}`): the bracket scan ran on into the next.
                    several = _objects_by_line(text, start, cut, left_open)
                    if several is None:
                        exc.called = exc.called or self._list_broke(text, bracketed) or self._object_broke(text)
                        # (A fenced format's payload is the list, as a JSON token is.)
                        listed = exc.called or (self.fenced and self._list_broke(text, True))
                        kept = _items_before_broken(text) if listed and not exc.deep else None
                        if kept is None:
                            raise
                        # The calls read whole before the broken one stand; that one is
                        # an error in its place (as `[f(a=1), g(b=)]`'s g is).
                        value, repairs, at = kept
                        tail = ""
                        broke = (Draft(name="", span=(start + at, start + len(text.rstrip())), error=f"Couldn't read a tool call: {exc}."),)
                    else:
                        value, repairs, tail = None, (), "\n"
        if fence is not None:
            repairs = ("fenced_payload", *repairs)
        several = (_several_objects(text, start) or _objects_by_line(text, start, cut, left_open)) if tail else None
        if several is None and tail and (fence is not None or self.fenced) and isinstance(value, dict) and "name" in value:
            # In a fence, a call object then another that JSON cannot read (on the next
            # line, or after `;`): the model's next call, broken. An error in its place,
            # not a remark (as a broken item of a JSON list of calls is).
            broke = _object_after(text, start, tail)
            if broke:
                # (Read on as objects one after another are: the call holds its object.)
                lead = len(text) - len(text.lstrip())
                several = [value], repairs, [(start + lead, start + len(text) - len(tail))], ""
        owned = None  # (each call object's own repairs, where there are several: _mine)
        if several is not None:
            # Call objects one after another (not in a list): each is a call; a remark
            # after them is prose, as after one object.
            value, repairs, spans = several[:3]
            tail = several[3] if len(several) > 3 else ""
            owned = several[4] if len(several) > 4 else None
            # (The first object right after the opener, as a stream announces a call by its
            # name: the first call holds the opening markers, see build.)
            self.leading_objects = fence is None and not text[: spans[0][0] - start].strip()
        else:
            spans = _element_spans(text, start, value)
            if isinstance(value, list) and len(own) == len(value):
                # (A list of calls: a repair is the call's whose text needed it, R9.)
                owned = own
            # (a list right after the opener: a stream announces its calls as it does call
            # objects one after another, see build)
            self.leading_list = fence is None and isinstance(value, list) and _LEADING_LIST.match(text) is not None
        if bracketed and isinstance(value, dict) and "{" in self.fmt.starts and not isinstance(value.get("tool_calls"), list):
            # The object's own brace is the format's marker (xlam's object of calls, on a
            # line of its own): nothing but its "tool_calls" says it holds calls. Decided
            # here, once the whole object is read, whatever field comes first.
            raise Unreadable('a JSON object with no "tool_calls" list')
        if isinstance(value, dict) and isinstance(value.get("tool_calls"), list):
            # {"tool_calls": [...]}: each call's span is its element of that list (found
            # where JSON reads the field, not where the words "tool_calls" first occur: a
            # field before it may hold them).
            fields = _field_spans(text, start)
            where = fields.get("tool_calls")
            if where is not None:
                at = where[1] - start
            else:
                key = text.find('"tool_calls"')
                at = text.find("[", key) if key >= 0 else -1
            spans = _element_spans(text[at:], start + at, value["tool_calls"]) if at >= 0 else None
            envelope = len(self.items)  # (where the object's other fields begin in items)
            self._envelope(value, whole or self.region, fields, twice)
        else:
            envelope = None
        calls = list(_flatten_calls(value, spans))
        count = _owners(owned)
        # What the end of the reply cut is the last call's, not every call's of the payload.
        cut_value, repairs = _take_cut(repairs)
        read: list = []
        broken: Unreadable | None = None
        for i, (obj, span) in enumerate(calls):
            opened = _cut_flags(obj, left_open, cut_value) if i == len(calls) - 1 else 0
            if cut and cut_value and i == len(calls) - 1:
                named = _CUT_NAME.search(text.rstrip())
                if named is not None and not self._sure_name(named.group(1)):
                    # The reply ended inside the name's string (`{"name": "delete_fi`): a
                    # name it may have cut, as a marker format's (see _sure_name).
                    message = "Couldn't read a tool call: the reply ended inside the call's name."
                    read.append(Draft(name="", span=span or whole, error=message))
                    continue
            if i and i == len(calls) - 1 and "closed_json" in repairs:
                mine = _mine(repairs, owned, i, count)
                read.append(
                    self._cut_call(lambda: self._json_call(obj, span or whole, mine, opened), span or whole)
                )
                continue
            try:
                read.append(self._json_call(obj, span or whole, _mine(repairs, owned, i, count), opened))
            except Unreadable as exc:
                # An element of a list of calls that is no call (`{"type": "x"}`, `5`): an
                # error for the model, in its place; the list's other calls stand.
                broken = broken or exc
                read.append(Draft(name="", span=span or whole, error=f"Couldn't read a tool call: {exc}."))
        if broken is not None and not any(isinstance(d, Draft) and not d.error for d in read):
            raise broken  # (no element is a call: the region is none)
        read.extend(broke)
        self.items.extend(read)
        if envelope is not None:
            # The object's fields in the order the model wrote them, the calls among them
            # (`{"tool_calls": […], "thought": "…"}`): build() tells the text before and
            # after a lone call by this order, and the call's span must not take the
            # reasoning written after it (fuzz accounting: a call span over no call segment).
            mine = self.items[envelope:]
            if all(i.span is not None for i in mine):
                self.items[envelope:] = sorted(mine, key=lambda i: i.span[0])
        if tail and not self._cut_end(tail, cut):
            at = start + len(text) - len(tail)  # (tail: the end of the payload's text)
            prose = self._misspelt_end(tail)
            at += len(tail) - len(prose)
            if prose.strip():
                # Prose after the JSON, the close marker left out (`{…} is how you call
                # it`): the text's, in its place; the call before it ends with its JSON.
                lead = len(prose) - len(prose.lstrip())
                self.items.append(Prose(prose, (at + lead, at + len(prose.rstrip()))))
                last = read[-1] if read else None
                if last is not None and last.span is not None and last.span[1] > at:
                    last.span = (last.span[0], at)

    def _misspelt_end(self, tail: str) -> str:
        """The text after a payload's JSON without the misspelt end marker that opens
        it (`</tool_calls>`, `</toolcall>` for `</tool_call>`): markup, not prose."""
        m = _CLOSE_TAG.match(tail)
        if m is None:
            return tail
        tag = m.group(1).lower()
        import difflib  # (not at import: a misspelt close tag is rare)

        for end in self.fmt.ends:
            if end.startswith("</") and tag != end and difflib.SequenceMatcher(None, tag, end).ratio() >= 0.85:
                return tail[m.end() :]
        return tail

    def _begun_marker(self, text: str) -> str:
        """A JSON text that runs to the reply's end, without the marker of the format
        that the end cut short right after its value, outside its strings (`{"a": 1}</param`
        of `</parameters>`, `{…"x"}</tool_c`, `{"a": "x"<`: a `<` alone too): markup,
        where the JSON breaks, not a value's text. Blanks stand in for it (a number
        before it was whole). The text as it is where it does not end so. Issue 19: the
        arguments were read with the marker, which broke them: all of them dropped
        (MFCS) or the call an error (Hermes, its brace left out)."""
        c = self.fmt.compiled
        at = text.find("<", max(0, len(text) - c.longest_literal))
        while at >= 0:
            rest = text[at:]
            literals = [t.literal for t in c.terminals.values() if t.literal is not None]
            if any(len(m) > len(rest) and m.startswith(rest) for m in (*literals, *self.fmt.ends, *self.fmt.end_of_turn)):
                broke = _repair.breaks_at(text)
                if broke is not None and broke > at and text[:at].strip():
                    return text[:at] if text[at - 1].isspace() else text[:at] + " "
                return text
            at = text.find("<", at + 1)
        return text

    def _cut_end(self, tail: str, cut: bool = False) -> bool:
        """Whether the text after a payload's JSON is only the start of the format's
        end marker, cut short where the reply (or max_chars) ended (`</tool_call`):
        markup, not prose. Where the payload runs to the reply's end (`cut`), its first
        character alone too (`{…}\n<`: the close begun, as cut_close reads a `<` after a
        JSON value whose brackets closed; issue 19: it was left in the text)."""
        rest = tail.strip()
        if cut and len(rest) == 1 and tail.endswith(rest):
            return any(len(e) > 1 and e.startswith(rest) for e in self.fmt.ends)
        return cut_marker(rest, self.fmt.ends)

    def _sure_name(self, name: str) -> bool:
        """Whether a name the end of the reply may have cut is still the name: an
        offered one that no other offered name begins with. Without tools nothing
        can tell, and a name the model may not have finished is no name
        (`call:delete_fi` of delete_file): the call is an error, whatever
        truncated= says, as a call to a tool that does not exist would be."""
        if self.tools is None:
            return False
        # (A name no offered name begins with is no cut name but an unknown one, which
        # accept() reports.)
        return not any(other != name and other.startswith(name) for other in self.tools.names)

    def _call_end(self, node: Tree) -> str:
        """How the call `node` (the region's last, where the reply ended: see ended)
        ends: its last part, kept or not (Driver: meta.last; an inlined rule's last
        part). _READ: a token read from the text that ends something (`)`,
        `</function>`, the format's end marker): the call is whole. _MISSING: a token
        the driver supplied (empty), or the empty `unclosed`: its end never came.
        _OTHER: the arguments, or a marker after which they would have come
        (gpt-oss's `<|message|>`, whose close is optional)."""
        meta = getattr(node, "_meta", None)
        last = getattr(meta, "last", None) if meta is not None else None
        if last is None:
            last = node.children[-1] if node.children else None
        while isinstance(last, Tree) and str(last.data).startswith("_") and last.children:
            last = last.children[-1]  # (a rule Lark inlines: its own last part)
        if isinstance(last, Tree):
            if _rule(last) == "unclosed":
                return _MISSING
            if not last.children and str(last.data).startswith("_"):
                # (An inlined rule whose only token Lark filtered out, an anonymous close
                # tag: read, or supplied. The last token read tells.)
                return _READ if self.ended[2] else _MISSING
            return _OTHER
        if type(last) is Tok:
            if not last.value:
                return _MISSING
            terminal = self.fmt.compiled.terminals.get(last.type)
            if ends_something(terminal, last.value, self.fmt.ends):
                return _READ
        return _OTHER

    def _unnamed_told(self, unnamed: Unreadable, node: Any, parts: list, name: str, cut_open: bool) -> None:
        """What the failure of a call whose positional arguments no parameter names
        says of its telling (held_parts, called): the only part of it that the build's
        reading of the reply's end changes for a call the end did not cut."""
        if self._before_a_cut_call(node):
            # (Told in its place, the cut call after it kept; without tools, where
            # that one breaks too, as if its own end were read: _held_told.)
            unnamed.held_parts = parts if self.tools is None else None
        else:
            unnamed.called = self.tools is not None and name in self.tools or self.tools is None and (self.ended is None or self.ended[2] or cut_open) and _keyword_first(parts[:-1] if cut_open else parts, self.buf)

    def _before_a_cut_call(self, node: Any) -> bool:
        """Whether the call `node` comes before the region's last call and the reply's end
        cut that one (it runs to the last token read, which closes nothing): a broken call
        there is told in its place, as without tools, and the cut call is kept (issue 19:
        `[get_weather(days=2, "Paris"), get_time(t`). A broken call followed only by a
        `,` the end left (`[f(1), f(1), `) is told as the list's own failure."""
        return self._cut_before and node is not self._last

    def _reaches(self, node: Any) -> bool:
        """Whether `node` ends where the last token read from the text ended (ended)."""
        extent = _extent(node)
        return extent is not None and extent[1] == self.ended[0]

    def _spaced(self) -> str:
        """The whitespace that followed the last token read before the reply ended (a
        number followed by some is complete; a string left open holds it: what the
        model wrote), else nothing."""
        return self.buf[self.ended[0] : self.ended[1]]

    def _slipped(self, value: Any, text: str, repairs: list[str]) -> str:
        """A Python value's text (`value`: its token, or a rule of that one token) where
        the model closed its string with the other quote, or wrote a quote too many after
        its close, before what ends the value (`city='Paris")`, `text='hi' ")`: the
        lexer ended it there, _repair.quoted_end): the string as Python reads it,
        its repair noted (_repair.slipped_quote). Else the text as it is."""
        if self.buf is None or text[-1:] not in ("'", '"'):
            return text
        tok = value if isinstance(value, Tok) else value.children[-1] if isinstance(value, Tree) and value.children else None
        if not isinstance(tok, Tok) or tok.end_pos <= tok.start_pos:
            return text
        got = _repair.slipped_quote(self.buf, tok.start_pos, tok.end_pos, self.quote_passed)
        if got is None:
            return text
        _add(repairs, [got[1]])
        return got[0]

    def _string_said(self, text: str, at: int, keyword: bool) -> tuple[str, int] | None:
        """A keyword's Python value that the end of the reply cut, the call's `)` never
        written, where it is a quoted string whose quote closed it, then a line break and a
        line of prose to the end (`[get_weather(city="Paris"\nDone.`): the model left out
        the call's close and wrote on, as GLM's `Paris</arg_value> I will report back.`
        (_closed_inside). The string is the value, the call ends with its quote and the
        prose is the reply's text (_tail). Issue 21: read as the text `"Paris"\nDone.`
        (unquoted_string), the call a stream had sent `{"city": "Paris` of was withdrawn
        and sent again; a reading that holds the string, as a line break before the prose
        in a JSON value does (_value_then_prose). `at`: where text starts in buf. The
        string's text and where it ends in buf; None
        where it is not so (text after the quote on its line, `"a" + "b"`, is the value's
        text as before; so is the next keyword with no comma, missing_comma). Not where
        the calls are the whole reply (bare_pythonic's anchor: a call that prose follows is
        no call), nor the whole payload of another format's call (NESTED: Hermes's
        `<tool_call>[f(a="x"\nDone.`, pythonic_payload, the value's text as before)."""
        if not keyword or self.buf is None or at < 0 or self._tail is not None or self.fmt.anchor == "whole" or NESTED.get():
            return None
        split = _string_then_prose(text)
        if split is None or _kwargs_run_on(text, True) is not None:
            return None
        end, prose_start, prose_end = split
        self._tail = Prose(text[prose_start:prose_end], (at + prose_start, at + prose_end))
        return text[:end], at + end

    def _close_left_out(self, end: int) -> bool:
        """Whether the call's last argument, its value's text ending at `end`, is followed
        (blanks between) by the region's end marker or closing fence: the call's `)` and
        the list's `]` were never written, the driver supplied them there (close_before,
        closed_bracket). Issue 21: `<|tool_call_start|>[get_weather(city="Paris"\nDone.
        <|tool_call_end|>` is read as the end of the reply cut it (_string_said), the
        string the value and the prose the reply's text, not the text `"Paris"\nDone.`
        that a stream which had sent `{"city": "Paris` withdrew."""
        ends, buf = self.fmt.ends, self.buf
        if not ends or buf is None or end < 0:
            return False
        at = _BLANKS.match(buf, end).end()
        return any(buf.startswith(m, at) for m in ends)

    def _cut_text(self, text: str, short: bool) -> str:
        """A Python value's text where the end of the reply cut it short: with the
        whitespace after it (_spaced), which a string left open holds (what the model
        wrote); the region, and the call's span, take it too (took_to)."""
        if not short or self.ended[1] <= self.ended[0]:
            return text
        self.took_to = self.ended[1]
        return text + self._spaced()

    def _close_missing(self, param: Tree) -> bool:
        """Whether a parameter's own close never came: it ends with the empty
        `unclosed`, or its value runs to where the driver supplied the rest of the
        frame (Kimi K3's `<|close|>argument<|sep|>`, a filtered token, supplied)."""
        if _ends_unclosed(param):
            return True
        extent = _extent(_find(param, "value"))
        # (Where the reply ended: not where it cut a close being written, `<|close|>arg`.)
        return self.ended is not None and extent is not None and extent[1] == self.cut_at >= 0

    def _cut_unwritten(self, param: Tree) -> bool:
        """Whether the end of the reply cut the call's last parameter before any of its
        value was written, its close supplied (Kimi K3's `<|open|>argument key="a"
        type="number"`, then `<|sep|>` or a part of it, or nothing): no value text, and
        the last token read from the reply closes nothing. It is dropped (with cut_value),
        not read as an empty value the model never wrote."""
        if self.ended is None or self.ended[2] is not False:
            return False
        value = _find(param, "value")
        return value is None or not _text(value, self.buf).strip()

    def _cut_tag(self, param: Tree) -> bool:
        """Whether the call's last parameter, its value written without its open tag
        (`unopened`), has for its value only the start of one of the format's tags, which
        the end of the reply cut (GLM's `<arg_key>content</arg_key>\n<arg_valu`): that
        is the value's open tag, markup; the value never began, as where the end comes
        right after the whole tag. (Two characters at least: `<` alone names no tag.)"""
        if _find(param, "unopened") is None or self._spaced():
            return False
        value = _find(param, "value")
        if value is None or not self._reaches(value):
            return False
        text = _text(value, self.buf).lstrip()
        if len(text) < 2 or text[0] != "<":
            return False
        return any(t.literal is not None and len(t.literal) > len(text) and t.literal.startswith(text) for t in self.fmt.compiled.terminals.values())

    def _cut_markup(self, text: str) -> int:
        """Where the close the end of the reply cut begins at the end of a raw value's
        text that runs to it (`</param` of `</parameter>`): close.cut_markup, with the
        format's closers; -1 where there is none."""
        c = self.fmt.compiled
        literals, patterns = value_closers(c)
        at = cut_markup(text, literals, patterns, c.longest_literal + CUT_ROOM, c.nest)
        if at < 0 and self.fmt.framing == "newline" and text.endswith("\n<") and len(text) > 2:
            # (The newline the template writes before the value's close, then a `<` alone:
            # that close begun, as after a whole closer (cut_markup), not the value's text:
            # `<parameter=a>\n1\n<` reads as `…\n1\n</` does (issue 19).)
            return len(text) - 1
        return at

    def _cut_short(self, node: Tree) -> bool:
        """A parameter whose value never began: no value text, and no key either
        (`<|open|>argument`), or the text ends with it, the rest supplied
        (`<arg_key>d`). It is dropped, not read as an empty value."""
        value = _find(node, "value")
        if value is not None and _text(value, self.buf).strip():
            return False
        if not _text(_find(node, "key"), self.buf).strip():
            return True
        extent = _extent(node)
        return extent is not None and extent[1] == self.cut_at

    def _cut_call(self, read: Any, span: tuple[int, int]) -> Draft | Prose:
        """The last call of a JSON list that the end of the reply cut off (the list
        was closed by the repair), after calls that were read: `read()` reads it.
        It is an error, not the end of the whole list, when it cannot be read, and
        when its name is not an offered one (the name itself may be cut: `get_wea`)."""
        cut = Draft(name="", span=span, error="Couldn't read a tool call: the reply ended inside the call.")
        try:
            draft = read() if read is not None else cut
        except Unreadable:
            return cut
        if isinstance(draft, Draft) and self.tools is not None and draft.name not in self.tools:
            return cut
        return draft

    def _envelope(self, value: dict, span: tuple[int, int], fields: dict, twice: list) -> None:
        """What an object holding the calls (`{"tool_calls": [...]}`) says beside them:
        xLAM's `"thought"` is reasoning, an OpenAI message's `"content"` is prose, and
        its `"role"` and empty fields say nothing. Any other field is an error that
        names it: nothing the model wrote is dropped unsaid; so is a field given twice
        with two values (`twice`: (key, first, then), see _fields_twice), which of
        them the model meant nothing tells. (`fields`: where each field lies in the
        reply, for the segments; a field past where the object needed a repair has none.)"""
        for key, first, then in twice:
            where = fields.get(key)  # (the second's)
            message = f"Couldn't read a tool call: in the object of calls, {_repair.given_twice(key, first, then)}."
            self.items.append(Draft(name="", span=(where[0], where[2]) if where else span, error=message))
        for key, field_value in value.items():
            if key == "tool_calls" or field_value in (None, "", [], {}):
                continue
            where = fields.get(key)  # (the key's start, the value's, its end)
            if isinstance(field_value, str) and (key in _ENVELOPE_REASONING or key in _ENVELOPE_PROSE) and where:
                kind = Reasoning if key in _ENVELOPE_REASONING else Prose
                self.items.append(kind(field_value, (where[1] + 1, where[2] - 1) if where else None))
            elif key == "role" and field_value == "assistant":
                continue
            else:
                shown = json.dumps(field_value, ensure_ascii=False)
                if len(shown) > 40:
                    shown = shown[:39] + "…"
                if where is None and key in _ENVELOPE_PROSE | _ENVELOPE_REASONING:
                    # Past a repair its text has no place in the reply to be shown as
                    # prose or reasoning from: it is told, as the region's markup.
                    message = f"Couldn't read a tool call: the object of calls also holds {key!r} ({shown}), after text that needed a repair."
                else:
                    message = f"Couldn't read a tool call: the object of calls also holds {key!r} ({shown}), which is no part of a call."
                self.items.append(Draft(name="", span=(where[0], where[2]) if where else span, error=message))

    def _json_call(self, obj: Any, span: tuple[int, int], repairs, cut: int = 0) -> Draft | Prose:
        """`cut`: what the end of the reply did to this call object (_cut_flags): _CUT_VALUE,
        it cut a value in it; _CUT_OPEN, it left the object open (a name and no
        arguments is then a call cut before its arguments began, not one with none)."""
        if not isinstance(obj, dict):
            raise Unreadable("expected a JSON object with a \"name\"")
        if obj.get("type") == "message" and isinstance(obj.get("text"), str):
            return Prose(obj["text"])
        fn = obj.get("function")
        if isinstance(fn, dict):
            obj = {**obj, **fn}
        name = obj.get("name", obj.get("tool_name", obj.get("tool", fn if isinstance(fn, str) else None)))
        if not isinstance(name, str) or not name.strip():
            raise Unreadable('the call object has no "name"')
        draft = Draft(name="", span=span or self.region)
        _add(draft.repairs, repairs)
        # (A JSON string keeps the backslash of `get\_weather`, which is no JSON escape: the
        # payload's repairs say escaped_underscores already.)
        draft.name = _unescape_md(name.strip(), draft.repairs)
        # Written flat, a key the offered tool declares as a parameter (an `id`, a
        # `type`) is an argument, not the call's own (see _flat_arguments).
        declared = _declared(self.tools.schema(draft.name)) if self.tools is not None and _args_key(obj) is None else ()
        for key in ("id", "call_id", "tool_call_id"):
            if key in declared:
                continue
            if obj.get(key) is not None and not isinstance(obj.get(key), (dict, list)):
                draft.id = str(obj[key])
                break
        if _is_definition(fn):
            # A tool's definition echoed back (the prompt's {"type": "function", "function":
            # {"name", "description", "parameters": {JSON Schema}}}): its schema is no arguments.
            raise Unreadable("a tool definition (its \"parameters\" are a JSON Schema), not a call")
        native = self.fmt.args_key
        both = "arguments" in obj and "parameters" in obj
        if both and obj["arguments"] != obj["parameters"] and obj["arguments"] and obj["parameters"]:
            # Two arguments objects (`"arguments": {"a": 1}, "parameters": {"b": 2}`): which
            # the model meant, nothing tells; taking one dropped the other's values.
            raise Unreadable('the call object has both "arguments" and "parameters"')
        if both and native in ("arguments", "parameters") and not obj[native]:
            # (One of them empty: the other holds the arguments.)
            native = "parameters" if native == "arguments" else "arguments"
        used = None  # (the key that holds the arguments)
        if native in obj:
            args = obj[used := native]
            if native != self.fmt.args_key:
                _add(draft.repairs, ["parameters_key" if native == "parameters" else "arguments_key"])
        elif "arguments" in obj:
            args = obj[used := "arguments"]
            _add(draft.repairs, ["arguments_key"])
        elif "parameters" in obj:
            args = obj[used := "parameters"]
            _add(draft.repairs, ["parameters_key"])
        else:
            alias = next((k for k in _ARGS_ALIASES if k in obj), None)
            if alias is not None:
                args = obj[used := alias]
                _add(draft.repairs, ["arguments_key"])
            else:
                # The arguments written flat beside the name ({"name": "f", "city":
                # "Paris"}): the keys that are not the call's own are the arguments,
                # rather than a silent {}.
                args = _flat_arguments(obj, declared)
                if self.unmarked and obj.get("type") not in _CALL_TYPES and (self.tools is None or draft.name not in self.tools):
                    # In a fence or as the whole reply, with no call marker around it, an
                    # object with a "name" and no arguments may be any data ({"name":
                    # "Alice", "age": 30}): a call only when it names an offered tool, or
                    # says it is one ("type": "tool_call").
                    raise Unreadable("an object with a name but no arguments, naming no offered tool")
                if args:
                    _add(draft.repairs, ["flat_arguments"])
                elif cut & _CUT_OPEN:
                    cut |= _CUT_VALUE
        if used is not None and _dropped_keys(obj, used, args):
            # Beside the arguments, a key that is neither the call's own nor its
            # arguments (`{"name": "f", "arguments": {}, "extra": 1}`): no part of the
            # call, dropped, and said so, never silently.
            _add(draft.repairs, ["dropped_key"])
        draft.arguments = self._object_args(args, draft)
        if cut & _CUT_VALUE:
            _add(draft.repairs, ["cut_value"])
        return draft

    def _keyed_calls(self, node: Tree, cut: bool = False) -> None:
        text = _text(node, self.buf)
        start = _extent(node)[0] if _extent(node) else self.region[0]
        left_open: list = []
        try:
            value, repairs = _loads_shallow(text, cut, left_open)
        except _repair.RepairError as exc:
            raise Unreadable(str(exc)) from None
        cut_value, repairs = _take_cut(repairs)
        items = value if isinstance(value, list) else [value]
        spans = _element_spans(text, start, value)
        for i, obj in enumerate(items):
            if not isinstance(obj, dict) or len(obj) != 1:
                if i and i == len(items) - 1 and "closed_json" in repairs and obj == {}:
                    self.items.append(self._cut_call(None, spans[i] if spans else self.region))
                    continue
                raise Unreadable("expected objects of the form {NAME: arguments}")
            ((name, args),) = obj.items()
            draft = Draft(name="", span=spans[i] if spans else self.region)
            _add(draft.repairs, repairs)
            draft.name = _unescape_md(str(name), draft.repairs)
            draft.arguments = self._object_args(args, draft)
            if i == len(items) - 1 and _cut_flags(obj, left_open, cut_value) & _CUT_VALUE:
                _add(draft.repairs, ["cut_value"])
            if i and i == len(items) - 1 and "closed_json" in repairs:
                draft = self._cut_call(lambda: draft, draft.span)
            self.items.append(draft)

    def _json_reply(self, node: Tree, cut: bool = False) -> None:
        text = _text(node, self.buf)
        left_open: list = []
        try:
            value, repairs = _loads_shallow(text, cut, left_open)
        except _repair.RepairError as exc:
            raise Unreadable(str(exc)) from None
        cut_value, repairs = _take_cut(repairs)
        if isinstance(value, list) and value and all(isinstance(v, dict) and "type" in v for v in value):
            extent = _extent(node)
            spans = _element_spans(text, extent[0] if extent else self.region[0], value)
            for i, item in enumerate(value):  # several typed objects: each a call or a message
                last = _cut_flags(item, left_open, cut_value) if i == len(value) - 1 else 0
                self._typed_reply(item, spans[i] if spans else self.region, repairs, last)
            return
        if not isinstance(value, dict):
            raise Unreadable("the reply is JSON but not an object")
        self._typed_reply(value, _extent(node) or self.region, repairs, _cut_flags(value, left_open, cut_value))

    def _typed_reply(self, value: dict, span, repairs, cut: int = 0) -> None:
        kind = value.get("type")
        if kind == "message":
            if not isinstance(value.get("text"), str):
                raise Unreadable('a "message" needs a "text" string')
            self.items.append(Prose(value["text"]))
            return
        if kind is not None and kind not in _CALL_TYPES:
            # (an OpenAI tool call written as text says "type": "function", its name and
            # arguments in a "function" object: _json_call reads that)
            raise Unreadable(f'unknown reply type {kind!r}')
        self.items.append(self._json_call(value, span, repairs, cut))


# The builder's dispatch, from the vocabulary: each rule it reads at region level has
# its handler (a missing one fails at import).
_HANDLERS = {name: getattr(Builder, f"_on_{name}") for name in REGION_LEVEL}


# Keys models use for a call's arguments besides "arguments" and "parameters" (read
# as those, with repair arguments_key), and the keys of a call object that are
# never its arguments (the rest are, when no arguments key is there: flat_arguments).
_ARGS_ALIASES = ("args", "input", "params", "kwargs", "tool_input", "argument", "tool_args")
_CALL_KEYS = frozenset(
    {"name", "tool_name", "tool", "function", "id", "call_id", "tool_call_id", "type", "index"}
)


def _args_key(obj: dict) -> str | None:
    """The key that holds a call object's arguments, if it has one."""
    if "arguments" in obj:
        return "arguments"
    if "parameters" in obj:
        return "parameters"
    return next((k for k in _ARGS_ALIASES if k in obj), None)


def _declared(schema: Any) -> frozenset[str] | tuple[()]:
    """The parameter names a tool's schema declares (none without a schema)."""
    props = schema.get("properties") if isinstance(schema, Mapping) else None
    return frozenset(props) if isinstance(props, Mapping) else ()


def _dropped_keys(obj: dict, used: str, args: Any) -> bool:
    """Whether a call object whose arguments `used` holds has a key beside them that says
    something and is no part of the call: not the call's own (`name`, `id`, `function`,
    a `type` that says what it is), not empty (`"content": null`, `""`, as an object of
    calls' empty fields), not the arguments written again under another of their keys."""
    for k, v in obj.items():
        if k == used or (k in _CALL_KEYS and not (k == "type" and not _meta_type(v))):
            continue
        if v is None or (isinstance(v, (str, list, dict)) and not v):
            continue
        if (k in ("arguments", "parameters") or k in _ARGS_ALIASES) and v == args:
            continue
        return True
    return False


def _meta_type(v: Any) -> bool:
    """Whether a call object's "type" says what it is (a call, a tool's), never an argument."""
    return isinstance(v, str) and v.strip().lower() in _META_TYPES


def _flat_arguments(obj: dict, declared) -> dict:
    """The arguments of a call object written flat ({"name": "f", "city": "Paris"}):
    every key but the call's own. A key the offered tool declares as a parameter is
    an argument even so (`get_order`'s `id`, `set_role`'s `type`: dropped, the tool
    ran without what the model wrote), and so is a `type` that says nothing of a
    call (`"type": "admin"`), which without a schema nothing else would keep."""
    args = {}
    for k, v in obj.items():
        if k not in _CALL_KEYS or k in declared:
            args[k] = v
        elif k == "type" and not (isinstance(v, str) and v.strip().lower() in _META_TYPES):
            args[k] = v
    return args


def _loads_leading(
    text: str,
    leading: bool = True,
    cut: bool = False,
    left_open: list | None = None,
    spans: tuple | None = None,
    owned: list | None = None,
) -> tuple[Any, tuple[str, ...], str]:
    """Decode a payload; when it fails and a complete JSON value leads it, decode
    that value and hand back the text after it (it becomes prose, not lost).
    `leading=False`: the payload is one bracketed value (a JSON token): no second try.
    `cut`, `left_open`: as _repair.loads takes them, for the whole payload (a value
    that leads it has text after it: the end did not cut it). `spans`: (the text's
    _repair.Spans, the text, where the payload is in it), which tell a payload that
    loads() refused before (another candidate's, the same call again in a storm, a
    cut's reading) without reading it again. `owned`: as _repair.loads takes it (each
    element's own repairs, where the payload is a list)."""
    found = _repair._UNSEEN
    if spans is not None and not cut:
        found = spans[0].known(spans[1], spans[2], text)
    if found is None or found is _repair._UNSEEN:
        try:
            value, repairs = _repair.loads(text, cut, left_open, owned=owned)
        except _repair.RepairError as exc:
            if found is _repair._UNSEEN and spans is not None and not cut:
                spans[0].note(spans[1], spans[2], text, exc)
            first = str(exc)
        else:
            if found is _repair._UNSEEN and spans is not None and not cut:
                spans[0].note(spans[1], spans[2], text, None)
            return value, repairs, ""
    else:
        first = found[0]
    if first == _repair.TOO_DEEP:
        shallow = _shallow(text)
        if shallow != text:
            # (Past the decoder's depth: the payload reads as the same text made shallow
            # does (_shallow), a call's arguments deeper than VALUE_DEPTH, which
            # finish_call tells as the call's error, its region read; a text that so
            # reads as no call stays prose, as before: qa42 N2.)
            return _loads_leading(shallow, leading, cut, left_open, None, owned)
        # (Nested past what the decoder reads: no value leads it, and no shorter reading
        # mends it. The call is that error, its region read: see build.)
        deep = Unreadable(first)
        deep.deep = True
        raise deep
    if not leading:
        raise Unreadable(first)
    stripped = text.lstrip()
    offset = len(text) - len(stripped)
    if stripped[:1] in ("{", "["):
        end = _repair.value_end(text, offset)
        if end is None:
            # (Its brackets never close as written: a string the model closed with the
            # other quote, then the value's closers and prose: `{"a": "it'}} Then "x".`,
            # as a JSON token reads it, QA22 D9.)
            end = _repair.slipped_end(text, offset)
        if end is not None and text[end:].strip():
            try:
                value, repairs = _repair.loads(text[offset:end])
            except _repair.RepairError:
                pass
            else:
                return value, repairs, text[end:]
    raise Unreadable(first)


# Prose after a JSON value: a word (a letter first), not a stray bracket or comma of
# broken JSON.
_PROSE_AFTER = lazy(re.compile, r"\s*([^\W\d_].*?)\s*\Z", re.S)


def _value_then_prose(text: str) -> tuple[int, int, int] | None:
    """(where a complete JSON value that leads text ends, where the prose after it
    starts and ends), when a sentence follows the value; None otherwise. The last
    answer is kept with its text (_VALUE_THEN_PROSE): the candidates of a region that
    read the same arguments and fail to build them ask it of the same text in turn
    (functionary_v31, then qwen3_coder_xml: fuzz seed 7 #9329795)."""
    memo = _VALUE_THEN_PROSE[0]
    if memo is not None and memo[0] == text:
        return memo[1]
    stripped = text.lstrip()
    if stripped[:1] not in ("{", "["):
        return None
    end = _repair.value_end(text, len(text) - len(stripped))
    m = _PROSE_AFTER.match(text, end) if end is not None else None
    found = (end, m.start(1), m.end(1)) if m else None
    _VALUE_THEN_PROSE[0] = (text, found)
    return found


# _value_then_prose's last answer: (text, answer), one tuple replaced whole.
_VALUE_THEN_PROSE: list = [None]


_SEPARATOR = lazy(re.compile, r"\s*[;,]?\s*")
def _shape(fmt: Any) -> tuple[bool, bool]:
    """(whether fmt's region is a fence, whether no call marker surrounds it: a fence
    or a reply-anchored shape), worked out once per format (kept in its
    compiled.derived: it dies with the format)."""
    derived = fmt.compiled.derived
    try:
        return derived["shape"]
    except KeyError:
        fenced = any(m.startswith("```") for m in fmt.starts)
        found = derived["shape"] = (fenced, fenced or bool(fmt.anchor))
        return found


def _python_calls(text: str, start: int, read_calls, cut: bool = False) -> list[Draft] | None:
    """Python-style calls between a JSON format's markers (`<tool_call>get_weather(
    city="Paris")</tool_call>`, or a list of them: a model mixing two formats), read by
    read_calls as the pythonic formats read a whole reply; None unless the text is all
    such calls. `cut`: the text ends where the reply ended (else a value its end cut
    was cut by the format's end marker, not by the end of the reply: no cut_value)."""
    calls = read_calls(text, text.lstrip().startswith("["))
    if not calls:
        return None
    return [
        Draft(
            c.name, c.arguments, None, "tool", (start + c.span[0], start + c.span[1]),
            ["pythonic_payload", *(r for r in c.repairs if cut or r != "cut_value")],
        )
        for c in calls
    ]


# What the end of the reply did to the last call object of a payload (_cut_flags).
_CUT_VALUE, _CUT_OPEN = 1, 2


def _owners(owned: list | None) -> dict | None:
    """For _mine: how many of the call objects' `owned` repairs hold each repair,
    counted once for the payload (asked per object, the others' would be gathered
    again for each: a list whose every object needs a repair, the square of it)."""
    if owned is None:
        return None
    count: dict = {}
    for own in owned:
        for r in set(own):
            count[r] = count.get(r, 0) + 1
    return count


def _mine(repairs: tuple, owned: list | None, i: int, count: dict | None) -> tuple:
    """The repairs of the i-th of several call objects: those its own reading needed
    (`owned[i]`: closed_json for the one left open, QA13 F4) and those of the payload
    (several_objects), not those another object's reading needed (`count`, _owners:
    a repair of none, or of this one only, is not another's)."""
    if owned is None or count is None or i >= len(owned):
        return repairs
    own = owned[i]
    return tuple(r for r in repairs if r in own or not count.get(r))


def _take_cut(repairs: tuple) -> tuple[bool, tuple]:
    """(whether `repairs` holds cut_value, the repairs without it): what the end of
    the reply cut in a payload is its last call's, not every call's."""
    if "cut_value" not in repairs:
        return False, repairs
    return True, tuple(r for r in repairs if r != "cut_value")


def _cut_flags(obj: Any, left_open: list, cut_value: bool) -> int:
    """For a payload's last call object: _CUT_OPEN when the end of the reply left it
    open (it, or its "function" object), with _CUT_VALUE when that end cut a value
    short (then in it: the values of a closed object are whole); 0 otherwise."""
    if not left_open or not isinstance(obj, dict):
        return 0
    fn = obj.get("function")
    if id(obj) not in left_open and not (isinstance(fn, dict) and id(fn) in left_open):
        return 0
    return _CUT_OPEN | (_CUT_VALUE if cut_value else 0)


_CALL_TYPES = ("tool_call", "function", "function_call", "tool_use")  # ("type" of a call object)
# A call object's "type" that says what it is (a call, a tool's), never an argument.
_META_TYPES = frozenset({*_CALL_TYPES, "tool", "call", "tool_calls", "function_calls"})


def _is_definition(fn: Any) -> bool:
    """A "function" object that defines a tool: a description, and parameters that
    are a JSON Schema of an object (`{"type": "object", "properties": {…}}`)."""
    if not isinstance(fn, dict) or "description" not in fn:
        return False
    params = fn.get("parameters")
    return isinstance(params, dict) and params.get("type") == "object" and isinstance(params.get("properties"), dict)
_PY_CALL = lazy(re.compile, r"\s*(?:\[\s*)?[A-Za-z_][\w.\-]*\s*\(")  # (a name, then "("; or a list of such)
# (A name, then the arguments' "{", a line break between them at most. The blanks around
# the break are matched one way only: `[ \t]*\r?\n?[ \t]*` could split a run of blanks in
# any two, which, where no "{" follows, the engine tried each: the square of the run.)
# A JSON call's name string that the end of the payload cut (`{"name": "delete_fi`).
_CUT_NAME = lazy(re.compile, r'"name"\s*:\s*"([^"\\]*)\Z')
_NAMED = lazy(re.compile, r"\s*([A-Za-z_][\w.\-]*)[ \t]*(?:(?:\r\n?|\n)[ \t]*)?(?=\{)")
_FENCE = lazy(re.compile, r"\s*```[\w+-]*[ \t]*(?:\r?\n|(?=[\[{]))")  # (a fence's opening line)
# A list of call objects as it opens: the first one's name, then its arguments' key.
_CALL_LIST_HEAD = lazy(re.compile, r'\s*\[\s*\{\s*"name"\s*:\s*"([^"\\]*)"\s*,\s*"(?:arguments|parameters)"\s*:')
# One call object as it opens: its name, then its arguments' key and object's brace.
_CALL_OBJECT_HEAD = lazy(re.compile, r'\s*\{\s*"name"\s*:\s*"([^"\\]*)"\s*,\s*"(?:arguments|parameters)"\s*:\s*\{')
_QUOTE_OR_BREAK = lazy(re.compile, r'["\n]|\\.', re.S)


def _string_at_line_end(text: str, pos: int) -> bool:
    """Whether a string (its quotes paired as written, escapes skipped) is open in
    text, from pos on, where a line ends. One look at each character."""
    inside = False
    for m in _QUOTE_OR_BREAK.finditer(text, pos):
        c = m.group()
        if c == '"':
            inside = not inside
        elif c == "\n" and inside:
            return True
    return False


def _several_objects(text: str, offset: int):
    """Two or more JSON objects one after another, alone or joined by `;` or `,`
    (Llama 3 writes `{…}; {…}`): their values as a list, the repairs with
    several_objects, each one's span, and the text after the last one (a remark the
    model wrote before the close tag: prose). None unless two objects open the text."""
    values: list[Any] = []
    spans: list[tuple[int, int]] = []
    repairs: list[str] = []
    owned: list[tuple] = []  # (each object's own repairs: see _mine)
    pos = len(text) - len(text.lstrip())
    rest = ""
    while pos < len(text):
        if values:
            after = pos
            pos = _SEPARATOR.match(text, pos).end()
            if pos >= len(text):
                break
            if text[pos] != "{":
                rest = text[after:]  # (a remark after the objects: not an object)
                break
        if text[pos] != "{":
            return None
        end = _repair.value_end(text, pos)
        if end is None:
            return None
        try:
            value, more = _repair.loads(text[pos:end])
        except _repair.RepairError:
            return None
        if not isinstance(value, dict):
            return None
        values.append(value)
        spans.append((offset + pos, offset + end))
        owned.append(tuple(more))
        _add(repairs, more)
        pos = end
    if len(values) < 2:
        return None
    _add(repairs, ["several_objects"])
    return values, tuple(repairs), spans, rest, owned


_LINE_OBJECT = lazy(re.compile, r"\n[ \t]*(?=\{)")
_LIST_FIRST = lazy(re.compile, r"\s*\[")  # (\s: what str.lstrip() strips)


def _object_after(text: str, offset: int, tail: str) -> tuple:
    """The broken call object that opens `tail` (the text after a payload's leading
    call object, at its end), as an error Draft in a tuple; () unless the tail opens
    with an object (after blanks or `;`) that JSON cannot read."""
    m = _OBJECT_NEXT.match(tail)
    if m is None:
        return ()
    at = len(text) - len(tail) + m.end()
    piece = text[at:].rstrip()
    try:
        _repair.loads(piece)
    except _repair.RepairError as exc:
        return (Draft(name="", span=(offset + at, offset + at + len(piece)), error=f"Couldn't read a tool call: {exc}."),)
    return ()


# What may come between two call objects before the next one's brace.
_OBJECT_NEXT = lazy(re.compile, r"\s*;?\s*(?=\{)")


def _items_before_broken(text: str) -> tuple[list, tuple[str, ...], int] | None:
    """The call objects a bracketed list holds whole, one after another, before the
    item that JSON cannot read (`[{…f…}, {…g…"b": }}]`): their values, the repairs
    they needed, and where the broken item begins (its text up to the list's end is
    the broken call). None where no call object comes before it."""
    pos = _LIST_OPEN.match(text).end() if _LIST_OPEN.match(text) else 0
    values: list = []
    repairs: list[str] = []
    while pos < len(text) and text[pos] == "{":
        end = _repair.value_end(text, pos)
        if end is None:
            break
        try:
            value, more = _repair.loads(text[pos:end])
        except _repair.RepairError:
            break
        if not isinstance(value, dict) or "name" not in value:
            break
        gap = _ITEM_GAP.match(text, end)
        if gap is None:
            break  # (no comma after it: the list breaks here, not at an item)
        values.append(value)
        _add(repairs, more)
        pos = gap.end()
    return (values, tuple(repairs), pos) if values else None


# A list's opening bracket, and the comma between two of its items (with blanks).
_LIST_OPEN = lazy(re.compile, r"\s*\[\s*")
_ITEM_GAP = lazy(re.compile, r"\s*,\s*")


def _objects_by_line(text: str, offset: int, cut: bool = False, left_open: list | None = None):
    """Call objects a line each, read as _several_objects reads them, but each line
    on its own, so that one left without its closing brace is closed there (repair
    closed_json) and the next is still read. None unless each line is a call object.
    `cut`, `left_open`: as _repair.loads takes them, for the last line."""
    if _LIST_FIRST.match(text) is not None:
        # (The first line is a list, which is no call object, however it reads: the text
        # is not searched for lines. A list left open ran on to the end of the reply, and
        # each region of such lists searched the rest of it: the square of the reply.)
        return None
    # (A payload opening with its line break, `<tool_call>\n{…}`, has no line before it.)
    cuts = [0, *(m.start() for m in _LINE_OBJECT.finditer(text) if text[: m.start()].strip()), len(text)]
    if len(cuts) < 3:  # (two lines at least)
        return None
    values: list[Any] = []
    spans: list[tuple[int, int]] = []
    repairs: list[str] = []
    owned: list[tuple] = []  # (each line's own repairs: see _mine)
    for a, b in zip(cuts, cuts[1:]):
        piece = text[a:b]
        lo = a + len(piece) - len(piece.lstrip())
        hi = a + len(piece.rstrip())
        last = cut and b == len(text)
        if b < len(text) and _string_left_open(text[lo:hi]):
            # (A string open at the line's end runs on into the next line, whose object is
            # its text, unescaped quotes and all: a call quoted in the value, not one of
            # the model's own. r1mat: `{"content": "Docs:\n<tool_call>\n{"name": "rm_rf"…`.)
            return None
        try:
            value, more = _repair.loads(text[lo:b] if last else text[lo:hi], last, left_open if last else None)
        except _repair.RepairError:
            return None
        if not isinstance(value, dict) or "name" not in value:
            return None
        values.append(value)
        spans.append((offset + lo, offset + hi))
        owned.append(tuple(more))
        _add(repairs, more)
    _add(repairs, ["several_objects"])
    return values, tuple(repairs), spans, "", owned


def _string_left_open(piece: str) -> bool:
    """Whether a JSON string is open where `piece` (a line's object) ends."""
    try:
        _repair.scan_json(piece, 0)
    except ValueError as exc:
        return str(getattr(exc, "msg", "")).startswith("Unterminated string")
    except (StopIteration, RecursionError):
        pass
    return False


# Rules whose inside the call builder does not look into: they are read whole.


def _parts(node: Tree, _kinds: dict = {}) -> list:  # (_kinds: per tree name, whether it is an opaque rule and a call part, cached)
    """The call and those of its subtrees that are call parts (_CALL_PARTS), top-down,
    left to right, without the inside of opaque rules (vocabulary.OPAQUE). (The
    subtrees that are no call part, a parameter's key and value, are all its readers,
    _call's loop and _last_arg, pass over: not listed, a call of a thousand parameters
    had thousands of them.)"""
    # (A list, not a generator: a call of a thousand arguments has thousands of parts,
    # each a resumption; the builder changes no tree while it reads them.)
    out: list = [node]
    stack = [node]
    pop, push, put = stack.pop, stack.append, out.append
    first = True
    while stack:
        n = pop()
        kind = _kinds.get(n.data)
        if kind is None:
            name = _RULE_NAMES.get(n.data) or rule_name(n.data)  # (_rule, inline)
            kind = _kinds[n.data] = (name in OPAQUE, name in _CALL_PARTS)
        if first:
            first = False  # (the call itself: listed first, its inside read whatever it is)
        else:
            if kind[1]:
                put(n)
            if kind[0]:
                continue
        children = n.children
        for i, c in enumerate(children):
            if type(c) is not Tree and not isinstance(c, Tree):
                continue
            for g in c.children:
                if isinstance(g, Tree):
                    break
            else:
                # (A rule of tokens, or of nothing, before any rule that holds rules: its
                # turn is now, and nothing under it is listed; a parameter's key, value,
                # `unclosed`. Listed here, not put on the stack and taken off again.)
                kind = _kinds.get(c.data)
                if kind is None:
                    name = _RULE_NAMES.get(c.data) or rule_name(c.data)
                    kind = _kinds[c.data] = (name in OPAQUE, name in _CALL_PARTS)
                if kind[1]:
                    put(c)
                continue
            for c in reversed(children[i:]):
                if isinstance(c, Tree):
                    push(c)
            break
    return out


def _plain_key(kind: str, parts: list, buf: str) -> tuple | None:
    """What Builder._call reads a plain call (its parts: _plain_parts) from, but for its
    places: its kind, its name's token and text, each argument's keyword (None: a
    positional one) and value; None where a value's reading may look at the text after
    it (repair.slip_told)."""
    name = parts[0].children[0]
    key: list = [kind, name.type, buf[name.start_pos : name.end_pos] if name.end_pos > name.start_pos else ""]
    told = _repair.slip_told
    for child in parts[1:]:
        children = child.children
        if len(children) == 1:
            value = children[0]
            key.append(None)
        else:
            value = children[1].children[0]
            k = children[0].children[0]
            key.append(buf[k.start_pos : k.end_pos] if k.end_pos > k.start_pos else "")
        text = buf[value.start_pos : value.end_pos] if value.end_pos > value.start_pos else ""
        if not told(text):
            return None
        key.append(text)
    return tuple(key)


def _plain_span(node: Tree, parts: list) -> tuple[int, int]:
    """Builder._plain's span of a plain call the end of the reply did not cut: from its
    name to its last token, or to where its tree ends (its `)`) past that."""
    name = parts[0].children[0]
    lo = hi = name.start_pos
    for tok in _plain_tokens(parts):
        lo, hi = min(lo, tok.start_pos), max(hi, tok.end_pos)
    end = getattr(getattr(node, "_meta", None), "end_pos", None)
    return (lo, end) if end is not None and end > hi else (lo, hi)


def _plain_tokens(parts: list) -> list:
    out = [parts[0].children[0]]
    for child in parts[1:]:
        children = child.children
        if len(children) == 1:
            out.append(children[0])
        else:
            out.append(children[0].children[0])
            out.append(children[1].children[0])
    return out


def _plain_parts(node: Tree, _known=_RULE_NAMES) -> list | None:
    """The parts of a call that holds its name and keyword or positional arguments
    only, each a rule of one token (a kwarg's key and value), as Python-style grammars
    make it: [the name, then each argument]; None for any other call (Builder._plain)."""
    # (_rule and the test of one token written out: this is asked of each call.)
    children = node.children
    if not children:
        return None
    first = children[0]
    if type(first) is not Tree or len(first.children) != 1 or type(first.children[0]) is not Tok:
        return None
    kind = _known.get(first.data)
    if (kind if kind is not None else rule_name(first.data)) != "name":
        return None
    for child in children[1:]:
        if type(child) is not Tree:
            return None
        inner = child.children
        kind = _known.get(child.data)
        if kind is None:
            kind = rule_name(child.data)
        if kind == "kwarg":
            if len(inner) != 2:
                return None
            key, value = inner
            if type(key) is not Tree or type(value) is not Tree:
                return None
            one, other = key.children, value.children
            if len(one) != 1 or len(other) != 1 or type(one[0]) is not Tok or type(other[0]) is not Tok:
                return None
            kind, other = _known.get(key.data), _known.get(value.data)
            if (kind if kind is not None else rule_name(key.data)) != "key":
                return None
            if (other if other is not None else rule_name(value.data)) != "value":
                return None
        elif kind != "posarg" or len(inner) != 1 or type(inner[0]) is not Tok:
            return None
    return children


# After a whole Python value: the next keyword argument's name and its `=` (not `==`),
# with no comma before it (_kwargs_run_on).
_KWARG_NEXT = lazy(re.compile, r"\s*((?:[A-Za-z_]|\\_)(?:\w|\\_)*)\s*=(?!=)\s*")
# A number or a Python constant, then a blank (_kwargs_run_on).
_PY_WORD = lazy(re.compile, r"(?:True|False|None|[-+]?(?:\d[\w.]*|\.\d[\w.]*)(?:[eE][-+]?\d+)?)(?=\s)")


class _RunOn(list):
    """_kwargs_run_on's answer: (the value, the next keyword) pairs, and `last`, the
    last keyword's value."""

    last = ""


def _whole_value_end(text: str, pos: int) -> int | None:
    """Where the Python value that starts at text[pos] ends, when it is one whole
    value that something follows: a string whose quote closes it (not a triple-quoted
    one), a bracketed value, a number or a constant before a blank; else None."""
    c = text[pos : pos + 1]
    if c == '"' or c == "'":
        if text.startswith(c * 3, pos):
            return None
        m = _repair.PY_STRING[c].match(text, pos)
        return m.end() if m.group(1) is not None else None
    if c and c in "[{(":
        return _repair.value_end(text, pos)
    m = _PY_WORD.match(text, pos)
    return m.end() if m is not None else None


# Set while calls nested in another format's payload are read (_pipeline.read_calls): the
# text must be calls only there, so Builder._string_said reads no prose after a string.
NESTED: ContextVar[bool] = ContextVar("toolgram_nested_calls", default=False)

# After a Python string's closing quote: blanks holding a line break, then a line that
# begins with a letter (prose; not a bracket, an operator, a quote or a keyword's `=`).
_BLANKS = re.compile(r"[ \t\r\n]*")
_PROSE_LINE = re.compile(r"[ \t]*\r?\n\s*(?=[^\W\d_])")


def _string_then_prose(text: str) -> tuple[int, int, int] | None:
    """Where a Python value's text that is a quoted string (not triple-quoted, no line
    break in it) whose quote closes it, then a line break and prose (Builder._string_said),
    has its string end and its prose start and end; else None."""
    q = text[:1]
    if (q != '"' and q != "'") or text.startswith(q * 3):
        return None
    m = _repair.PY_STRING[q].match(text)
    if m.group(1) is None or "\n" in m.group() or "\r" in m.group():
        return None  # (not closed; or a line break in it, which no Python string holds)
    p = _PROSE_LINE.match(text, m.end())
    if p is None:
        return None
    prose_end = len(text.rstrip())
    prose = text[p.end() : prose_end]
    if _repair.odd_quotes(prose, q):
        # (It holds a quote of the string's kind that nothing pairs, `print(os.getcwd())"`:
        # the value ran on to it, its own quotes unescaped; the string is then not the
        # value, and a call with part of its content is no reading to give: the value's
        # text as before. A line that is a call, `get_time()]`, stays text: the value's
        # text as before would hold it, `"Paris"\nget_time()`, and a stream has sent
        # `{"city": "Paris` already.)
        return None
    return m.end(), p.end(), prose_end


def _kwargs_run_on(text: str, cut: bool = False) -> _RunOn | None:
    """A Python keyword argument's value text that is a whole value, then the next
    keyword argument with no comma between (`"ok" n=1`, `[1, 2] n=1 m="x"`): what each
    argument's value is; None unless the text reads so (Python reads none of it). A
    value that is a bare word (`x n=1`) is not split: it may be the model's prose.
    `cut`: the text ends where the reply did; the last keyword's value may be empty."""
    if "=" not in text:
        return None  # (no keyword can follow: the commonest value, told without a match)
    end = _whole_value_end(text, 0)
    m = _KWARG_NEXT.match(text, end) if end is not None and end < len(text) else None
    if m is None:
        return None
    got = _RunOn()
    value = text[:end]
    while True:
        key, pos = m.group(1), m.end()
        got.append((key, value))
        end = _whole_value_end(text, pos)
        m = _KWARG_NEXT.match(text, end) if end is not None and end < len(text) else None
        if m is None:
            got.last = text[pos:].rstrip()
            return got if got.last or cut else None
        value = text[pos:end]


def _whole_string(text: str) -> bool:
    """Whether text is a quoted string with no quote of its kind or backslash inside
    (`"x1"`), which _repair.slipped_quote reads as Python's string, ending where it ends:
    no repair (told without its match; a list of thousands of calls has one a call)."""
    q = text[0]
    return len(text) >= 2 and text[-1] == q and "\\" not in text and text.count(q) == 2


def _token_text(tok: Tok, buf: str | None) -> str:
    """_text of a rule of that one token."""
    if buf is None:
        return tok.value
    return buf[tok.start_pos : tok.end_pos] if tok.end_pos > tok.start_pos else ""


# How a call ends (Builder._call_end).
_READ, _MISSING, _OTHER = "read", "missing", "other"

# Every part Builder._call reads (the others it passes by).
_CALL_PARTS = frozenset({
    "name", "id", "instructions", "args", "param", "typed_param", "kwarg", "posarg", "code", "element",
    "loose_args", "unclosed", "unopened", "stray",
})  # fmt: skip

# A call's parts that hold its arguments (see _last_arg).
_NOT_YET = object()  # (Builder._call: its last one not looked for yet)
_ARG_PARTS = frozenset({"args", "param", "typed_param", "kwarg", "posarg", "code", "element", "loose_args"})


def _last_arg(node: Tree, parts: list | None = None) -> Tree | None:
    """The call's last part that holds arguments, or None (none began). (parts: the
    call's _parts, when read already.) Looked for from the end: the parts before it are
    not asked (a call of a thousand parameters whose closes were left out asked each of
    its eight thousand parts, once the first missing close was met)."""
    known = _RULE_NAMES
    for child in reversed(_parts(node) if parts is None else parts):
        if child is not node and (known.get(child.data) or _rule(child)) in _ARG_PARTS:  # (_rule's lookup written out)
            return child
    return None


def _unbegun(param: Tree) -> bool:
    """Whether a parameter's value never began: no value text, and its close was
    not read (the parameter ends with the empty `unclosed`)."""
    value = _find(param, "value")
    if value is not None and _text(value).strip():
        return False
    last = param.children[-1] if param.children else None
    return isinstance(last, Tree) and _rule(last) == "unclosed"


def _valueless(param: Tree) -> bool:
    """Whether a parameter's value never began, the next part right after its key (GLM's
    `<arg_key>a</arg_key><arg_key>b</arg_key>…`): no value at all, not an empty one
    between its tags, and it ends with the empty `unclosed`."""
    if _find(param, "value") is not None:
        return False
    last = param.children[-1] if param.children else None
    return isinstance(last, Tree) and _rule(last) == "unclosed"


def _line_close(value: str, own: Any) -> tuple[int, str]:
    """Where the first of the close tags `own` in `value` ends its line (blanks after
    it at most), and which; (-1, "") where none does."""
    best, found = -1, ""
    for tag in own:
        at = value.find(tag)
        while at >= 0 and (best < 0 or at < best):
            after = value.find("\n", at)
            if after >= 0 and not value[at + len(tag) : after].strip():
                best, found = at, tag
                break
            at = value.find(tag, at + 1)
    return best, found


def _closes_then_prose(nest: Any, value: str, at: int, tag: str, mentions: bool) -> bool:
    """Whether the close tag `tag` at `at` (-1: none) closes the raw `value`, one line
    of prose after it (see Builder._closed_inside) that holds no tag (`mentions`: but
    the format's own close tags named inside a sentence)."""
    if at < 0:
        return False
    rest = value[at + len(tag) :].strip()
    if not rest or "\n" in rest or (_markup_in(rest, nest.own) if mentions else "<" in rest):
        return False
    if _QuoteMarks(value).around(value.rfind("\n", 0, at) + 1, at):
        return False  # (`s = "</parameter> tag"`: a string the code names it in)
    return not _nested_open(nest, value[:at], tag)


def _named_after_blank(value: str, at: int) -> bool:
    """Whether the tag at `at` follows a blank and is not first on its line: named in a
    sentence (`It ends with </parameter> here.`), as _sentence_close tells it."""
    return at > 0 and value[at - 1] in " \t" and bool(value[value.rfind("\n", 0, at) + 1 : at].strip())


def _sentence_close(nest: Any, value: str) -> tuple[int, str]:
    """Where the first close tag of a value or of what holds it (nest.own, nest.holders)
    is, in the value's last line or ending the line before, written right after the
    value's text or first on its line, after which the rest of the value is one line of
    prose whose only tags are close tags named in a sentence (after a blank or a quote,
    not glued to a word or a tag); (-1, "") where none is. Each `<` is looked at once,
    in place: a candidate whose prose holds markup gives way to the first candidate at
    or after that markup."""
    if nest is None or nest.closers is None:
        return -1, ""
    text = value.rstrip()
    last = text.rfind("\n")  # (the last line's break: prose after a close holds none)
    lines = (text.rfind("\n", 0, last) + 1 if last >= 0 else 0, last + 1)
    firsts = tuple(_first_nonblank(text, start) for start in lines)
    quotes = _QuoteMarks(text)
    i = lines[0]
    while True:
        m = nest.closers.search(text, i)
        if m is None:
            return -1, ""
        rest = _first_nonblank(text, m.end())
        if rest >= len(text):
            return -1, ""
        at = m.start()
        first = firsts[1] if at > last else firsts[0]
        if last >= rest or not (at <= first or not text[at - 1].isspace()):
            i = at + 1  # (a close named in a sentence does not close)
            continue
        if quotes.around(lines[1] if at > last else lines[0], at):
            # (A close inside a string or backticks on its line, `return "</invoke> x"`,
            # `` End it with `</invoke>` ``: the value names it, and a value that ran to
            # the end of the reply so is cut there, not closed.)
            i = at + 1
            continue
        bad = _named_markup(text, rest, nest.closers)
        if bad < 0:
            return at, m.group()
        i = bad


class _QuoteMarks:
    """The quote marks of a text counted along a line, from its start to a point that
    only moves on, each character counted once (linear over a value's closers)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.start = self.at = self.stop = -1
        self.counts = [0, 0, 0]
        self.next = [-1, -1, -1]  # (the next `"`, backtick and `'` at or after `at` on the line; stop: none)

    def around(self, start: int, at: int) -> bool:
        """Whether text[at] lies inside a quote begun on its line (which starts at
        `start`): an odd number of `"` or of backticks before it there, or a `'` right
        before it, the line's `'` before it odd (`'` alone is an apostrophe in prose);
        and one more of that mark after it on the line, which closes the quote
        (`return "</invoke> x"`; not an inch mark or a quote left open, `a 5"
        screen</parameter> then prose`: QA11 D5)."""
        if start != self.start:
            self.start, self.at, self.counts, self.next = start, start, [0, 0, 0], [-1, -1, -1]
            stop = self.text.find("\n", start)
            self.stop = len(self.text) if stop < 0 else stop
        for k, mark in enumerate('"`\''):
            self.counts[k] += self.text.count(mark, self.at, at)
        self.at = at
        dq, bt, sq = self.counts
        return (
            dq % 2 == 1 and self._closed_after(0, '"', at) or bt % 2 == 1 and self._closed_after(1, "`", at)
            or (at > start and self.text[at - 1] == "'" and sq % 2 == 1 and self._closed_after(2, "'", at))
        )  # fmt: skip

    def _closed_after(self, k: int, mark: str, at: int) -> bool:
        """Whether `mark` comes again after text[at] on its line (each found once: `at` only moves on)."""
        if self.next[k] < at:
            found = self.text.find(mark, at, self.stop)
            self.next[k] = self.stop if found < 0 else found
        return self.next[k] < self.stop


_NONBLANK = re.compile(r"\S")


def _first_nonblank(text: str, at: int) -> int:
    """Where the first character of text from `at` on that is no blank is (len: none)."""
    m = _NONBLANK.search(text, at)
    return m.start() if m else len(text)


_CLOSE_NAMED = re.compile(r"</[^\s<>]+>")


def _named_markup(text: str, at: int, closers: Any) -> int:
    """Where the first tag of the prose text[at:] is that is markup, not a close tag
    (the format's, `closers`, or any `</…>`) named in a sentence, after a blank or a
    quote; -1 where none is."""
    i = text.find("<", at)
    while i >= 0:
        named = closers.match(text, i) or _CLOSE_NAMED.match(text, i)
        if i == at or text[i - 1].isalnum() or text[i - 1] in ">_" or not named:
            return i
        i = text.find("<", i + 1)
    return -1


def _markup_in(text: str, own: Any) -> bool:
    """Whether prose `text` holds a tag: any `<`, but a close tag of `own` inside a
    sentence (not first on its line), which names the tag."""
    i = text.find("<")
    while i >= 0:
        if not text.startswith(tuple(own), i) or not text[text.rfind("\n", 0, i) + 1 : i].strip():
            return True
        i = text.find("<", i + 1)
    return False


def _nested_open(nest: Any, text: str, closer: str) -> bool:
    """Whether text leaves open an element that `closer` closes (a balanced argument
    written as an example inside the value): then that closer is the element's, not
    the value's own."""
    depth = 0
    for m in nest.tags.finditer(text):
        tag = m.group()
        if nest.closer_of.get(tag) == closer:
            depth += 1
        elif tag == closer and depth:
            depth -= 1
    return depth > 0


def _left_open(call: Tree) -> bool:
    """Whether a call's own close was left out: its last token is one the driver
    supplied (empty), or it ends with the empty `unclosed`."""
    last: Any = call
    while isinstance(last, Tree) and last.children:
        last = last.children[-1]
        if isinstance(last, Tree) and _rule(last) == "unclosed":
            return True
    return isinstance(last, Tok) and last.end_pos == last.start_pos


def _tag_cut_unnamed(element: Tree) -> bool:
    """Whether an element's open tag was cut (it ends with the empty `unclosed` in
    the tag's place: `<param`, `<param type="string"`) before any `name=` was read."""
    kids = element.children
    if not kids or type(kids[-1]) is not Tree or _rule(kids[-1]) != "unclosed":
        return False
    return not any(type(c) is Tree and _rule(c) == "key" for c in kids)


def _ends_unclosed(part: Tree) -> bool:
    """Whether an argument part ends with the empty `unclosed` (its close never came),
    directly or in its last element."""
    last = part
    while isinstance(last, Tree) and last.children:
        last = last.children[-1]
        if isinstance(last, Tree) and _rule(last) == "unclosed":
            return True
    return False


def _last_holder(tree: Any) -> Tree | None:
    """The region's last call, or payload of calls, in the order of the text (as _walk
    meets them); None when prose, reasoning or a list element that is no call comes
    after it (the reply did not end inside it)."""
    # (Walked from the end, right to left: the first part that tells is the last of
    # _walk's order. A walk of the whole tree, from its start, made a region of
    # thousands of calls read them all twice.)
    stack = [tree]
    while stack:
        n = stack.pop()
        if not isinstance(n, Tree):
            continue
        r = _rule(n)
        if r in CALL_HOLDERS:
            return n
        if r in ("prose", "reasoning", "not_call"):
            if n.children:  # (an empty `prose:` only removes a marker)
                return None
            continue
        if r in _HANDLERS:
            continue
        stack.extend(n.children)
    return None


def _element(
    node: Tree, repairs: list[str], buf: str | None = None, depth: int = 0, argument: str | None = None, cut: Any = None
) -> Node:
    """An `element` subtree as a Node: its key, type, text and child elements.
    `depth`: how many elements hold it inside the argument (`argument`, the
    outermost one's key). A child element is one level more of the argument's
    value: past VALUE_DEPTH the call is unreadable, before this recursion (one
    frame a level) or the typing after it would go that deep. `cut`: (where the
    last token read before the end of the reply ends, Builder._cut_markup), for the
    call that end cut: a value's text that runs there without the close it cut
    (cofl's `</cof`, M3's `]<]minimax`), markup. A key, type or value whose token
    is XML text (`_XML`: BFCL's quoted attributes) has its character references
    read, after any such cut (they are no markup)."""
    out = Node()
    texts: list[str] = []
    stack = list(reversed(node.children))
    while stack:
        c = stack.pop()
        if not isinstance(c, Tree):
            continue
        r = _rule(c)
        if r == "key":
            out.key = _attr_text(c, buf).strip()
        elif r == "type":
            out.type = _attr_text(c, buf).strip()
        elif r == "value":
            text = _text(c, buf)
            if cut is not None and (_extent(c) or (0, -1))[1] == cut[0]:
                at = cut[1](text)
                if at >= 0:
                    text = text[:at]
            if "&" in text:
                text = _xml_text(c, text)
            texts.append(text)
        elif r == "element":
            if depth >= VALUE_DEPTH:
                raise _too_deep(argument if depth else out.key)
            out.children.append(_element(c, repairs, buf, depth + 1, argument if depth else out.key, cut))
        elif r == "unclosed":
            _add(repairs, ["closed_tag"])
        elif r == "unopened":
            _add(repairs, ["opened_tag"])
        else:
            stack.extend(reversed(c.children))
    out.text = "".join(texts)
    return out


def _rule(node: Tree, _known=_RULE_NAMES) -> str:
    # (Rules imported from grammars/shared get a namespace: "pycall__kwarg".) The
    # names rule_name has already worked out, looked up here first: the builder asks
    # this of every node of every call, and a call less each time is a tenth of a
    # small call's building.
    found = _known.get(node.data)
    return found if found is not None else rule_name(node.data)


def _find(node: Tree, name: str, _known=_RULE_NAMES) -> Any:
    """node's first subtree (node itself first, then top-down, left to right) that is
    the rule `name`; None: none is."""
    # (Tree.iter_subtrees_topdown's order, without its generator: the builder asks this
    # of each parameter of each call, `key` and `value` of a kwarg its direct children.)
    found = _known.get(node.data)
    if (found if found is not None else rule_name(node.data)) == name:
        return node
    for c in node.children:
        # (A child before the one named holds no rule, only tokens: none is before it
        # in that order either.)
        if type(c) is Tree:
            found = _known.get(c.data)
            if (found if found is not None else rule_name(c.data)) == name:
                return c
            kids = c.children
            if kids and (type(kids[0]) is not Tok if len(kids) == 1 else any(type(g) is not Tok for g in kids)):
                break  # (a rule of one token, the commonest, told without a generator)
        elif type(c) is not Tok:
            break
    else:
        return None  # (nothing below node but tokens and rules of tokens)
    stack = [node]
    pop = stack.pop
    while stack:
        n = pop()
        if not isinstance(n, Tree):
            continue
        found = _known.get(n.data)
        if (found if found is not None else rule_name(n.data)) == name:
            return n
        children = n.children
        if len(children) == 1:
            stack.append(children[0])
        elif children:
            stack.extend(reversed(children))
    return None


# The fields of an object of calls that say something beside them (see _envelope).
_ENVELOPE_REASONING = frozenset({"thought", "reasoning", "reasoning_content"})
_ENVELOPE_PROSE = frozenset({"content", "text"})


def _object_fields(text: str, decode: Any) -> tuple[list, int]:
    """The fields of the JSON object `text` opens with, in order, each read as JSON reads
    it (`decode`: a raw_decode), as far as the object is well-formed: [(key, the key's
    start, the value's start, the value, its end)], and where the object ends (after its
    `}`; -1 where it stops being well-formed first, or opens no object)."""
    fields: list = []
    ws = _JSON_WS
    try:
        pos = ws.match(text, 0).end()
        if text[pos] != "{":
            return fields, -1
        pos = ws.match(text, pos + 1).end()
        if text[pos] == "}":
            return fields, pos + 1
        while text[pos] == '"':
            at = pos
            key, pos = _scanstring(text, pos + 1)
            pos = ws.match(text, pos).end()
            if text[pos] != ":":
                break
            start = ws.match(text, pos + 1).end()
            value, end = decode(text, start)
            fields.append((key, at, start, value, end))
            pos = ws.match(text, end).end()
            if text[pos] == "}":
                return fields, pos + 1
            if text[pos] != ",":
                break
            pos = ws.match(text, pos + 1).end()
    except (ValueError, IndexError, RecursionError):
        # (RecursionError: a value nested deeper than the decoder reads, jsonscan.
        # DECODER_DEPTH, at any stack depth: the object is not well-formed as read.)
        pass
    return fields, -1


def _field_spans(text: str, offset: int) -> dict[str, tuple[int, int, int]]:
    """Where each field of the JSON object `text` opens with lies in the reply (offset:
    where text starts): its key's start, its value's start and end, read field by
    field as JSON reads them, up to where the object stops being well-formed (one
    repaired, or cut by the end of the reply: the fields before stand)."""
    fields, _ = _object_fields(text, _JSON_DECODER.raw_decode)
    return {key: (offset + at, offset + start, offset + end) for key, at, start, _, end in fields}


_JSON_DECODER = _repair._Bounded()  # (no C read past jsonscan.DECODER_DEPTH: issue 17)


def _fields_twice(text: str, twice: list) -> dict | None:
    """An object of calls (`{…, "tool_calls": […]}`, well-formed JSON) that gives one of
    its own fields twice with two values, which JSON cannot read: its fields, less
    those given twice, each of which goes in `twice` as (key, first value, second).
    A field given twice with one value is read once. None for any other text (a
    value inside that gives a key twice is still unreadable)."""
    read, end = _object_fields(text, _repair.decode_at)
    fields: dict = {}
    for key, _, _, value, _ in read:
        if key in fields and fields[key] != value:
            if not any(k == key for k, _, _ in twice):
                twice.append((key, fields[key], value))
        else:
            fields[key] = value
    if end < 0 or text[end:].strip(" \t\n\r") or not twice:
        return None
    for key, _, _ in twice:
        del fields[key]
    if any(key == "tool_calls" for key, _, _ in twice):
        fields["tool_calls"] = []  # (neither list is read: an error says why)
    return fields if isinstance(fields.get("tool_calls"), list) else None


_JSON_WS = re.compile(r"[ \t\n\r]*")
_scanstring = json.decoder.scanstring


def _flatten_calls(value: Any, spans):
    """Yield (call object, span) from a call, a list of calls or {"tool_calls": [...]}."""
    if isinstance(value, dict) and isinstance(value.get("tool_calls"), list):
        value = value["tool_calls"]  # spans: already those of this list's elements
    if isinstance(value, list):
        for i, item in enumerate(value):
            yield item, (spans[i] if spans and i < len(spans) else None)
    else:
        yield value, None


def _element_spans(text: str, offset: int, value: Any) -> list[tuple[int, int]] | None:
    """Where each top-level element of a JSON array lies, for per-call spans. (The
    lenient pass reads a Python tuple as a list, `({…}, {…})`: its `(` opens the list,
    `)` closes it, and each element is a call of its own, with its own span, as a
    list's: never the whole payload's span each, calls that overlap.)"""
    if not isinstance(value, list):
        return None
    lead = len(text) - len(text.lstrip())
    i = lead if text.startswith("(", lead) else text.find("[")
    if i < 0:
        return None
    close = ")" if text[i] == "(" else "]"
    spans = []
    pos = i + 1
    n = len(text)
    while pos < n and len(spans) < len(value):
        ch = text[pos]
        if ch in "{[":
            end = _repair.value_end(text, pos)
            if end is None or text[end - 1] != ("}" if ch == "{" else "]"):
                break  # (its brackets do not pair up: the repair mended them, see below)
            spans.append((offset + pos, offset + end))
            pos = end
        elif ch == close:
            break
        else:
            pos += 1
    if len(spans) == len(value):
        return spans
    # Brackets the repair mended (`[{…, {…}]`) do not pair up: where the lenient pass
    # began each element, each running to the next one's start (the comma and
    # whitespace before it left out), the last one to the end of the list.
    starts = [i + s for s in _repair.element_starts(text[i:])]
    if len(starts) != len(value):
        return None
    ends = []
    for s in starts[1:]:
        e = s
        while e > 0 and (text[e - 1].isspace() or text[e - 1] == ","):
            e -= 1
        ends.append(e)
    last = len(text.rstrip())
    ends.append(last - 1 if text.endswith(close, 0, last) else last)
    return [(offset + s, offset + max(e, s + 1)) for s, e in zip(starts, ends)]



# A list of JSON objects right at a payload's start (as Scanner.early_call finds its first call)
_LEADING_LIST = re.compile(r"[ \t\r\n]*\[[ \t\r\n]*\{")


LIST_CLOSED_EARLY = "the list's `]` comes before the call's `)`, and text follows it"


def _held_told(exc: Unreadable, buf: str | None) -> Unreadable:
    """The failure of a region whose calls all broke (Builder.build), where its first is a
    call read whole, held back as the call the end of the reply cut after it was to be kept
    (Unreadable.held_parts): that one broke too here, so the first is a call to tell as one
    with its own end read is, a whole positional value after a keyword one: held. Told
    where no shorter reading keeps the cut call either (_scan/salvage.py's salvage; issue
    19: `[f(a="x", g(b=1), h() x]` a line, told alone, was silent prose written twice)."""
    parts = exc.held_parts
    exc.held = parts is not None and buf is not None and _keyword_first(parts, buf)
    return exc


def _keyword_first(parts: list, buf: str) -> bool:
    """Whether a Python call's arguments (its parts) give a whole positional value after a
    keyword one (`f(a=1, g(b=1))`, `f(a=1, 2)`), which no Python reads: no code quoted in
    prose, but a call broken, told even without tools (issue 19: prose, and no error),
    where `[f(1)]` may be a Python list in prose. Only a value Python reads whole, and no
    `*b` or `**b` (valid Python there), and no bare name: not a word or a marker's beginning
    that the reply's end or a marker cut (`f(a=1, u`, `f(a=1, <tool_c`: the caller reads
    such a call only where its own end was read)."""
    keyword = False
    for p in parts:
        kind = getattr(p, "data", None)
        if kind == "kwarg":
            keyword = True
        elif kind == "posarg" and keyword and _whole_value(_text(p, buf).strip()):
            return True
    return False


@functools.lru_cache(maxsize=256)
def _whole_value(text: str) -> bool:
    """_keyword_first's look at a positional value's text: Python reads it whole, as a
    value (no `*b`). Of the text alone, kept: a list of a thousand such calls wrote the
    same value in each, and each was parsed (ast.parse)."""
    import ast  # (not at import: only a call that fails this way asks)

    if text[:1] == "*":
        return False
    try:
        tree = ast.parse(text, mode="eval").body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return isinstance(tree, (ast.Constant, ast.List, ast.Tuple, ast.Dict, ast.Set, ast.Call, ast.UnaryOp, ast.Name))


def _loads_shallow(text: str, cut: bool, left_open: list) -> tuple:
    """_repair.loads, and past the decoder's depth the same text made shallow (_shallow):
    qa42 N2."""
    try:
        return _repair.loads(text, cut, left_open)
    except _repair.RepairError as exc:
        if str(exc) != _repair.TOO_DEEP:
            raise
        shallow = _shallow(text)
        if shallow == text:
            raise
        left_open.clear()
        return _repair.loads(shallow, cut, left_open)


_SHALLOW_AT = 300  # (past VALUE_DEPTH, 256, so the value is still too deep; short of the decoder's 512)


# (_shallow's tokens: a quote, where a string begins; a run of openers; a run of closers.)
_SHALLOW_TOKEN = re.compile(r"[\"']|([\[{]+)|([\]}]+)")


def _shallow(text: str, at: int = _SHALLOW_AT) -> str:
    """A JSON text nested past what the decoder reads, made shallow: each bracketed value
    that opens at level `at` + 1 (outside strings, as outside_strings reads them: a string
    left open ends the look) is written `0`, padded with spaces to its length (to the
    text's end where it is not closed), so offsets stay. Its reading is the deep text's: a
    call whose arguments are still deeper than VALUE_DEPTH (finish_call's error), or no
    call (prose), as the shallow text reads. (A run of brackets is one step: it is what
    such a text is made of, 32 KB of `[[[…` a character at a time took 25 ms.)"""
    depth = 0
    pieces: list[str] = []
    last = 0
    skip = -1
    i, n = 0, len(text)
    while True:
        m = _SHALLOW_TOKEN.search(text, i)
        if m is None:
            break
        i = m.end()
        kind = m.lastindex
        if kind is None:  # (a quote: its string skipped)
            i = _string_end(text, m.start(), n)
            if i < 0:
                break
        elif kind == 1:
            if depth <= at < depth + i - m.start() and skip < 0:
                skip = m.start() + at - depth  # (the run's opener at level at + 1)
            depth += i - m.start()
        else:
            k = depth - at - 1  # (the run's closer met at level at + 1)
            if 0 <= k < i - m.start() and skip >= 0:
                close = m.start() + k
                pieces.append(text[last:skip])
                pieces.append("0" + " " * (close - skip))
                last, skip = close + 1, -1
            depth -= i - m.start()
    if skip >= 0:
        pieces.append(text[last:skip])
        pieces.append("0" + " " * (len(text) - skip - 1))
        last = len(text)
    pieces.append(text[last:])
    return "".join(pieces)


def _closes_list(text: str) -> bool:
    """Whether a Python value's text holds a `]` outside its strings that no `[` of its
    own opened: the list's close, the value having run on over it (`1]`, `"x"]`)."""
    depth = 0
    for _, c in outside_strings(text):
        if c in "([{":
            depth += 1
        elif c in ")]}":
            if depth == 0:
                return c == "]"
            depth -= 1
    return False
