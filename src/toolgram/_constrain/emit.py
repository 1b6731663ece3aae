"""A small grammar, built once and printed in either engine's syntax: llguidance's Lark
dialect or llama.cpp's GBNF. Nodes are tuples:

    ("lit", text)            literal text
    ("cls", body)            one character of a class, `body` as written between [ ]
    ("seq", [node…]) ("alt", [node…]) ("rep", node, min, max or None) ("ref", rule)
    ("json", schema)         llguidance only: its %json (GBNF gets the rules of schema.py)
    ("tok", marker)          llguidance only: a special token, required as one token
    ("text", kind, min, max)  a JSON string (kind "string": quotes, escapes) or a parameter's
                             raw text (kind "raw": no "<" that could open or close a tag),
                             min to max characters
    ("prose", marker, cls, line)  text with no `marker` in it, then the marker (a special
                             token or text); `line`: the text ends with a line break
"""

from __future__ import annotations

import json

Node = tuple


def lit(text: str) -> Node:
    return ("lit", text)


def seq(*nodes: Node) -> Node:
    nodes = tuple(n for n in nodes if n != ("lit", ""))
    return nodes[0] if len(nodes) == 1 else ("seq", nodes)


def alt(*nodes: Node) -> Node:
    # An empty alternative makes the others optional (neither syntax writes "" well).
    if ("lit", "") in nodes:
        rest = tuple(n for n in nodes if n != ("lit", ""))
        return rep(alt(*rest), 0, 1) if rest else ("lit", "")
    return nodes[0] if len(nodes) == 1 else ("alt", tuple(nodes))


def rep(node: Node, low: int = 0, high: int | None = None) -> Node:
    return ("rep", node, low, high)


def ref(name: str) -> Node:
    return ("ref", name)


def class_char(ch: str, lark: bool) -> str:
    """`ch` as written inside a character class. GBNF knows the escapes of `\\`, `[` and `]`
    only; `^`, `-` (and controls) are written by their code in both syntaxes, and `/`
    ends a regex in llguidance's."""
    if ch in "\\[]":
        return "\\" + ch
    if ch in "^-" or ord(ch) < 0x20:
        return f"\\x{ord(ch):02x}"
    return "\\/" if ch == "/" and lark else ch


_REGEX_SPECIAL = set("\\.+*?()|[]{}^$#&-~/")


def regex_text(text: str) -> str:
    return "".join("\\" + c if c in _REGEX_SPECIAL else (f"\\x{ord(c):02x}" if ord(c) < 0x20 else c) for c in text)


