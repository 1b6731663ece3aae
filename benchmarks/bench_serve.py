"""`toolgram serve`'s own cost: the same requests sent to the backend directly and through
the proxy, per request and per streamed chunk.

    python benchmarks/bench_serve.py                 # 200 requests of each kind
    python benchmarks/bench_serve.py --requests 50

Starts tests/serve/replay_backend.py (a small OpenAI-compatible server replaying a reply)
and `toolgram serve` in front of it, both on localhost, then sends each request with httpx
(one connection kept open, as an SDK does), alternating direct and proxied ones so both
meet the same machine load. The reply is a Hermes reply of prose and two tool calls,
streamed in pieces of 1-12 characters. It prints the median wall time of each kind and the
difference: what the proxy adds (forwarding, reading SSE, StreamParser, writing chunks).
Needs the `serve` extra.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
REPLY = (
    "Let me check both for you. " * 8
    + '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Lisbon", "unit": "celsius"}}\n</tool_call>\n'
    + '<tool_call>\n{"name": "search_web", "arguments": {"query": "Lisbon trams timetable"}}\n</tool_call>'
)
TOOLS = [
    {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}},
    {"type": "function", "function": {"name": "search_web", "parameters": {"type": "object", "properties": {"query": {"type": "string"}}}}},
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(args: list[str], port: int) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    proc = subprocess.Popen([sys.executable, *args], env=env)
    for _ in range(600):
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.1):
                return proc
        except OSError:
            time.sleep(0.05)
    proc.kill()
    raise SystemExit(f"{args} did not start")


def one(client: httpx.Client, url: str, stream: bool) -> tuple[float, int]:
    """Seconds for the whole reply, and the chunks received."""
    body = {"model": "replay", "messages": [{"role": "user", "content": json.dumps({"text": REPLY})}], "tools": TOOLS, "stream": stream}
    began = time.perf_counter()
    if not stream:
        reply = client.post(url + "/v1/chat/completions", json=body)
        reply.raise_for_status()
        return time.perf_counter() - began, 0
    chunks = 0
    with client.stream("POST", url + "/v1/chat/completions", json=body) as reply:
        reply.raise_for_status()
        for line in reply.iter_lines():
            chunks += line.startswith("data: {")
    return time.perf_counter() - began, chunks


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=200)
    args = parser.parse_args()
    backend_port, proxy_port = free_port(), free_port()
    backend = start([str(ROOT / "tests" / "serve" / "replay_backend.py"), str(backend_port)], backend_port)
    direct = f"http://127.0.0.1:{backend_port}"
    proxy_proc = start(["-m", "toolgram", "serve", "--backend", direct, "--port", str(proxy_port)], proxy_port)
    proxied = f"http://127.0.0.1:{proxy_port}"
    try:
        with httpx.Client(timeout=60) as client:
            for stream in (False, True):
                for url in (direct, proxied):  # (warm up: imports, the first parse, connections)
                    one(client, url, stream)
                times: dict[str, list[float]] = {direct: [], proxied: []}
                chunks: dict[str, int] = {}
                for _ in range(args.requests):
                    for url in (direct, proxied):
                        seconds, n = one(client, url, stream)
                        times[url].append(seconds)
                        chunks[url] = n
                d, p = statistics.median(times[direct]), statistics.median(times[proxied])
                mode = "streamed" if stream else "whole"
                print(f"{mode:8}  direct {d * 1e3:7.2f} ms   through toolgram serve {p * 1e3:7.2f} ms   added {(p - d) * 1e3:6.2f} ms/request")
                if stream:
                    print(
                        f"{'':8}  chunks: backend {chunks[direct]}, proxy {chunks[proxied]};"
                        f" added {(p - d) / max(chunks[direct], 1) * 1e6:6.1f} µs per backend chunk"
                    )
    finally:
        for proc in (proxy_proc, backend):
            proc.terminate()
            proc.wait(10)


if __name__ == "__main__":
    main()
