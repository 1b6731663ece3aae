"""`toolgram new-format`: a starting grammar file and a corpus case from one example reply.

The markers are guessed from the example: the first special token (`<|…|>`, `<｜…｜>`),
XML-ish tag with its closing tag, `[UPPER_CASE]` token or Markdown fence; the payload
after it decides the body: JSON (`json_calls: JSON`), Python-style calls (the shared
`pycall` rules) or, failing both, a skeleton with TODOs. With no marker at all and a
reply that opens with JSON, the format is anchored to the reply's start.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

NAME_RE = re.compile(r"[a-z][a-z0-9_]*\Z")

_SPECIAL = re.compile(r"<\|[^|<>\s]{1,40}\|>|<｜[^｜<>\s]{1,40}｜>")
_TAG = re.compile(r"(<+)([A-Za-z_][\w:.-]*)(>+)")
_BRACKET = re.compile(r"\[([A-Z][A-Z0-9_]{2,})\]")
_FENCE = re.compile(r"```([A-Za-z0-9_-]+)")
_PYCALL = re.compile(r"\s*\[?\s*[A-Za-z_][\w.]*\(")


@dataclass
class Guess:
    start: str = ""
    end: str = ""
    payload: str = ""  # "json", "python" or "unknown"
    anchor: str = ""


def _closing_for(token: str) -> list[str]:
    """Likely closing tokens for an opening special token / tag."""
    out = []
    for a, b in (("start", "end"), ("begin", "end"), ("Start", "End"), ("BEGIN", "END"), ("START", "END"), ("open", "close")):
        if a in token:
            out.append(token.replace(a, b))
    if token.startswith("<|"):
        out.append("<|/" + token[2:])
    if token.startswith("<｜"):
        out.append("<｜/" + token[2:])
    return out


def guess(example: str) -> Guess:
    candidates: list[tuple[int, str, str]] = []  # (position, start, end)
    for m in _SPECIAL.finditer(example):
        end = next((c for c in _closing_for(m.group()) if c in example[m.end() :]), "")
        candidates.append((m.start(), m.group(), end))
        break
    for m in _TAG.finditer(example):
        close = f"{m.group(1)}/{m.group(2)}{m.group(3)}"
        if close in example[m.end() :] and m.group(2).lower() not in ("think", "thinking"):
            candidates.append((m.start(), m.group(), close))
            break
    for m in _BRACKET.finditer(example):
        word = m.group(1)
        closes = [f"[/{word}]", f"[END_{word}]", f"[{word}_END]"] + [f"[{c[1:-1]}]" for c in _closing_for(f"<{word}>")]
        end = next((c for c in closes if c in example[m.end() :]), "")
        candidates.append((m.start(), m.group(), end))
        break
    for m in _FENCE.finditer(example):
        if "```" in example[m.end() :]:
            candidates.append((m.start(), m.group(), "```"))
            break
    g = Guess()
    if candidates:
        _, g.start, g.end = min(candidates)
        after = example[example.index(g.start) + len(g.start) :]
        body = after[: after.index(g.end)] if g.end and g.end in after else after
    else:
        body = example
        g.anchor = "reply"
    stripped = body.strip()
    if stripped[:1] in ("{", "[") and _looks_json(stripped):
        g.payload = "json"
    elif _PYCALL.match(stripped):
        g.payload = "python"
    elif stripped[:1] in ("{", "["):
        g.payload = "json"
    else:
        g.payload = "unknown"
    if g.anchor and g.payload != "json":
        g.payload = "unknown"
    return g


def _looks_json(text: str) -> bool:
    try:
        json.loads(text)
        return True
    except ValueError:
        return text.count("{") > 0 and '"' in text


def grammar_text(name: str, g: Guess, case_file: str) -> str:
    markers = f"{g.start} … {g.end}".strip(" …") if g.start else "none: the reply opens with JSON"
    head = [f"// format: {name}", "// title: TODO: a one-line description", "// models: TODO: the models that write this"]
    head.append(f"// markers: {markers}")
    if g.start:
        head.append(f"// start: {g.start}")
    if g.end:
        head.append(f"// end: {g.end}")
    if g.anchor:
        head.append(f"// anchor: {g.anchor}")
        head.append("// quiet: yes")
    head += [
        "//",
        "// Written by `toolgram new-format` from an example reply; check it with",
        f"//   toolgram explain {case_file} --grammar-path grammars",
        "// Header keys and rule names: see grammars/README.md of toolgram.",
    ]
    start_t = "START " if g.start else ""
    end_t = " END" if g.end else ""
    if g.payload == "json":
        body = [
            f"start: {start_t}json_calls{end_t}",
            "",
            "// One call object {\"name\", \"arguments\"}, a list of them or {\"tool_calls\": [...]}.",
            "json_calls: JSON",
            "JSON: /[\\[{]/",
        ]
    elif g.payload == "python":
        body = [
            f"start: {start_t}(\"[\" call (\",\" call)* [\",\"] \"]\" | _calls){end_t}",
            "_calls: call (\",\" call)*",
            "",
            "// name(key=value, …) with Python/JSON literal values",
            "%import .pycall (call, name, kwarg, posarg, key, value, NAME, KEY, PYVALUE)",
        ]
    else:
        body = [
            f"start: {start_t}call{end_t}",
            "",
            "// TODO: describe one call. The builder reads these rule names:",
            "//   name (the tool's name), args (JSON text of the arguments),",
            "//   param with key and value (one parameter), id (a model-written id).",
            "call: name args",
            "name: NAME",
            "args: JSON",
            "NAME: /[A-Za-z_][\\w.\\-]*/",
            "JSON: /[\\[{]/",
        ]
    if g.start:
        body += ["", f"START: {json.dumps(g.start, ensure_ascii=False)}"]
    if g.end:
        body += [f"END: {json.dumps(g.end, ensure_ascii=False)}"]
    body += ["", "%import common.WS", "%ignore WS"]
    return "\n".join(head) + "\n\n" + "\n".join(body) + "\n"


def case_name(example: Path) -> str:
    stem = re.sub(r"[^a-z0-9_]+", "_", example.stem.lower()).strip("_")
    if not stem or not stem[0].isalpha():
        stem = "example" + (f"_{stem}" if stem else "")
    return stem
