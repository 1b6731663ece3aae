"""The README's llama.cpp instructions, run: the official openai SDK against `toolgram serve
--prompt FORMAT` in front of a real `llama-server`, whole and streamed.

    python benchmarks/serve_llama_cpp.py --llama-server PATH/TO/llama-server [--format hermes] [-n 5]

llama-server is llama.cpp's own server (built from llama.cpp's source: `cmake -B build
-DLLAMA_BUILD_SERVER=ON && cmake --build build --target llama-server`). No model is
downloaded: the tiny random-weight model of gbnf_llama_cpp.py is served, and each request
carries toolgram.constrain's GBNF for FORMAT (prose=False) in llama.cpp's `grammar` field
(`extra_body`), which toolgram serve passes through; so the model's noise has the form of
calls, and what is checked is the path: the request reaches llama-server, its raw text
comes back, toolgram reads the calls out of it, and the client gets them as `tool_calls`,
the same whole and streamed (but their ids: each response salts its own).

Printed: per request and mode, the finish reason and the calls the client assembled; a
summary. Exit status 1 when a reply has no call, a call is not of an offered tool, or the
streamed calls differ from the whole ones.
"""

from __future__ import annotations

import argparse
import json
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
if str(ROOT / "src") not in sys.path:
    sys.path.insert(0, str(ROOT / "src"))

import toolgram  # noqa: E402
from gbnf_llama_cpp import TOOLS, tiny_model  # noqa: E402


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait(url: str, proc: subprocess.Popen, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"{proc.args[0]} exited with {proc.returncode}")
        try:
            urllib.request.urlopen(url, timeout=1)
            return
        except OSError:
            time.sleep(0.2)
    raise SystemExit(f"{url} did not answer in {seconds} s")


def _is_object(text: str) -> bool:
    try:
        return isinstance(json.loads(text), dict)
    except ValueError:
        return False


def _streamed(client, **kw) -> tuple[str | None, list[tuple[str, str, str]]]:
    calls: dict[int, dict] = {}
    finish = None
    for chunk in client.chat.completions.create(stream=True, **kw):
        for choice in chunk.choices:
            for tc in choice.delta.tool_calls or []:
                c = calls.setdefault(tc.index, {"id": None, "name": "", "arguments": ""})
                c["id"] = tc.id or c["id"]
                if tc.function:
                    c["name"] += tc.function.name or ""
                    c["arguments"] += tc.function.arguments or ""
            finish = choice.finish_reason or finish
    return finish, [(c["id"], c["name"], c["arguments"]) for _, c in sorted(calls.items())]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--llama-server", required=True, help="path of llama.cpp's llama-server")
    ap.add_argument("--format", default="hermes")
    ap.add_argument("-n", type=int, default=5, help="requests (each whole and streamed)")
    args = ap.parse_args()

    import openai

    names = {t["name"] for t in TOOLS}
    tools = [{"type": "function", "function": t} for t in TOOLS]
    grammar = toolgram.constrain(TOOLS, args.format, engine="gbnf", prose=False, max_calls=2)
    bad = 0
    with tempfile.TemporaryDirectory() as tmp:
        model = Path(tmp) / "random-bytes.gguf"
        tiny_model(model, 1)
        lport, tport = _port(), _port()
        llama = subprocess.Popen(
            [args.llama_server, "-m", str(model), "--port", str(lport), "-c", "4096"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        serve = None
        try:
            _wait(f"http://127.0.0.1:{lport}/health", llama)
            serve = subprocess.Popen(
                [sys.executable, "-m", "toolgram", "serve", "--backend", f"http://127.0.0.1:{lport}",
                 "--port", str(tport), "--prompt", args.format],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            )  # fmt: skip
            _wait(f"http://127.0.0.1:{tport}/health", serve)
            client = openai.OpenAI(base_url=f"http://127.0.0.1:{tport}/v1", api_key="unused")
            models = [m.id for m in client.models.list()]
            print(f"llama-server models: {models}; toolgram serve --prompt {args.format} on port {tport}")
            for i in range(args.n):
                kw = dict(model="random-bytes", messages=[{"role": "user", "content": "What is the weather in Oslo?"}],
                          tools=tools, max_tokens=400, temperature=1.0, seed=i + 1, extra_body={"grammar": grammar})  # fmt: skip
                # (Seeds from 1: the two requests of one seed must get the same reply.)
                whole = client.chat.completions.create(**kw)
                message = whole.choices[0].message
                got = [(c.id, c.function.name, c.function.arguments) for c in message.tool_calls or []]
                finish, streamed = _streamed(client, **kw)
                problems = [
                    what for what, failed in (
                        ("no call", not got),
                        ("a call of no offered tool", any(name not in names for _, name, _ in got)),
                        ("arguments that are no JSON object", not all(_is_object(a) for _, _, a in got)),
                        ("streamed calls differ", [c[1:] for c in streamed] != [c[1:] for c in got]),
                        # (Two responses: each salts its generated ids, so no id may repeat.)
                        ("an id repeated across responses", bool({c[0] for c in streamed} & {c[0] for c in got})),
                        ("finish_reason", not whole.choices[0].finish_reason == finish == "tool_calls"),
                    ) if failed
                ]  # fmt: skip
                ok = not problems
                bad += not ok
                if [c[1:] for c in streamed] != [c[1:] for c in got]:
                    print(f"    whole:    {got}\n    streamed: {streamed}")
                print(f"request {i}: {'ok' if ok else 'FAILED: ' + ', '.join(problems)}; whole {whole.choices[0].finish_reason}, streamed {finish}; "
                      f"calls {[(name, args_[:60]) for _, name, args_ in got]}; toolgram extension "
                      f"{(message.model_extra or {}).get('toolgram')}")  # fmt: skip
        finally:
            for proc in (serve, llama):
                if proc is not None:
                    proc.terminate()
                    proc.wait(10)
    print(f"summary: {args.n - bad}/{args.n} requests gave offered calls, the same whole and streamed")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
