"""toolgram.constrain's GBNF run by llama.cpp itself (llama-cpp-python): read by its grammar
parser, and sampled from by its grammar sampler, for every format with a canonical form.

    pip install llama-cpp-python gguf     # llama-cpp-python builds llama.cpp from source
    python benchmarks/gbnf_llama_cpp.py [--formats hermes,lfm2] [-n 20] [--seed 1]

No model is downloaded: the script writes a tiny llama model with random weights (one
layer, a vocabulary of the 256 bytes, about 300 KB) to a temporary folder. Its replies are
noise, so whatever structure a reply has comes from the grammar: the test of the grammar
is that every constrained reply is a valid call, while the same model unconstrained
writes none. (A real model's counts are examples/constrained_llama_cpp.py's job; it needs
a model from a hub, which this machine cannot reach.)

For each format: the GBNF of toolgram.constrain(TOOLS, format, engine="gbnf", prose=False,
max_calls=2) is loaded by llama.cpp (LlamaGrammar.from_string: a grammar llama.cpp cannot
read fails here), then -n replies are sampled with it and -n without (temperature 1,
max_tokens 400). A reply is valid when toolgram.parse(reply, TOOLS, formats=[format])
reads one or more calls with no error, every call names an offered tool and its
arguments validate against the tool's schema (toolgram.validate). A constrained reply
that hits max_tokens before the grammar ends is counted apart ("cut"): the grammar allows
long strings, and a random model may write one until the limit.

Printed: a line per format (loaded, valid/cut/invalid of the constrained replies, valid
of the free ones, ms per reply), the first invalid reply of each format, and a summary.
Exit status 1 when a grammar does not load or a constrained reply that was not cut is
invalid.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT / "src") not in sys.path:
    sys.path.insert(0, str(ROOT / "src"))

import toolgram  # noqa: E402
from toolgram._constrain.canonical import constrainable  # noqa: E402

TOOLS = [
    {"name": "get_weather", "description": "Current weather in a city", "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string", "maxLength": 24}, "unit": {"enum": ["celsius", "fahrenheit"]},
                       "days": {"type": "integer"}},
        "required": ["city"]}},
    {"name": "set_alarm", "description": "Set an alarm", "parameters": {
        "type": "object",
        "properties": {"hour": {"type": "integer"}, "label": {"type": ["string", "null"], "maxLength": 16},
                       "repeat": {"type": "boolean"}},
        "required": ["hour", "repeat"]}},
    {"name": "ping", "description": "No arguments", "parameters": {"type": "object", "properties": {}}},
]  # fmt: skip


def tiny_model(path: Path, seed: int, n_ctx: int = 4096) -> None:
    """A llama model with random weights and a byte vocabulary (SentencePiece-style byte
    tokens <0x00>..<0xFF>, after <unk>, <s> and </s>), written as GGUF."""
    import gguf
    import numpy as np

    rng = np.random.default_rng(seed)
    n_vocab, n_embd, n_head, n_ff = 259, 64, 4, 128
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_name("toolgram-random-bytes")
    w.add_context_length(n_ctx)
    w.add_embedding_length(n_embd)
    w.add_block_count(1)
    w.add_feed_forward_length(n_ff)
    w.add_head_count(n_head)
    w.add_head_count_kv(n_head)
    w.add_rope_dimension_count(n_embd // n_head)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_file_type(gguf.LlamaFileType.ALL_F32)
    w.add_tokenizer_model("llama")
    tokens = [b"<unk>", b"<s>", b"</s>"] + [f"<0x{i:02X}>".encode() for i in range(256)]
    types = [gguf.TokenType.UNKNOWN, gguf.TokenType.CONTROL, gguf.TokenType.CONTROL] + [gguf.TokenType.BYTE] * 256
    w.add_token_list(tokens)
    w.add_token_scores([0.0] * n_vocab)
    w.add_token_types(types)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_unk_token_id(0)
    w.add_add_bos_token(True)
    w.add_add_eos_token(False)

    def tensor(name: str, *shape: int, scale: float = 0.2) -> None:
        w.add_tensor(name, (rng.standard_normal(shape) * scale).astype(np.float32))

    tensor("token_embd.weight", n_vocab, n_embd)
    w.add_tensor("blk.0.attn_norm.weight", np.ones(n_embd, dtype=np.float32))
    for part in ("attn_q", "attn_k", "attn_v", "attn_output"):
        tensor(f"blk.0.{part}.weight", n_embd, n_embd)
    w.add_tensor("blk.0.ffn_norm.weight", np.ones(n_embd, dtype=np.float32))
    tensor("blk.0.ffn_gate.weight", n_ff, n_embd)
    tensor("blk.0.ffn_up.weight", n_ff, n_embd)
    tensor("blk.0.ffn_down.weight", n_embd, n_ff)
    w.add_tensor("output_norm.weight", np.ones(n_embd, dtype=np.float32))
    tensor("output.weight", n_vocab, n_embd)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def valid(reply: str, fmt: str) -> bool:
    result = toolgram.parse(reply, tools=TOOLS, formats=[fmt])
    if not result.calls or result.errors:
        return False
    return all(not toolgram.validate(c, TOOLS) for c in result.calls)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--formats", default=None, help="comma-separated (default: every format with a canonical form)")
    ap.add_argument("-n", type=int, default=20, help="replies per format and mode")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--max-tokens", type=int, default=400)
    args = ap.parse_args()

    from llama_cpp import Llama, LlamaGrammar, __version__ as llama_cpp_version

    formats = args.formats.split(",") if args.formats else constrainable()
    bad = 0
    totals = {"valid": 0, "cut": 0, "invalid": 0, "free_valid": 0, "replies": 0}
    with tempfile.TemporaryDirectory() as tmp:
        model = Path(tmp) / "random-bytes.gguf"
        tiny_model(model, args.seed)
        llm = Llama(str(model), n_ctx=1024, seed=args.seed, verbose=False)
        print(f"llama-cpp-python {llama_cpp_version}; a random-weight model of {model.stat().st_size // 1024} KB; "
              f"{len(formats)} formats, {args.n} replies each, constrained and free")  # fmt: skip
        for fmt in formats:
            gbnf = toolgram.constrain(TOOLS, fmt, engine="gbnf", prose=False, max_calls=2)
            try:
                grammar = LlamaGrammar.from_string(gbnf, verbose=False)
            except Exception as exc:  # llama.cpp's parser refused it
                print(f"{fmt:20} NOT LOADED: {exc}")
                bad += 1
                continue
            counts = {"valid": 0, "cut": 0, "invalid": 0, "free_valid": 0}
            first_invalid = None
            t0 = time.perf_counter()
            for i in range(args.n):
                out = llm.create_completion("", max_tokens=args.max_tokens, temperature=1.0, seed=args.seed + i, grammar=grammar)
                reply, finish = out["choices"][0]["text"], out["choices"][0]["finish_reason"]
                if valid(reply, fmt):
                    counts["valid"] += 1
                elif finish == "length":
                    counts["cut"] += 1
                else:
                    counts["invalid"] += 1
                    first_invalid = first_invalid or reply
            ms = (time.perf_counter() - t0) * 1000 / args.n
            for i in range(args.n):
                out = llm.create_completion("", max_tokens=args.max_tokens, temperature=1.0, seed=args.seed + i)
                counts["free_valid"] += valid(out["choices"][0]["text"], fmt)
            for key, value in counts.items():
                totals[key] += value
            totals["replies"] += args.n
            bad += counts["invalid"]
            print(f"{fmt:20} loaded; constrained: {counts['valid']:3} valid, {counts['cut']:3} cut at max_tokens, "
                  f"{counts['invalid']:3} invalid; free: {counts['free_valid']:3} valid; {ms:6.1f} ms a reply")  # fmt: skip
            if first_invalid is not None:
                print(f"    first invalid: {first_invalid[:300]!r}")
    print(f"summary: {totals['valid']}/{totals['replies']} constrained replies valid, {totals['cut']} cut at max_tokens, "
          f"{totals['invalid']} invalid; free: {totals['free_valid']}/{totals['replies']} valid")  # fmt: skip
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
