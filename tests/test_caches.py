"""Caches die with their formats: a long-running server that builds many registries
(different grammar_paths or TOOLGRAM_GRAMMAR_PATH values, each a new set of Format
objects) does not keep every format it ever used alive through a module-level cache.
Per-format data hangs on the format (Compiled.derived, the compiled terminals); what
is kept per set of formats is bounded."""

from __future__ import annotations

import gc
import weakref
from pathlib import Path

import pytest

import toolgram
from toolgram._grammar import registry as _registry
from toolgram._grammar.header import Format

from test_user_grammars import MINE  # (the same small user grammar)

REPLIES = [
    'Sure. <<call>>{"name": "lookup", "arguments": {"q": "cats"}}<</call>> Done.',
    '<tool_call>\n{"name": "lookup", "arguments": {"q": "dogs"}}\n</tool_call>',
    'The weather in Paris is mild. [get_weather(city="Paris")]',
    "Plain prose with no call at all, a < and a { here.",
]
TOOLS = [{"type": "function", "function": {"name": n, "parameters": {"type": "object"}}} for n in ("lookup", "get_weather")]


def _live_formats() -> int:
    gc.collect()
    return sum(1 for o in gc.get_objects() if isinstance(o, Format))


def test_formats_of_dropped_registries_are_freed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TOOLGRAM_GRAMMAR_PATH", raising=False)
    toolgram.parse(REPLIES[0])  # (the default registry, built and used: it stays)
    monkeypatch.setattr(_registry, "_registries", {})
    baseline = _live_formats()
    per_registry = 0
    refs: list[weakref.ref] = []
    for i in range(40):
        folder = tmp_path / f"g{i}"
        folder.mkdir()
        (folder / "mine.lark").write_text(MINE, encoding="utf-8")
        formats = list(_registry.registry_for(folder).formats.values())
        per_registry = len(formats)
        refs += map(weakref.ref, formats)
        del formats
        for tools in (None, TOOLS):
            for reply in REPLIES:
                toolgram.parse(reply, tools, grammar_paths=folder)
                sp = toolgram.StreamParser(tools, grammar_paths=folder)
                for k in range(0, len(reply), 7):
                    sp.feed(reply[k : k + 7])
                sp.close()
        if i % 3 == 0:  # (a registry dropped while others are in use)
            _registry._registries.clear()
    _registry._registries.clear()
    live = _live_formats()
    alive = sum(1 for r in refs if r() is not None)
    assert alive <= 2 * per_registry, f"{alive} formats of dropped registries alive"
    assert live - baseline <= 2 * per_registry, f"{live - baseline} more live formats than before"