class Grammar:
    def __init__(self, engine: str) -> None:
        self.engine = engine
        self.rules: dict[str, Node] = {}

    def rule(self, name: str, node: Node) -> Node:
        self.rules[name] = node
        return ref(name)

    def text(self, start: Node) -> str:
        lark = self.engine == "llguidance"
        head = "start" if lark else "root"
        lines = [f"{head}{':' if lark else ' ::='} {self._node(start, top=True)}"]
        used = self._reachable(start)
        for name, node in self.rules.items():
            if name not in used:  # (an optional item's "after" rule that nothing needs)
                continue
            lines.append(f"{name}{':' if lark else ' ::='} {self._node(node, top=True)}")
        return "\n".join(lines) + "\n"

    def _reachable(self, start: Node) -> set[str]:
        seen: set[str] = set()
        todo = [start]
        while todo:
            node = todo.pop()
            if node[0] == "ref" and node[1] not in seen:
                seen.add(node[1])
                todo.append(self.rules[node[1]])
            elif node[0] in ("seq", "alt"):
                todo.extend(node[1])
            elif node[0] in ("rep", "prose"):
                todo.append(node[1])
        return seen

    def _node(self, node: Node, top: bool = False) -> str:
        kind = node[0]
        lark = self.engine == "llguidance"
        if kind == "lit":
            return json.dumps(node[1], ensure_ascii=False)
        if kind == "cls":
            return f"/[{node[1]}]/" if lark else f"[{node[1]}]"
        if kind == "ref":
            return node[1]
        if kind == "tok":
            return node[1]
        if kind == "json":
            return "%json " + json.dumps(node[1], ensure_ascii=False)
        if kind == "text":
            return self._text(node, "")
        if kind == "seq":
            parts = list(node[1])
            if lark:
                parts = _fused(parts)
            return self._group(" ".join(self._node(n) for n in parts), top)
        if kind == "alt":
            return self._group(" | ".join(self._node(n) for n in node[1]), top)
        if kind == "fused":
            return self._text(node[1], node[2])
        if kind == "rep":
            inner, low, high = self._node(node[1]), node[2], node[3]
            if node[1][0] in ("seq", "alt") and not inner.startswith("("):
                inner = f"({inner})"
            if (low, high) == (0, None):
                return inner + "*"
            if (low, high) == (1, None):
                return inner + "+"
            if (low, high) == (0, 1):
                return inner + "?"
            return inner + (f"{{{low},}}" if high is None else f"{{{low},{high}}}")
        if kind == "prose":
            return self._prose(*node[1:])
        raise ValueError(kind)

    def _text(self, node: Node, suffix: str) -> str:
        _, kind, low, high = node
        count = "*" if (low, high) == (0, None) else (f"{{{low},}}" if high is None else f"{{{low},{high}}}")
        if self.engine == "llguidance":
            # One lexeme (with the text that follows it, when it is fused): a greedy lexer
            # could not give back what a run of one-character lexemes took.
            if kind == "string":
                return f'/"(?:[^"\\\\\\x00-\\x1f]|\\\\["\\\\\\/bfnrt]|\\\\u[0-9a-fA-F]{{4}}){count}"{regex_text(suffix)}/'
            unit = "(?:[^<]|<[^\\/<a-zA-Z])" if count == "*" else "[^<]"
            return f"/{unit}{count}{regex_text(suffix)}/"
        if kind == "string":
            chars = '([^"\\\\\\x00-\\x1f] | "\\\\" ["\\\\/bfnrt] | "\\\\u" [0-9a-fA-F] [0-9a-fA-F] [0-9a-fA-F] [0-9a-fA-F])'
            return f'"\\"" {chars}{count} "\\""'
        # (A bounded text has no "<": "<" and the character after it would count as one.)
        return f'([^<] | "<" [^/<a-zA-Z]){count}' if count == "*" else f"[^<]{count}"

    @staticmethod
    def _group(text: str, top: bool) -> str:
        return text if top else f"({text})"

    def _prose(self, marker: Node, avoid: str, line: bool) -> str:
        # Text that cannot hold the marker: its first character only when the next one is
        # neither the marker's second character nor its first (which would start it again).
        # A marker of one character is left out of the text altogether, as is one that may
        # only open a line (the text then ends with a line break).
        lark = self.engine == "llguidance"
        first = class_char(avoid[0], lark)
        if len(avoid) > 1 and not line:
            second = "".join(dict.fromkeys(class_char(c, lark) for c in avoid[:2]))
            chars = (f"[^{first}]", f"{json.dumps(avoid[0])} [^{second}]", f"[^{first}]|{regex_text(avoid[0])}[^{second}]")
        else:
            chars = (f"[^{first}]", None, f"[^{first}]")
        tail = "\n" if line else ""
        if self.engine == "llguidance":
            # One lexeme for the text and a textual marker: llguidance's lexer is greedy, and
            # would not give back the marker's first characters once the text took them.
            body = f"(?:{chars[2]})*" + ("\\n" if line else "")
            if marker[0] == "lit":
                return f"/{body}{regex_text(marker[1])}/"
            return f"/{body}/ {marker[1]}"
        alts = chars[0] if chars[1] is None else f"{chars[0]} | {chars[1]}"
        text = f"({alts})*" + (" " + json.dumps(tail) if tail else "")
        return f"{text} {self._node(marker)}"


def _fused(parts: list[Node]) -> list[Node]:
    """Raw text and the literal after it as one lexeme (in each branch of an alternative)."""
    out: list[Node] = []
    for node in parts:
        prev = out[-1] if out else None
        if node[0] == "lit" and prev is not None and _has_raw(prev):
            out[-1] = _fuse(prev, node[1])
        else:
            out.append(node)
    return out


def _has_raw(node: Node) -> bool:
    if node[0] == "text":
        return node[1] == "raw"
    return node[0] == "alt" and any(_has_raw(n) for n in node[1])


def _fuse(node: Node, suffix: str) -> Node:
    if node[0] == "text" and node[1] == "raw":
        return ("fused", node, suffix)
    if node[0] == "alt":
        return ("alt", tuple(_fuse(n, suffix) for n in node[1]))
    return seq(node, lit(suffix))
