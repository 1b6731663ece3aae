"""`toolgram serve`: an OpenAI-compatible server in front of a backend that returns raw text.

    client (openai SDK, an agent) --/v1/chat/completions--> toolgram serve --> backend
                                   <-- tool_calls, streamed --               <-- raw text

The backend is any OpenAI-compatible server that writes the model's reply into `content`
without reading tool calls out of it (llama.cpp's server, vLLM or SGLang without a tool
parser, Ollama...). Each request is forwarded as it came (its tools with tool_choice
"none": the chat template shows them, the backend reads nothing), but for what is honoured here:
`tool_choice` ("none": the reply is not parsed; a named function: only that tool is
offered to the parser; "required", or a named function: a reply without a call gets an
error in the `toolgram` extension field) and `parallel_tool_calls` (false: the first call
only). With
`prompt=FORMAT` the tools are written into the system prompt (toolgram.prompts) instead
of being forwarded, for a backend whose chat template has none, and the history's calls
and results as text (history.py). Calls a backend read itself are passed on after those
read out of the content; its finish_reason "length" is kept (openai.completion). A
streamed reply is parsed in a worker thread (_Reading), never on the event loop.

Built on Starlette, uvicorn and httpx (the `serve` extra): imported only when serving.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import uuid
from typing import Any

import httpx
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from .. import parse
from .._grammar.compile import compile_now
from .._pipeline import check_truncated, select_formats
from .._result.model import ParseResult
from .._tools.prompts import render_prompt
from .._tools.tools import normalize_tools
from ..openai import _CUT, CompletionStream, _dropped_message, _new_id, completion
from .history import for_prompt

__all__ = ["create_app", "serve"]

# What toolgram honours itself, so not forwarded.
_HONOURED = ("tool_choice", "parallel_tool_calls")


class _JSONResponse(JSONResponse):
    """A JSON body that UTF-8 can always carry: a lone surrogate in a value (a reply cut
    between an emoji's two `\\uXXXX` escapes) is written as its escape, which JSON reads
    back as the same character; Starlette's own failed to encode it (a 500)."""

    def render(self, content: Any) -> bytes:
        return json.dumps(content, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "backslashreplace")


def error_response(status: int, message: str, kind: str, code: Any = None) -> JSONResponse:
    """An error in OpenAI's shape (the openai SDK raises it as APIStatusError with this message)."""
    return _JSONResponse({"error": {"message": message, "type": kind, "param": None, "code": code}}, status_code=status)


class _BackendError(Exception):
    """The backend could not be reached or failed: what to answer instead."""

    def __init__(self, status: int, message: str, kind: str = "backend_error") -> None:
        super().__init__(message)
        self.status, self.message, self.kind = status, message, kind

    def response(self) -> JSONResponse:
        return error_response(self.status, self.message, self.kind)


def backend_base(url: str) -> str:
    """`http://host:8080`, `http://host:8080/` and `http://host:8080/v1` all name the same backend."""
    url = url.rstrip("/")
    return url.removesuffix("/v1")


def create_app(
    backend: str,
    *,
    formats: Any = None,
    truncated: str = "repair",
    max_chars: int | None = None,
    arguments: str = "as_written",
    stream_arguments: bool = False,
    prompt: str | None = None,
    in_think: bool = False,
    api_key: str | None = None,
    backend_api_key: str | None = None,
    timeout: float = 600.0,
    transport: Any = None,
) -> Starlette:
    """The ASGI app. `backend`: the backend's URL; `formats`: the formats to read (None:
    all); `truncated`: parse()'s, for a call the end of the reply cut ("repair" or
    "error"); `max_chars`: parse()'s, None by default (a reply is read whole: a long
    write_file is not cut at 32 KB; the backend's max_tokens bounds it, and the cost is
    linear); `arguments`: streamed, CompletionStream's: "as_written" (the default: a call's
    name once certain, then its arguments as the model writes them, a call that then fails
    withdrawn in the extension field) or "whole" (each call in one chunk once certain);
    `stream_arguments`: accepted for compatibility and ignored (it asked for "as_written",
    now the default);
    `prompt`: a toolgram.prompts format to write the tools into the system prompt;
    `in_think`: parse()'s, the replies start inside a reasoning block the chat template
    opened (DeepSeek-R1, QwQ, Qwen3 thinking: the template writes `<think>`), so what comes
    before the closer is reasoning, sent as `reasoning_content`;
    `api_key`: the key clients must send (Authorization: Bearer); `backend_api_key`: the
    key sent to the backend; `timeout`: seconds to wait for the backend (connecting, and
    between two pieces of its reply)."""
    base = backend_base(backend)
    select_formats(formats)  # (an unknown format name fails now, not at the first request)
    check_truncated(truncated)
    if arguments not in ("as_written", "whole"):
        raise ValueError(f'arguments must be "as_written" or "whole", not {arguments!r}')
    if max_chars is not None and (not isinstance(max_chars, int) or max_chars < 1):
        raise ValueError(f"max_chars must be a positive number of characters or None, not {max_chars!r}")
    # (parse()'s options, and StreamParser's)
    reading = {"formats": formats, "truncated": truncated, "max_chars": max_chars, "in_think": bool(in_think)}
    if prompt is not None:
        render_prompt(["probe"], prompt)  # (an unknown format fails now, not at the first request)
    headers = {"Authorization": f"Bearer {backend_api_key}"} if backend_api_key else {}
    state: dict[str, httpx.AsyncClient] = {}

    def client() -> httpx.AsyncClient:
        if "client" not in state:
            state["client"] = httpx.AsyncClient(
                base_url=base, headers=headers, timeout=httpx.Timeout(timeout), transport=transport
            )
        return state["client"]

    def refused(request: Request) -> JSONResponse | None:
        if api_key is None or request.headers.get("authorization", "") == f"Bearer {api_key}":
            return None
        return error_response(401, "Incorrect API key provided.", "invalid_request_error", "invalid_api_key")

    async def health(request: Request) -> Response:
        return _JSONResponse({"status": "ok", "backend": base})

    async def models(request: Request) -> Response:
        denied = refused(request)
        if denied is not None:
            return denied
        try:
            reply = await _send(client(), "GET", "/v1/models", None)
            body = await _read(reply, client())
        except _BackendError as exc:
            return exc.response()
        return Response(body, status_code=reply.status_code, media_type="application/json")

    async def chat(request: Request) -> Response:
        denied = refused(request)
        if denied is not None:
            return denied
        try:
            body = await request.json()
        except (ValueError, UnicodeDecodeError):
            return error_response(400, "The request body is not valid JSON.", "invalid_request_error")
        if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
            return error_response(400, "'messages' is required: a list of messages.", "invalid_request_error")
        try:
            plan = _Plan(body, prompt, reading, arguments)
        except ValueError as exc:
            return error_response(400, str(exc), "invalid_request_error")
        if body.get("stream"):
            return await _stream(client(), plan)
        try:
            reply = await _send(client(), "POST", "/v1/chat/completions", plan.forward)
            data = json.loads(await _read(reply, client()))
            choice = data["choices"][0]
            message = choice.get("message") or {}
            content = message.get("content") or ""
            if not isinstance(content, str):
                raise TypeError("content is not text")
        except _BackendError as exc:
            return exc.response()
        except (ValueError, KeyError, IndexError, TypeError, AttributeError):
            return error_response(502, "The backend's reply is not a chat completion.", "backend_error")
        own = _backend_calls(message.get("tool_calls"))
        result = await run_in_threadpool(plan.read, content, bool(own))
        out = completion(
            result,
            model=data.get("model") or plan.model,
            id=plan.id,
            salt=plan.id,
            created=data.get("created"),
            finish_reason=choice.get("finish_reason"),
            usage=data.get("usage"),
            parallel_tool_calls=plan.parallel,
        )
        _add_reasoning(out["choices"][0]["message"], message.get("reasoning_content"))
        _add_calls(out["choices"][0], own, plan.parallel)
        return _JSONResponse(out)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> Any:
        # The grammars are compiled before the first request, not during it (a format's
        # grammar is otherwise built when a reply first shows it: up to ~0.4 s for all).
        await run_in_threadpool(_warm, formats)
        yield
        if "client" in state:
            await state.pop("client").aclose()

    async def http_error(request: Request, exc: Exception) -> Response:
        # (An unknown route or method in OpenAI's error shape, as the rest, not Starlette's plain text.)
        status = getattr(exc, "status_code", 500)
        if status == 404:
            message = f"Invalid URL ({request.method} {request.url.path})."
        elif status == 405:
            message = f"Method {request.method} is not allowed for {request.url.path}."
        else:
            message = str(getattr(exc, "detail", "") or exc)
        response = error_response(status, message, "invalid_request_error")
        response.headers.update(getattr(exc, "headers", None) or {})  # (405's Allow)
        return response

    return Starlette(
        exception_handlers={HTTPException: http_error},
        routes=[
            Route("/health", health, methods=["GET"]),
            Route("/v1/models", models, methods=["GET"]),
            Route("/v1/chat/completions", chat, methods=["POST"]),
        ],
        lifespan=lifespan,
    )


class _Plan:
    """What one request asks of toolgram: the tools to parse with, whether to parse at all,
    parallel calls, and the request to forward."""

    def __init__(self, body: dict[str, Any], prompt: str | None, reading: dict[str, Any], arguments: str) -> None:
        self.arguments = arguments  # (CompletionStream's, when streamed)
        tools = body.get("tools")
        choice = body.get("tool_choice")
        if tools is not None and not isinstance(tools, list):
            raise ValueError("'tools' must be a list of tools.")
        tools = tools or None
        if choice is not None and choice not in ("none", "auto", "required") and not isinstance(choice, dict):
            raise ValueError(f"'tool_choice' must be \"none\", \"auto\", \"required\" or a function, not {choice!r}.")
        # (Types checked, not values: 1 == True and 1.0 == 1 in Python, not in JSON.)
        for key in ("stream", "parallel_tool_calls"):
            if body.get(key) is not None and type(body[key]) is not bool:
                raise ValueError(f"'{key}' must be true or false, not {body[key]!r}.")
        if body.get("n") is not None and (type(body["n"]) is not int or body["n"] != 1):
            # (Each choice would need its own reading; the backend's others were dropped.)
            raise ValueError("toolgram serve reads one choice a request: 'n' must be 1.")
        self.model = body.get("model") or ""
        # The response's id, toolgram's own rather than the backend's (which may repeat: a
        # server that numbers its replies from 0 at each start, a replay), and the salt of the
        # calls' generated ids: without it two replies that open with the same call would
        # give it the same id, and an agent keying tool results by id would mix them up.
        self.id = _new_id()
        self.parallel = body.get("parallel_tool_calls") is not False
        self.parse = tools is not None and choice != "none"
        self.tools = tools
        # A reply not parsed for calls (no tools, tool_choice "none") still has its
        # reasoning read (no formats: no calls), so that reasoning is reasoning_content
        # with or without tools.
        self.reading = reading if self.parse else {**reading, "formats": ()}
        # OpenAI's "required" (and a named function) means the reply must call a tool. The
        # backend is not asked to force it (it is sent "none", as below: a backend with a tool
        # parser of its own, told "required", reads the calls itself, or constrains the reply to
        # its own JSON shape, and toolgram sees no content); a reply without a call says so in
        # an error instead of passing for a normal answer (see no_call).
        self.required: str | None = None
        if choice == "required":
            if not tools:
                raise ValueError("tool_choice is \"required\" but the request has no 'tools'.")
            self.required = 'tool_choice is "required", but the reply has no tool call.'
        if isinstance(choice, dict):  # {"type": "function", "function": {"name": ...}}
            function = choice.get("function")
            name = function.get("name") if isinstance(function, dict) else None
            self.tools = [t for t in tools or [] if _tool_name(t) == name]
            if not self.tools:
                raise ValueError(f"tool_choice names a function that is not in 'tools': {name!r}")
            self.required = f"tool_choice names the function {name!r}, but the reply has no call of it."
        if self.parse:
            try:
                normalize_tools(self.tools)
            except (TypeError, ValueError) as exc:
                raise ValueError(f"'tools' cannot be read: {exc}") from None
        forward = {k: v for k, v in body.items() if k not in _HONOURED}
        if not self.parse or prompt is not None:
            forward.pop("tools", None)
        elif forward.get("tools"):
            # The backend's chat template shows the model the tools; "none" keeps the backend's
            # own tool parser, if it has one, off (vLLM refuses "auto" without one).
            forward["tool_choice"] = "none"
        if prompt is not None:  # (the template has no tools: the history's calls and results as text too)
            system = render_prompt(self.tools, prompt) if self.parse else None
            forward["messages"] = for_prompt(list(body["messages"]), prompt, system)
        self.forward = forward

    def read(self, content: str, backend_calls: bool = False) -> ParseResult:
        """`content` read; `backend_calls`: the backend gave calls of its own (no
        "required" error then)."""
        result = parse(content, self.tools if self.parse else None, **self.reading)
        error = None if backend_calls else self.no_call(result)
        if error:
            result.errors.append(error)
        return result

    def no_call(self, result: ParseResult) -> str | None:
        """The error of a reply that had to call a tool and did not (tool_choice "required"
        or a named function); None otherwise."""
        return self.required if self.required and self.parse and not result.calls else None

    def stream(self, model: str, created: int | None) -> Any:
        stream = CompletionStream(
            self.tools if self.parse else None, model=model, id=self.id, created=created, parallel_tool_calls=self.parallel,
            salt=self.id, arguments=self.arguments, **self.reading,
        )
        return _Adapter(stream, self)


def _warm(formats: Any) -> None:
    for fmt in select_formats(formats):
        try:
            compile_now(fmt)
        except Exception:  # noqa: BLE001 - a broken grammar says so when a reply meets it
            continue


def _tool_name(tool: Any) -> Any:
    if isinstance(tool, dict):
        inner = tool.get("function") if isinstance(tool.get("function"), dict) else tool
        return inner.get("name")
    return tool


def _backend_calls(raw: Any) -> list[dict[str, Any]]:
    """The tool calls a backend read itself (Ollama, vLLM with a tool parser), in OpenAI's
    shape: they are calls the model made, passed on after those read out of the content
    (a tool parser leaves the text before the calls in `content`). An id is made for one
    without; arguments given as an object (Ollama's own API) are written as JSON."""
    out = []
    for call in raw if isinstance(raw, list) else []:
        function = call.get("function") if isinstance(call, dict) else None
        name = function.get("name") if isinstance(function, dict) else None
        if not isinstance(name, str) or not name:
            continue
        arguments = function.get("arguments")
        if not isinstance(arguments, str):
            arguments = json.dumps({} if arguments is None else arguments, ensure_ascii=False)
        ident = call.get("id") if isinstance(call.get("id"), str) and call.get("id") else "call_" + uuid.uuid4().hex[:24]
        out.append({"id": ident, "type": "function", "function": {"name": name, "arguments": arguments}})
    return out


def _add_calls(choice: dict[str, Any], calls: list[dict[str, Any]], parallel: bool) -> None:
    """The backend's own calls after the message's (parallel_tool_calls false: the first
    call of all only); finish_reason "tool_calls" then, unless the reply was cut."""
    if not calls:
        return
    message = choice["message"]
    mine = message.get("tool_calls") or []
    if not parallel:
        dropped = len(calls) - (0 if mine else 1)
        calls = [] if mine else calls[:1]
        if dropped:
            extension = message.setdefault("toolgram", {})
            errors = extension.setdefault("errors", [])
            if mine:  # (the message's own drop error counted only its calls)
                errors[:] = [e for e in errors if not e.startswith("parallel_tool_calls is false")]
                dropped += len(mine) - 1
            errors.append(_dropped_message(dropped))
    if calls:
        message["tool_calls"] = [*mine, *calls]
        if choice["finish_reason"] not in _CUT:
            choice["finish_reason"] = "tool_calls"


def _add_reasoning(message: dict[str, Any], backend_reasoning: Any) -> None:
    """Reasoning the backend separated itself (llama.cpp's --reasoning-format) comes first."""
    if isinstance(backend_reasoning, str) and backend_reasoning:
        own = message.get("reasoning_content", "")
        message["reasoning_content"] = backend_reasoning + ("\n\n" + own if own else "")


async def _send(client: httpx.AsyncClient, method: str, path: str, body: Any) -> httpx.Response:
    """Send a request to the backend, streaming its reply; backend failures as _BackendError.
    A reply of status >= 400 is read and closed, and its message passed on."""
    try:
        # (The body written by us, \uXXXX escapes for what is not ASCII: a lone surrogate in
        # a message, a value a client sends back from an earlier reply, cannot be UTF-8.)
        content = None if body is None else json.dumps(body, separators=(",", ":")).encode("ascii")
        headers = None if body is None else {"Content-Type": "application/json"}
        reply = await client.send(client.build_request(method, path, content=content, headers=headers), stream=True)
    except httpx.TimeoutException:
        raise _BackendError(504, f"The backend at {client.base_url} did not answer in time.", "backend_timeout") from None
    except httpx.HTTPError as exc:
        raise _BackendError(502, f"The backend at {client.base_url} cannot be reached: {exc or type(exc).__name__}.") from None
    if reply.status_code >= 400:
        try:
            raw = await reply.aread()
        except httpx.HTTPError:
            raw = b""
        finally:
            await reply.aclose()
        # A client's mistake (4xx) keeps its status; the backend's own failure is a bad gateway.
        status = reply.status_code if reply.status_code < 500 else 502
        raise _BackendError(status, f"The backend answered {reply.status_code}: {_message_of(raw)}")
    return reply


async def _read(reply: httpx.Response, client: httpx.AsyncClient) -> bytes:
    """The whole body of a reply _send opened; a body that stalls or breaks off as _BackendError."""
    try:
        return await reply.aread()
    except httpx.TimeoutException:
        raise _BackendError(504, f"The backend at {client.base_url} stopped answering.", "backend_timeout") from None
    except httpx.HTTPError as exc:
        raise _BackendError(502, f"The backend's reply broke off: {exc or type(exc).__name__}.") from None
    finally:
        await reply.aclose()


def _message_of(raw: bytes) -> str:
    try:
        data = json.loads(raw)
        error = data.get("error", data) if isinstance(data, dict) else data
        message = error.get("message") if isinstance(error, dict) else error
        if message:
            return str(message)
    except ValueError:
        pass
    return raw.decode("utf-8", "replace").strip()[:500] or "(no message)"


async def _stream(client: httpx.AsyncClient, plan: _Plan) -> Response:
    """A streamed reply: the backend's stream is opened first, so that a backend that is down
    or refuses is an error status; then its events are read here and parsed in a worker
    thread (_Reading), off the event loop: a reply that is slow to parse (a marker storm)
    costs its own request's time, not every other client's. While the worker reads one
    batch the next events queue up, and are read together, in order."""
    try:
        reply = await _send(client, "POST", "/v1/chat/completions", plan.forward)
        # A backend that ignores `stream` answers one whole JSON chat.completion: that is the
        # whole reply, streamed out as one chunk of the backend's would be.
        whole = None if _is_sse(reply) else _as_chunk(await _read(reply, client))
    except _BackendError as exc:
        return exc.response()
    except (ValueError, KeyError, IndexError, TypeError, AttributeError):
        return error_response(502, "The backend's reply is not a chat completion.", "backend_error")

    async def events() -> Any:
        queue: asyncio.Queue[Any] = asyncio.Queue()
        if whole is None:
            pump = asyncio.ensure_future(_pump(reply, queue))
        else:
            pump = asyncio.ensure_future(asyncio.sleep(0))
            for item in (whole, "[DONE]"):
                queue.put_nowait(item)
        reading = _Reading(plan)
        try:
            while not reading.finished:
                batch = [await queue.get()]
                while not queue.empty():
                    batch.append(queue.get_nowait())
                out = await run_in_threadpool(reading.take, batch)
                if out:  # (one write for what one batch gives)
                    yield out
        finally:
            pump.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await pump
            await reply.aclose()

    return StreamingResponse(events(), media_type="text/event-stream", headers={"Cache-Control": "no-cache"})


_END = object()  # (the backend's body ended)


def _is_sse(reply: httpx.Response) -> bool:
    """Whether a reply to a streamed request is a stream (not one whole JSON body: a
    backend that ignores `stream`). A reply that does not say its type is taken as a stream."""
    kind = reply.headers.get("content-type", "").split(";")[0].strip().lower()
    return not (kind == "application/json" or kind.endswith("+json"))


def _as_chunk(raw: bytes) -> str:
    """A whole chat.completion as the payload of one chunk of a stream (its message as the
    delta); raises ValueError, KeyError, … for a body that is not a chat completion."""
    data = json.loads(raw)
    choice = data["choices"][0]
    message = choice.get("message") or {}
    content = message.get("content") or ""
    if not isinstance(content, str):
        raise TypeError("content is not text")
    delta: dict[str, Any] = {"role": "assistant", "content": content}
    if message.get("reasoning_content"):
        delta["reasoning_content"] = message["reasoning_content"]
    if message.get("tool_calls"):  # (calls the backend read itself, indexed as a stream's)
        delta["tool_calls"] = [{"index": i, **c} for i, c in enumerate(message["tool_calls"]) if isinstance(c, dict)]
    chunk = {
        "id": data.get("id"),
        "object": "chat.completion.chunk",
        "created": data.get("created"),
        "model": data.get("model"),
        "choices": [{"index": 0, "delta": delta, "finish_reason": choice.get("finish_reason") or "stop"}],
    }
    if data.get("usage") is not None:
        chunk["usage"] = data["usage"]
    return json.dumps(chunk, ensure_ascii=False)


async def _pump(reply: httpx.Response, queue: asyncio.Queue[Any]) -> None:
    """The backend's SSE `data:` payloads into `queue`, then _END, or the exception that
    broke the body off. (Only the lines are split here: the JSON is read in the worker.)"""
    try:
        async for line in reply.aiter_lines():
            if line.startswith("data:"):  # (not SSE comments, event names, blank separators)
                queue.put_nowait(line[5:].strip())
        queue.put_nowait(_END)
    except httpx.HTTPError as exc:
        queue.put_nowait(exc)


class _Reading:
    """One streamed reply's backend events to the SSE bytes sent to the client; runs in a
    worker thread, one batch at a time. `finished` once the answer is complete (the
    backend's [DONE] or end, an error)."""

    def __init__(self, plan: _Plan) -> None:
        self.plan = plan
        self.adapter: _Adapter | None = None
        self.reason: str | None = None
        self.usage: Any = None
        self.finished = False

    def take(self, batch: list[Any]) -> bytes:
        out: list[bytes] = []
        for item in batch:
            if self.finished:
                break
            try:
                self._one(item, out)
            except httpx.TimeoutException:
                self._fail(out, "The backend's stream stalled: nothing came in time.", "backend_timeout")
            except (httpx.HTTPError, ValueError, TypeError, AttributeError) as exc:
                self._fail(out, f"The backend's stream broke off: {exc or type(exc).__name__}.", "backend_error")
        return b"".join(out)

    def _one(self, item: Any, out: list[bytes]) -> None:
        if isinstance(item, Exception):
            raise item
        if item is _END:
            if self.reason is None:  # (the body ended with neither [DONE] nor a finish_reason: cut)
                raise ValueError("the stream ended before the reply did")
            return self._close(out)
        if item == "[DONE]":
            return self._close(out)
        chunk = json.loads(item)
        if not isinstance(chunk, dict):
            raise TypeError("a stream event is not an object")
        if chunk.get("error"):
            return self._fail(out, f"The backend failed: {_message_of(item.encode())}", "backend_error")
        if self.adapter is None:
            self.adapter = self.plan.stream(chunk.get("model") or self.plan.model, chunk.get("created"))
        self.usage = chunk.get("usage") or self.usage
        for choice in chunk.get("choices") or []:
            delta = choice.get("delta") or {}
            self.reason = choice.get("finish_reason") or self.reason
            if delta.get("reasoning_content"):
                out.extend(map(_sse, self.adapter.reasoning(delta["reasoning_content"])))
            if delta.get("content"):
                out.extend(map(_sse, self.adapter.feed(delta["content"])))
            if delta.get("tool_calls"):
                self.adapter.backend_calls(delta["tool_calls"])

    def _fail(self, out: list[bytes], message: str, kind: str) -> None:
        """The stream ends in an error event (the openai SDK raises it as APIError), after
        what the text received so far settles: nothing the model wrote is lost. The reply is
        read as ending where it broke (the parser flushed): its prose, its complete calls
        as calls, and a call the break cut as its text with its error (not repaired into a
        call: the network cut it, not the model)."""
        if self.adapter is not None:
            out.extend(map(_sse, self.adapter.broken()))
        out.append(_sse({"error": {"message": message, "type": kind, "param": None, "code": None}}))
        self.finished = True

    def _close(self, out: list[bytes]) -> None:
        self.finished = True
        adapter = self.adapter or self.plan.stream(self.plan.model, None)
        last = adapter.close(self.reason)
        out.extend(map(_sse, last))
        if self.usage is not None and last:
            out.append(_sse({**{k: last[-1][k] for k in ("id", "object", "created", "model")}, "choices": [], "usage": self.usage}))
        out.append(b"data: [DONE]\n\n")


def _sse(value: dict[str, Any]) -> bytes:
    # (backslashreplace: a lone surrogate is written as its JSON escape; see _JSONResponse.)
    return f"data: {json.dumps(value, ensure_ascii=False)}\n\n".encode("utf-8", "backslashreplace")


class _Adapter:
    """The backend's deltas to chunks: content through CompletionStream (with no formats
    when not parsed for calls: tool_choice "none", no tools); reasoning the backend
    separated itself as it is; the backend's own calls at the end."""

    def __init__(self, stream: CompletionStream, plan: _Plan) -> None:
        self._stream = stream
        self._plan = plan
        self._backend_reasoning = False  # (the backend sent reasoning of its own)
        self._own_reasoning = False  # (reasoning read out of the content was sent)
        self._next = 0  # the index after the highest given to a call
        self._backend: dict[str, dict[str, Any]] = {}  # the backend's own calls, by its index
        self._received: list[str] = []  # the content fed (see broken)

    def feed(self, text: str) -> list[dict[str, Any]]:
        self._received.append(text)
        return self._indexes(self._apart(self._stream.feed(text)))

    @property
    def _text(self) -> str:
        """The content received so far (joined when a broken stream needs it)."""
        if len(self._received) > 1:
            self._received[:] = ["".join(self._received)]
        return self._received[0] if self._received else ""

    def backend_calls(self, deltas: Any) -> None:
        """A backend's own tool_calls deltas, put together by their index; sent whole at
        the end, after the calls read out of the content (their indexes follow)."""
        for delta in deltas if isinstance(deltas, list) else []:
            if not isinstance(delta, dict):
                continue
            key = repr(delta.get("index", 0))  # (whatever it is: a key)
            call = self._backend.setdefault(key, {"id": None, "function": {"name": "", "arguments": ""}})
            call["id"] = call["id"] or delta.get("id")
            function = delta.get("function") or {}
            for key in ("name", "arguments"):
                piece = function.get(key)
                if isinstance(piece, str):
                    call["function"][key] += piece
                elif piece is not None:  # (arguments as an object)
                    call["function"][key] += json.dumps(piece, ensure_ascii=False)

    def _indexes(self, chunks: list[dict[str, Any]]) -> list[dict[str, Any]]:
        for chunk in chunks:
            for entry in (chunk["choices"][0]["delta"].get("tool_calls") or []) if chunk.get("choices") else []:
                self._next = max(self._next, entry["index"] + 1)
        return chunks

    def reasoning(self, text: str) -> list[dict[str, Any]]:
        self._backend_reasoning = True
        return [self._stream._chunk({"reasoning_content": text})]

    def _apart(self, chunks: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The content's reasoning a blank line after the backend's, as a whole response
        joins them (_add_reasoning)."""
        if self._own_reasoning:
            return chunks
        for chunk in chunks:
            delta = chunk["choices"][0]["delta"] if chunk.get("choices") else {}
            if delta.get("reasoning_content"):
                self._own_reasoning = True
                if self._backend_reasoning:
                    delta["reasoning_content"] = "\n\n" + delta["reasoning_content"]
                break
        return chunks

    def close(self, finish_reason: str | None = None) -> list[dict[str, Any]]:
        stream = self._stream
        chunks = self._indexes(self._apart(stream.close(finish_reason)))
        own = _backend_calls(list(self._backend.values()))  # (in the order the backend began them)
        error = self._plan.no_call(stream.result) if stream.result is not None and not own else None
        if own and chunks:
            self._send_calls(own, chunks)
        if error and chunks:  # (before the finish chunk, as the stream's own errors come)
            stream.result.errors.append(error)
            chunks.insert(len(chunks) - 1, stream._chunk({"toolgram": {"errors": [error]}}))
        return chunks

    def broken(self) -> list[dict[str, Any]]:
        """The backend's stream broke off: the chunks of what the text received settles,
        without a finish chunk (an error event follows). A call the break cut is an error,
        as truncated="error" has it, and its text is sent as content before that error
        (parse() keeps such text as the error's segment, which a chunk cannot carry)."""
        stream = self._stream
        if stream.result is not None:
            return []
        stream._parser._cut_by_transport()  # (only the end cuts a call: read at the flush)
        chunks = self._indexes(self._apart(stream._chunks(stream._parser.flush())))
        stream.result = result = stream._parser.close()
        cut = [s for s in result.segments if s.kind == "error" and s.end == len(self._text) and s.end > s.start]
        if cut:
            text = self._text[cut[-1].start : cut[-1].end]
            at = max((i for i, c in enumerate(chunks) if "errors" in c["choices"][0]["delta"].get("toolgram", {})), default=len(chunks))
            chunks.insert(at, stream._chunk({"content": text}))
        if stream._dropped:
            chunks.append(stream._chunk({"toolgram": {"errors": [_dropped_message(stream._dropped)]}}))
        return chunks

    def _send_calls(self, calls: list[dict[str, Any]], chunks: list[dict[str, Any]]) -> None:
        """The backend's own calls, each whole in a chunk before the finish chunk."""
        stream = self._stream
        if not stream._parallel:
            dropped = len(calls) - (0 if stream._calls else 1)
            calls = calls[:1] if not stream._calls else []
            if dropped:
                chunks.insert(len(chunks) - 1, stream._chunk({"toolgram": {"errors": [_dropped_message(dropped)]}}))
        for call in calls:
            chunks.insert(len(chunks) - 1, stream._chunk({"tool_calls": [{"index": self._next, **call}]}))
            self._next += 1
        finish = chunks[-1]["choices"][0]
        if calls and finish["finish_reason"] not in _CUT:
            finish["finish_reason"] = "tool_calls"


def serve(backend: str, *, host: str = "127.0.0.1", port: int = 8000, log_level: str = "warning", **options: Any) -> None:
    """Run the server until interrupted (uvicorn)."""
    import uvicorn

    uvicorn.run(create_app(backend, **options), host=host, port=port, log_level=log_level)

