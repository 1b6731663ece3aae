"""A small OpenAI-compatible backend that replays captured model replies, for tests/test_serve.py
and benchmarks/serve.py. Run: python replay_backend.py PORT.

The last user message says what to reply, as JSON:
    {"case": "hermes/basic"}     tests/corpus/hermes/basic.txt, as the model's raw content
    {"text": "..."}              that text
and optionally "seed" (the chunking: pieces of 1-12 characters, as a server streams a few
tokens at a time), "chunk" (pieces of that many characters instead), "delay" (seconds before the reply and between chunks), "break_after"
(chunks sent before the stream breaks off, the connection dropped mid-body; as many as
there are or more: after the whole text, before the finish), "garble_after" (chunks sent
before a line that is no JSON), "status"
(an error status to answer with), "body" (a JSON body to answer with instead), "finish_reason",
"reasoning" (reasoning_content of the backend's own), "tool_calls" (calls the backend read
itself, as Ollama or vLLM with a tool parser give them; streamed: the name, then the
arguments in pieces). A message that is not such JSON is
answered with a Hermes call to the first tool offered, without arguments, or with "echo: "
and its text when there are no tools. GET /last gives the last request's body.
"""

from __future__ import annotations

import asyncio
import json
import random
import sys
import time
from pathlib import Path

import uvicorn
from starlette.applications import Starlette
from starlette.responses import JSONResponse, StreamingResponse
from starlette.routing import Route

CORPUS = Path(__file__).resolve().parent.parent / "corpus"
last: dict = {}


def pieces(text: str, seed: int, size: int | None = None) -> list[str]:
    rng = random.Random(seed)
    out, i = [], 0
    while i < len(text):
        n = size or rng.randint(1, 12)
        out.append(text[i : i + n])
        i += n
    return out


def directive(body: dict) -> dict:
    users = [m for m in body.get("messages", []) if m.get("role") == "user"]
    content = users[-1].get("content", "") if users else ""
    try:
        order = json.loads(content)
        if isinstance(order, dict):
            if "case" in order:
                order["text"] = (CORPUS / f"{order['case']}.txt").read_bytes().decode("utf-8")
            return order
    except (ValueError, TypeError):
        pass
    tools = body.get("tools") or []
    if tools:  # (a question in words, tools offered: a call to the first, as a Hermes model writes it)
        name = tools[0].get("function", {}).get("name", "tool")
        return {"text": f'<tool_call>\n{{"name": "{name}", "arguments": {{}}}}\n</tool_call>'}
    return {"text": f"echo: {content}"}


async def chat(request):
    body = await request.json()
    last.clear()
    last.update(body)
    order = directive(body)
    delay = float(order.get("delay", 0))
    if "body" in order:  # (a reply that is no chat completion)
        return JSONResponse(order["body"])
    if order.get("status"):
        return JSONResponse({"error": {"message": "replay backend: failing on request", "type": "server_error"}}, status_code=order["status"])
    text, model, created = order["text"], body.get("model", "replay"), int(time.time())
    finish = order.get("finish_reason", "stop")
    # (Reasoning the backend separated itself, as llama.cpp's --reasoning-format does.)
    reasoning = {"reasoning_content": order["reasoning"]} if order.get("reasoning") else {}
    calls = order.get("tool_calls") or []
    if not body.get("stream"):
        await asyncio.sleep(delay)
        own = {"tool_calls": calls} if calls else {}
        return JSONResponse({
            "id": "chatcmpl-replay", "object": "chat.completion", "created": created, "model": model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text or None, **reasoning, **own}, "finish_reason": finish}],
            "usage": {"prompt_tokens": 5, "completion_tokens": len(text) // 4, "total_tokens": 5 + len(text) // 4},
        })

    async def events():
        def chunk(delta, reason=None):
            return "data: " + json.dumps({
                "id": "chatcmpl-replay", "object": "chat.completion.chunk", "created": created, "model": model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": reason}],
            }) + "\n\n"

        await asyncio.sleep(delay)
        yield chunk({"role": "assistant", "content": ""})
        if reasoning:
            yield chunk(reasoning)
        parts = pieces(text, int(order.get("seed", 1)), order.get("chunk"))
        for i, piece in enumerate(parts):
            if order.get("break_after") is not None and i >= order["break_after"]:
                raise RuntimeError("replay backend: breaking the stream on request")
            if order.get("garble_after") is not None and i == order["garble_after"]:
                yield "data: {this is no JSON\n\n"
            if delay:
                await asyncio.sleep(delay)
            yield chunk({"content": piece})
        if order.get("break_after") is not None and order["break_after"] >= len(parts):
            raise RuntimeError("replay backend: breaking the stream before its finish, on request")
        for index, call in enumerate(calls):
            function = call["function"]
            yield chunk({"tool_calls": [{"index": index, "id": call.get("id"), "type": "function", "function": {"name": function["name"], "arguments": ""}}]})
            for piece in pieces(function["arguments"], index):
                yield chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
        yield chunk({}, finish)
        yield "data: [DONE]\n\n"

    return StreamingResponse(events(), media_type="text/event-stream")


async def models(request):
    return JSONResponse({"object": "list", "data": [{"id": "replay", "object": "model", "created": 0, "owned_by": "tests"}]})


async def last_request(request):
    return JSONResponse(last)


app = Starlette(routes=[
    Route("/v1/chat/completions", chat, methods=["POST"]),
    Route("/v1/models", models),
    Route("/last", last_request),
])

if __name__ == "__main__":
    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="critical")
