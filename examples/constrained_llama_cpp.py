"""Constrained and unconstrained calls from a small GGUF model, counted (not run by CI).

    pip install llama-cpp-python huggingface-hub
    python examples/constrained_llama_cpp.py [--repo REPO --file FILE | --model PATH] [--format hermes] [-n 20]

For each prompt the model answers twice: free, and with toolgram.constrain's GBNF grammar.
A reply is valid when toolgram.parse reads at least one call from it, every call names an
offered tool, and its arguments validate against that tool's schema.
"""

from __future__ import annotations

import argparse

import toolgram
from toolgram.prompts import render_prompt

TOOLS = [
    {"name": "get_weather", "description": "Current weather in a city", "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string", "maxLength": 40}, "unit": {"enum": ["celsius", "fahrenheit"]}},
        "required": ["city"]}},
    {"name": "convert_currency", "description": "Convert an amount", "parameters": {
        "type": "object",
        "properties": {"amount": {"type": "number"}, "from": {"type": "string", "maxLength": 3},
                       "to": {"type": "string", "maxLength": 3}},
        "required": ["amount", "from", "to"]}},
]  # fmt: skip

PROMPTS = [
    "What's the weather in Oslo?",
    "Is it warm in Lima right now, in fahrenheit?",
    "How much is 120 euros in dollars?",
    "Convert 5000 yen to pounds.",
    "Weather for São Paulo please.",
]


def valid(reply: str, fmt: str) -> bool:
    result = toolgram.parse(reply, tools=TOOLS, formats=[fmt])
    if not result.calls or result.errors:
        return False
    return all(not toolgram.validate(c, TOOLS) for c in result.calls)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repo", default="HuggingFaceTB/SmolLM2-135M-Instruct-GGUF")
    ap.add_argument("--file", default="*q8_0.gguf")
    ap.add_argument("--model", default=None, help="a local GGUF file (instead of --repo and --file)")
    ap.add_argument("--format", default="hermes")
    ap.add_argument("-n", type=int, default=20, help="replies per prompt and mode")
    args = ap.parse_args()

    from llama_cpp import Llama, LlamaGrammar

    if args.model:
        llm = Llama(args.model, n_ctx=2048, verbose=False)
    else:
        llm = Llama.from_pretrained(args.repo, args.file, n_ctx=2048, verbose=False)
    grammar = LlamaGrammar.from_string(toolgram.constrain(TOOLS, args.format, engine="gbnf", max_calls=2), verbose=False)
    system = render_prompt(TOOLS, args.format) if args.format in toolgram.prompts.PROMPT_FORMATS else ""
    counts = {"free": 0, "constrained": 0}
    for prompt in PROMPTS:
        messages = [{"role": "system", "content": system}, {"role": "user", "content": prompt}]
        for _ in range(args.n):
            for mode in counts:
                out = llm.create_chat_completion(messages, max_tokens=256, temperature=0.8,
                                                 grammar=grammar if mode == "constrained" else None)  # fmt: skip
                counts[mode] += valid(out["choices"][0]["message"]["content"] or "", args.format)
    total = len(PROMPTS) * args.n
    for mode, n in counts.items():
        print(f"{mode}: {n}/{total} replies are valid calls")


if __name__ == "__main__":
    main()
