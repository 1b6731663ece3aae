"""A code fence's line: the one rule every layer asks.

A model's Markdown shows calls and writes code in fenced blocks, and three readers must
agree on which lines are a fence's: quotation.Fences (the blocks of the prose, read
forward: a ```text block shows its calls), instring's search back for the line a string
opened before a marker cannot cross (_scan), and the driver's count of the fences a raw
value opens (_lalr/nest.py: a value that opened ```xml shows the tags after it). The rule
lives here, below both layers, so that each builds its patterns from it.

CommonMark's head, indented as models indent it: blanks (spaces or tabs, at most
INDENT of them), a run of three or more backticks or tildes, and after backticks no backtick in
the info string's first word (as far as Fences reads it, 17 characters: ```a`b``` is
inline code). CommonMark's "at most three spaces" counts from the block the fence sits
in: a fence in a list item is indented with the item (`1. The format:` then
`    ```text`), and real replies indent their fences 8-12 spaces; no reader here knows
the containers, so the limit is the one no Markdown nesting a model writes goes past.
Whether the line opens or closes a block is Fences' (only it reads the blocks in order);
a string cannot cross either.
"""

from __future__ import annotations

INDENT = 32
# (\x1c-\x1f: str.isspace()'s too, which Fences reads the info string's word with.)
FENCE_HEAD = r"[ \t]{0,%d}+(?:`{3,}+(?![ \t]*+[^\s\x1c-\x1f`]{0,16}`)|~{3,}+)" % INDENT
