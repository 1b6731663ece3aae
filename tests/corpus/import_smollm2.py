"""Copy every record of ../shared/corpus/smollm2_generated.jsonl into tests/corpus/ as a case.

    python tests/corpus/import_smollm2.py           # (re)write the smollm2_* cases
    python tests/corpus/import_smollm2.py --check   # exit 1 if the cases on disk differ

smollm2_generated.jsonl is the only shared capture the project may copy (see
../shared/corpus/README.md); never point this at the other files there.

Each record becomes tests/corpus/<folder>/smollm2_<context>_<nn>.txt holding `raw` byte for byte,
plus <case>.tools.json: the tools its prompt offered (OpenAI function definitions found in the
prompt of ../shared/corpus/smollm2_prompts.json, or in the record's user_message when the
prompt has none; names from intended_calls if no definition is found). <context> is the
record's prompt_context_id with "prompted:" dropped and "prompted_1shot:" turned into "1shot_",
other non-alphanumerics into "_" ("prompted_1shot:hermes_qwen#9" -> "1shot_hermes_qwen_9");
<nn> counts that context's records in file order, from 01.
No formats.json is written: these cases are parsed with format auto-detection. The record's
`format` label only chooses the folder; the parser never sees it.

Running it deletes every existing smollm2_* case (and sidecar) in the folders it manages first,
so the result depends only on the shared files. Hand-written cases must not start with smollm2_.
"""

from __future__ import annotations

import json
import re
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[2]
CORPUS_DIR = REPO_ROOT / "tests" / "corpus"
SHARED_CORPUS = REPO_ROOT.parent / "shared" / "corpus"
PREFIX = "smollm2_"

FOLDER_BY_LABEL = {
    "hermes_qwen": "hermes",
    "lfm2_pythonic_tokens": "lfm2",
    "fenced_json": "fenced_json",
    "mfcs": "mfcs",
    "pythonic_bfcl": "pythonic",
    "smollm2_native_list": "pythonic",
    "llama3_json": "llama3_json",
    "mistral_tool_calls": "mistral",
    "qwen3_coder_xml": "qwen3_coder_xml",
}
MANAGED_FOLDERS = sorted(set(FOLDER_BY_LABEL.values()))


def _label(fmt: str) -> tuple[str, bool]:
    """'prompted_1shot:hermes_qwen' -> ('hermes_qwen', True)."""
    mode, sep, label = fmt.partition(":")
    if not sep or mode not in ("prompted", "prompted_1shot"):
        raise ValueError(f"unexpected format label {fmt!r}")
    return label, mode == "prompted_1shot"


def _context_slug(context_id: str) -> str:
    _, _, rest = context_id.partition(":")
    mode = context_id.split(":", 1)[0]
    slug = ("1shot_" if mode == "prompted_1shot" else "") + rest
    return re.sub(r"[^a-z0-9]+", "_", slug.lower()).strip("_")


def _definitions(obj: Any) -> list[dict[str, Any]]:
    """Function definitions in a decoded JSON value, as OpenAI {"type": "function", ...}."""
    if isinstance(obj, list):
        return [d for item in obj for d in _definitions(item)]
    if not isinstance(obj, dict):
        return []
    fn = obj.get("function") if obj.get("type") == "function" else obj
    if (
        isinstance(fn, dict)
        and isinstance(fn.get("name"), str)
        and isinstance(fn.get("parameters"), dict)
        and "arguments" not in fn
        and ("properties" in fn["parameters"] or fn["parameters"].get("type") == "object")
    ):
        return [{"type": "function", "function": fn}]
    return []


def extract_tools(texts: list[str]) -> list[dict[str, Any]]:
    """Every function definition written as JSON in the texts, first occurrence wins."""
    decoder = json.JSONDecoder()
    found: dict[str, dict[str, Any]] = {}
    for text in texts:
        i = 0
        while i < len(text):
            if text[i] in "{[":
                try:
                    obj, end = decoder.raw_decode(text, i)
                except ValueError:
                    i += 1
                    continue
                for d in _definitions(obj):
                    found.setdefault(d["function"]["name"], d)
                i = end
            else:
                i += 1
    return list(found.values())


def plan(shared_corpus: Path = SHARED_CORPUS) -> dict[Path, bytes]:
    """Every file the import writes, path -> exact bytes."""
    prompts = json.loads((shared_corpus / "smollm2_prompts.json").read_text(encoding="utf-8"))
    lines = (shared_corpus / "smollm2_generated.jsonl").read_bytes().decode("utf-8").splitlines()
    records = [json.loads(line) for line in lines if line.strip()]
    counters: dict[str, int] = defaultdict(int)
    files: dict[Path, bytes] = {}
    for record in records:
        label, _ = _label(record["format"])
        folder = FOLDER_BY_LABEL[label]
        context = record["prompt_context_id"]
        counters[context] += 1
        name = f"{PREFIX}{_context_slug(context)}_{counters[context]:02d}"
        case = CORPUS_DIR / folder / f"{name}.txt"
        if case in files:
            raise ValueError(f"duplicate case name {name}")
        files[case] = record["raw"].encode("utf-8")

        texts = [m["content"] for m in prompts.get(context, []) if m.get("role") != "assistant"]
        texts.append(record.get("user_message") or "")
        tools: list[Any] = extract_tools(texts)
        offered = {t["function"]["name"] for t in tools}
        for call in record.get("intended_calls") or []:  # never leave an intended tool out
            if call["name"] not in offered:
                offered.add(call["name"])
                tools.append(call["name"])
        sidecar = json.dumps(tools, indent=2, ensure_ascii=False) + "\n"
        files[case.with_name(f"{name}.tools.json")] = sidecar.encode("utf-8")
    return files


def existing(corpus_dir: Path = CORPUS_DIR) -> set[Path]:
    return {
        p
        for folder in MANAGED_FOLDERS
        if (corpus_dir / folder).is_dir()
        for p in (corpus_dir / folder).glob(f"{PREFIX}*")
        if p.is_file()
    }


def check(shared_corpus: Path = SHARED_CORPUS) -> list[str]:
    """Differences between the cases on disk and a fresh import (empty when up to date)."""
    files = plan(shared_corpus)
    problems = [f"missing or different: {p.relative_to(REPO_ROOT)}" for p, data in files.items() if not p.is_file() or p.read_bytes() != data]
    problems += [f"stale: {p.relative_to(REPO_ROOT)}" for p in sorted(existing() - set(files))]
    return problems


def main(argv: list[str]) -> int:
    if "--check" in argv:
        problems = check()
        print("\n".join(problems) or "smollm2 cases are up to date")
        return 1 if problems else 0
    files = plan()
    for path in existing():
        path.unlink()
    for path, data in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    cases = sum(1 for p in files if p.suffix == ".txt")
    print(f"wrote {cases} smollm2 cases ({len(files)} files) under {CORPUS_DIR.relative_to(REPO_ROOT)}/")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
