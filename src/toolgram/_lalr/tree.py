"""The parse tree the drivers build: a rule's name and its children (tokens and trees).

The same shape as Lark's Tree (`data`, `children`, `meta`, and the few methods the
library reads them with), made here so that reading a reply never imports Lark: the
tables the LALR driver runs on come from toolgram's table cache (see
_grammar/tables.py), and the tree callbacks are built from them, as Lark builds its
own. The Earley driver's Lark trees are turned into these (earley._placed).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any


class Meta:
    """What a tree notes about its place (`end_pos`, `last`: see driver._close_extent).
    `plain`: a call of a name and one-token arguments only, as builder._plain_parts
    reads one, made so (pyframe._call): not looked through again. `twin`: the call of
    the list before, written the same (pyframe._again); `key`: the builder's
    _plain_key of the call, once asked (a twin's is its own)."""

    plain = False
    twin = None
    key = None

    def __init__(self) -> None:
        self.empty = True


class Tree:
    __slots__ = ("data", "children", "_meta")

    def __init__(self, data: str, children: list, meta: Meta | None = None) -> None:
        self.data = data
        self.children = children
        self._meta = meta

    @property
    def meta(self) -> Meta:
        if self._meta is None:
            self._meta = Meta()
        return self._meta

    def __repr__(self) -> str:
        return f"Tree({self.data!r}, {self.children!r})"

    def __eq__(self, other: object) -> bool:
        try:
            return self.data == other.data and self.children == other.children  # type: ignore[attr-defined]
        except AttributeError:
            return False

    def __ne__(self, other: object) -> bool:
        return not self == other

    def __hash__(self) -> int:
        return hash((self.data, tuple(self.children)))

    def pretty(self, indent: str = "  ") -> str:
        """The tree indented, one node a line (as Lark's Tree.pretty writes it)."""
        out: list[str] = []

        def walk(node: Tree, level: int) -> None:
            out.append(f"{indent * level}{node.data}")
            if len(node.children) == 1 and not isinstance(node.children[0], Tree):
                out.append(f"\t{node.children[0]}\n")
                return
            out.append("\n")
            for child in node.children:
                if isinstance(child, Tree):
                    walk(child, level + 1)
                else:
                    out.append(f"{indent * (level + 1)}{child}\n")

        walk(self, 0)
        return "".join(out)

    def iter_subtrees(self) -> Iterator[Tree]:
        """Every subtree once, children before their parents (Lark's order)."""
        queue = [self]
        seen: dict[int, Tree] = {}
        for subtree in queue:
            seen[id(subtree)] = subtree
            queue += [c for c in reversed(subtree.children) if isinstance(c, Tree) and id(c) not in seen]
        return reversed(list(seen.values()))

    def iter_subtrees_topdown(self) -> Iterator[Tree]:
        """Every subtree, parents first, in the order pretty() writes them."""
        stack: list[Any] = [self]
        while stack:
            node = stack.pop()
            if not isinstance(node, Tree):
                continue
            yield node
            stack.extend(reversed(node.children))
