"""`toolgram serve` with real parts: the official openai SDK as the client, `toolgram serve`
started as a process on localhost, in front of a real HTTP backend (tests/serve/
replay_backend.py) that replays the corpus' captured replies, streamed in pieces of 1-12
characters.

What a client gets equals completion(parse(reply, tools)): whole and streamed, for every
corpus case with a tools file, streamed by default with arguments as written (calls the
extension field withdraws aside), and with --whole-arguments (the opt-out) for a case of
every format; and tool_choice, parallel_tool_calls, an unknown tool's error, a backend
that is down, slow, failing or breaking off its stream.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import pytest

openai = pytest.importorskip("openai")
httpx = pytest.importorskip("httpx")
pytest.importorskip("starlette")
pytest.importorskip("uvicorn")

from conftest import corpus_cases

import toolgram
from toolgram.openai import completion

HERE = Path(__file__).resolve().parent
SRC = HERE.parent / "src"
SERVE_TIMEOUT = 3.0  # seconds toolgram serve waits for the backend in these tests

# The cases a request can ask for: tools offered, default options (one case per format at least).
CASES = [c for c in corpus_cases() if c.tools is not None and c.formats is None and not c.in_think and c.truncated == "repair"]
TOOLS = [
    {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}},
    {"type": "function", "function": {"name": "search_web", "parameters": {"type": "object", "properties": {"query": {"type": "string"}}}}},
]
TWO_CALLS = (
    'Both.<tool_call>{"name": "get_weather", "arguments": {"city": "Lima"}}</tool_call>'
    '<tool_call>{"name": "search_web", "arguments": {"query": "Lima museums"}}</tool_call>'
)


def openai_tools(tools: list[Any]) -> list[dict[str, Any]]:
    """A corpus tools file as a request's `tools` (names become functions without parameters)."""
    out = []
    for t in tools:
        if isinstance(t, str):
            out.append({"type": "function", "function": {"name": t, "parameters": {"type": "object", "properties": {}}}})
        elif "function" in t:
            out.append(t)
        else:
            out.append({"type": "function", "function": t})
    return out


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(args: list[str], port: int) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")])}
    # (stderr to a file, not a pipe nobody reads: a server that logs much would block on it)
    log = tempfile.TemporaryFile()  # noqa: SIM115 - open while the server runs
    proc = subprocess.Popen([sys.executable, *args], env=env, stdout=subprocess.DEVNULL, stderr=log)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            log.seek(0)
            raise RuntimeError(f"{args} exited: {log.read().decode()}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return proc
        except OSError:
            time.sleep(0.05)
    proc.kill()
    raise RuntimeError(f"{args} did not start listening")


def stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@pytest.fixture(scope="module")
def backend():
    port = free_port()
    proc = start([str(HERE / "serve" / "replay_backend.py"), str(port)], port)
    yield f"http://127.0.0.1:{port}"
    stop(proc)


def serve(backend_url: str, *extra: str):
    port = free_port()
    args = ["-m", "toolgram", "serve", "--backend", backend_url, "--port", str(port), "--timeout", str(SERVE_TIMEOUT), *extra]
    return start(args, port), f"http://127.0.0.1:{port}"


@pytest.fixture(scope="module")
def client(backend):
    """A client of `toolgram serve` as it starts by default: streamed, arguments as written."""
    proc, url = serve(backend + "/v1")
    yield openai.OpenAI(base_url=url + "/v1", api_key="unused", max_retries=0, timeout=30)
    stop(proc)


@pytest.fixture(scope="module")
def whole_client(backend):
    """A client of `toolgram serve --whole-arguments` (the opt-out): each call whole, once certain."""
    proc, url = serve(backend + "/v1", "--whole-arguments")
    yield openai.OpenAI(base_url=url + "/v1", api_key="unused", max_retries=0, timeout=30)
    stop(proc)


def ask(client: Any, order: dict[str, Any], tools: Any = TOOLS, **kw: Any) -> Any:
    return client.chat.completions.create(
        model="replay", messages=[{"role": "user", "content": json.dumps(order)}], tools=tools, **kw
    )


def streamed(client: Any, order: dict[str, Any], tools: Any = TOOLS, **kw: Any) -> dict[str, Any]:
    """The stream's chunks assembled as a client does, asserting the adapter's contract."""
    content, reasoning, errors, repairs, finish = [], [], [], [], []
    calls: dict[int, dict[str, Any]] = {}
    withdrawn: dict[int, dict[str, Any]] = {}  # (by default: calls sent by name, then withdrawn)
    ids = set()
    for chunk in ask(client, order, tools, stream=True, **kw):
        ids.add(chunk.id)
        if not chunk.choices:
            continue
        choice = chunk.choices[0]
        finish.append(choice.finish_reason)
        delta = choice.delta
        content.append(delta.content or "")
        reasoning.append((delta.model_extra or {}).get("reasoning_content") or "")
        extension = (delta.model_extra or {}).get("toolgram") or {}
        errors += extension.get("errors", [])
        repairs += extension.get("repairs", [])
        for entry in extension.get("withdrawn", []):
            assert entry["index"] in calls and entry["id"] == calls[entry["index"]]["id"] and entry["error"]
            withdrawn[entry["index"]] = entry
        for entry in delta.tool_calls or []:
            assert entry.index not in withdrawn, "a withdrawn call got more"
            if entry.index not in calls:  # (its first delta: index, id and name, once)
                assert entry.index == len(calls), "call indexes come in order, from 0"
                assert entry.id and entry.function.name
                calls[entry.index] = {"id": entry.id, "type": "function", "function": {"name": entry.function.name, "arguments": ""}}
            else:
                assert entry.id is None and entry.function.name is None, "a call's id or name sent twice"
            calls[entry.index]["function"]["arguments"] += entry.function.arguments or ""
    assert len(ids) == 1 and finish[-1] is not None and all(f is None for f in finish[:-1])
    kept = [i for i in range(len(calls)) if i not in withdrawn]
    for index in withdrawn:  # (never a JSON object a client that ignores the extension could run)
        with pytest.raises(ValueError):
            json.loads(calls[index]["function"]["arguments"])
    if finish[-1] not in ("length", "content_filter"):  # ("tool_calls" only when some call completed)
        assert (finish[-1] == "tool_calls") == bool(kept)
    place = {index: n for n, index in enumerate(kept)}  # (a withdrawn call's index is not given again)
    out = {
        "id": ids.pop(),
        "content": "".join(content),
        "reasoning": "".join(reasoning),
        "tool_calls": [calls[i] for i in kept],
        "errors": errors,
        "repairs": [{**r, "index": place[r["index"]]} for r in repairs],
        "finish_reason": finish[-1],
    }
    if withdrawn:
        out["withdrawn"] = withdrawn
    return out


def sdk_final(client: Any, order: dict[str, Any]) -> Any:
    """The completion the openai SDK's own stream accumulator builds (`.stream()`)."""
    with client.chat.completions.stream(
        model="replay", messages=[{"role": "user", "content": json.dumps(order)}], tools=TOOLS
    ) as stream:
        for _ in stream:
            pass
        return stream.get_final_completion()


def whole(response: Any) -> dict[str, Any]:
    choice = response.choices[0]
    msg = choice.message
    extension = (msg.model_extra or {}).get("toolgram") or {}
    return {
        "id": response.id,
        "content": msg.content or "",
        "reasoning": (msg.model_extra or {}).get("reasoning_content") or "",
        "tool_calls": [c.model_dump(exclude_none=True) for c in msg.tool_calls or []],
        "errors": extension.get("errors", []),
        "repairs": extension.get("repairs", []),
        "finish_reason": choice.finish_reason,
    }


def expected(
    raw: str, tools: Any, got: dict[str, Any], *, streamed: bool = False, truncated: str = "repair", **kw: Any
) -> dict[str, Any]:
    """What `got` (whole() or streamed()) should be: completion(parse(raw, tools)), its call
    ids salted with the response's id, as serve salts them."""
    result = toolgram.parse(raw, tools, truncated=truncated)
    choice = completion(result, salt=got["id"], **kw)["choices"][0]
    msg = choice["message"]
    extension = msg.get("toolgram", {})
    return {
        "id": got["id"],
        "content": result.text if streamed else (msg["content"] or ""),
        "reasoning": msg.get("reasoning_content", ""),
        "tool_calls": msg.get("tool_calls", []),
        "errors": extension.get("errors", []),
        "repairs": extension.get("repairs", []),
        "finish_reason": choice["finish_reason"],
    }


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_every_corpus_case_in_both_modes(client, case) -> None:
    # Whole, and streamed as the server streams by default: arguments as written, a call
    # that fails after it was sent withdrawn (and dropped here, as an agent drops it).
    tools = openai_tools(case.tools)
    order = {"case": case.id, "seed": len(case.raw)}
    got = whole(ask(client, order, tools))
    assert got == expected(case.raw, tools, got)
    got = streamed(client, order, tools)
    got.pop("withdrawn", None)
    assert got == expected(case.raw, tools, got, streamed=True)


def ids_of(raw: str, tools: Any, salt: str) -> list[str]:
    return [c["id"] for c in completion(toolgram.parse(raw, tools), salt=salt)["choices"][0]["message"]["tool_calls"]]


def test_ids_and_indexes_of_several_calls(client) -> None:
    result = toolgram.parse(TWO_CALLS, TOOLS)
    for seed in range(5):  # (whatever the chunking)
        got = streamed(client, {"text": TWO_CALLS, "seed": seed})
        assert [c["id"] for c in got["tool_calls"]] == ids_of(TWO_CALLS, TOOLS, got["id"])
        assert [json.loads(c["function"]["arguments"]) for c in got["tool_calls"]] == [c.arguments for c in result.calls]
    response = ask(client, {"text": TWO_CALLS})
    assert [c.id for c in response.choices[0].message.tool_calls] == ids_of(TWO_CALLS, TOOLS, response.id)
    assert response.choices[0].finish_reason == "tool_calls" and response.choices[0].message.content == "Both."


def test_ids_are_unique_across_responses(client) -> None:
    # Two replies that open with the same call: an agent keying tool results by id across
    # turns must not get the same id twice. Each response salts its generated ids with its own
    # id; a model-written id (Mistral's [CALL_ID]) is passed on as written.
    ids, response_ids = [], set()
    for stream in (False, True, False, True):
        if stream:
            got = streamed(client, {"text": TWO_CALLS, "seed": 2})
            response_ids.add(got["id"])
            ids += [c["id"] for c in got["tool_calls"]]
        else:
            response = ask(client, {"text": TWO_CALLS})
            response_ids.add(response.id)
            ids += [c.id for c in response.choices[0].message.tool_calls]
    assert len(response_ids) == 4 and len(set(ids)) == len(ids) == 8
    assert not set(ids) & set(ids_of(TWO_CALLS, TOOLS, ""))  # (none is parse()'s unsalted id)
    written = '[TOOL_CALLS]get_weather[CALL_ID]a1B2c3D4e[ARGS]{"city": "Lima"}'
    assert [c.id for c in ask(client, {"text": written}).choices[0].message.tool_calls] == ["a1B2c3D4e"]
    assert [c["id"] for c in streamed(client, {"text": written})["tool_calls"]] == ["a1B2c3D4e"]
    # The same id written twice: the repeat gets a generated id (tool results are keyed by id).
    twice = written + written.replace("[TOOL_CALLS]", "\n[TOOL_CALLS]").replace("Lima", "Quito")
    response = ask(client, {"text": twice})
    got = [c.id for c in response.choices[0].message.tool_calls]
    assert got[0] == "a1B2c3D4e" and got[1].startswith("call_") and got == ids_of(twice, TOOLS, response.id)
    assert response.choices[0].message.model_extra["toolgram"]["repeated_ids"] == [{"index": 1, "id": got[1], "written": "a1B2c3D4e"}]
    got = streamed(client, {"text": twice, "seed": 1})
    assert [c["id"] for c in got["tool_calls"]] == ids_of(twice, TOOLS, got["id"])


def test_the_sdk_stream_helper_assembles_the_calls(client) -> None:
    # (The SDK's own accumulator: what agents built on client.beta... / .stream() see.)
    final = sdk_final(client, {"text": TWO_CALLS, "seed": 3})
    calls = final.choices[0].message.tool_calls
    assert [c.function.name for c in calls] == ["get_weather", "search_web"]
    assert json.loads(calls[1].function.arguments) == {"query": "Lima museums"}


def test_tool_choice_none_does_not_parse(client, backend) -> None:
    for kw in ({"tool_choice": "none"}, {"tools": openai.NOT_GIVEN}):
        response = ask(client, {"text": TWO_CALLS}, **({"tools": TOOLS} | kw))
        assert response.choices[0].message.content == TWO_CALLS and not response.choices[0].message.tool_calls
        got = streamed(client, {"text": TWO_CALLS}, **({"tools": TOOLS} | kw))
        assert got["content"] == TWO_CALLS and got["tool_calls"] == [] and got["finish_reason"] == "stop"
    forwarded = httpx.get(backend + "/last").json()
    assert "tool_choice" not in forwarded and "tools" not in forwarded


def test_tool_choice_naming_a_function_offers_only_that_tool(client) -> None:
    choice = {"type": "function", "function": {"name": "search_web"}}
    only = [TOOLS[1]]
    response = ask(client, {"text": TWO_CALLS}, tool_choice=choice)
    assert whole(response) == expected(TWO_CALLS, only, whole(response))
    assert [c.function.name for c in response.choices[0].message.tool_calls] == ["search_web"]
    assert "get_weather" in whole(response)["errors"][0]  # (not offered: an error, not a call)
    got = streamed(client, {"text": TWO_CALLS}, tool_choice=choice)
    assert got == expected(TWO_CALLS, only, got, streamed=True)
    with pytest.raises(openai.BadRequestError, match="not in 'tools'"):
        ask(client, {"text": TWO_CALLS}, tool_choice={"type": "function", "function": {"name": "book_flight"}})


def test_tool_choice_required_says_when_the_reply_has_no_call(client, backend) -> None:
    # OpenAI's "required": the model must call a tool. toolgram cannot make the model do it
    # (the backend is not told: it would read or constrain the calls itself); a reply without
    # a call keeps its text and gets an error the agent can act on, in both modes.
    prose = "I would rather just tell you: it is sunny in Lima."
    required = 'tool_choice is "required", but the reply has no tool call.'
    for choice, message in (
        ("required", required),
        ({"type": "function", "function": {"name": "search_web"}}, "tool_choice names the function 'search_web', but"),
    ):
        response = ask(client, {"text": prose}, tool_choice=choice)
        assert response.choices[0].message.content == prose and not response.choices[0].message.tool_calls
        assert response.choices[0].message.model_extra["toolgram"]["errors"][-1].startswith(message)
        got = streamed(client, {"text": prose, "seed": 3}, tool_choice=choice)
        assert got["content"] == prose and got["tool_calls"] == [] and got["errors"][-1].startswith(message)
        assert got["finish_reason"] == "stop"
        forwarded = httpx.get(backend + "/last").json()
        assert forwarded["tool_choice"] == "none"  # (the backend reads no calls of its own)
    # A reply with a call is as without tool_choice; a call the tools refuse is no call.
    got = whole(ask(client, {"text": TWO_CALLS}, tool_choice="required"))
    assert got == expected(TWO_CALLS, TOOLS, got)
    got = streamed(client, {"text": TWO_CALLS, "seed": 5}, tool_choice="required")
    assert got == expected(TWO_CALLS, TOOLS, got, streamed=True)
    unknown = '<tool_call>{"name": "book_flight", "arguments": {}}</tool_call>'
    errors = whole(ask(client, {"text": unknown}, tool_choice="required"))["errors"]
    assert errors == [*toolgram.parse(unknown, TOOLS).errors, required]
    with pytest.raises(openai.BadRequestError, match="no 'tools'"):
        ask(client, {"text": prose}, tools=openai.NOT_GIVEN, tool_choice="required")


def test_parallel_tool_calls_false_gives_the_first_call(client, backend) -> None:
    response = ask(client, {"text": TWO_CALLS}, parallel_tool_calls=False)
    assert [c.function.name for c in response.choices[0].message.tool_calls] == ["get_weather"]
    assert whole(response) == expected(TWO_CALLS, TOOLS, whole(response), parallel_tool_calls=False)
    got = streamed(client, {"text": TWO_CALLS, "seed": 2}, parallel_tool_calls=False)
    assert got == expected(TWO_CALLS, TOOLS, got, streamed=True, parallel_tool_calls=False)
    forwarded = httpx.get(backend + "/last").json()
    assert "parallel_tool_calls" not in forwarded
    assert forwarded["tools"] == TOOLS and forwarded["tool_choice"] == "none"  # (the backend reads no calls)


def test_an_unknown_tool_reaches_the_client_as_an_error(client) -> None:
    raw = 'Booking.<tool_call>{"name": "book_flight", "arguments": {"to": "Oslo"}}</tool_call>'
    response = ask(client, {"text": raw})
    assert not response.choices[0].message.tool_calls
    errors = response.choices[0].message.model_extra["toolgram"]["errors"]
    assert errors == toolgram.parse(raw, TOOLS).errors and "book_flight" in errors[0]
    assert streamed(client, {"text": raw, "seed": 4})["errors"] == errors


def test_a_call_that_fails_after_its_name_is_not_glued_to_the_next(client, whole_client) -> None:
    # (Issue 21: a stream that had announced get_weather by its name, then gave its index to
    # the next call, made the client assemble {'name': 'get_weathersearch_web', ...}.)
    raw = (
        'First <tool_call>{"name": "get_weather", "arguments": {"city": "Pa"ris"}}</tool_call>'
        ' then <tool_call>{"name": "search_web", "arguments": {"query": "tides"}}</tool_call>'
    )
    result = toolgram.parse(raw, TOOLS)
    assert [c.name for c in result.calls] == ["search_web"] and result.errors
    for seed in range(1, 7):  # (pieces of 1 to 12 characters)
        for sdk in (client, whole_client):  # (get_weather withdrawn by default, never sent whole)
            got = streamed(sdk, {"text": raw, "seed": seed})
            assert list(got.pop("withdrawn", {})) == ([0] if sdk is client else [])
            assert got == expected(raw, TOOLS, got, streamed=True)
            assert [(c["function"]["name"], c["function"]["arguments"]) for c in got["tool_calls"]] == [
                ("search_web", '{"query": "tides"}')
            ]
            assert got["tool_calls"][0]["id"] == ids_of(raw, TOOLS, got["id"])[0]


@pytest.fixture(scope="module")
def written(backend):
    """A client of `toolgram serve --stream-arguments`: accepted for compatibility, no effect
    (arguments stream as written by default): test_whole_arguments_on_a_case_of_every_format
    checks that it serves as the default does; the default's own tests use `client`."""
    proc, url = serve(backend, "--stream-arguments")
    yield openai.OpenAI(base_url=url + "/v1", api_key="unused", max_retries=0, timeout=30)
    stop(proc)


def argument_chunks(client: Any, order: dict[str, Any], tools: Any = TOOLS) -> list[tuple[int, str]]:
    """(index, arguments) of each streamed chunk that carries arguments."""
    return [
        (entry.index, entry.function.arguments)
        for chunk in ask(client, order, tools, stream=True)
        for entry in (chunk.choices[0].delta.tool_calls or [] if chunk.choices else [])
        if entry.function and entry.function.arguments
    ]


WRITE_TOOLS = [*TOOLS, {"type": "function", "function": {"name": "write_file", "parameters": {"type": "object", "properties": {
    "path": {"type": "string"}, "content": {"type": "string"}}}}}]  # fmt: skip
LONG_CALLS = [
    'Writing it down.\n<tool_call>\n{"name": "write_file", "arguments": {"path": "trip/itinerary.md", "content": "'
    + "Day one: the fjord ferry at nine, lunch in Flåm, the train up to Myrdal.\\n" * 8
    + '"}}\n</tool_call>\nSaved.',
    # (Qwen3-Coder's XML parameters: each string value's text as it comes)
    "Writing it down.\n<tool_call>\n<function=write_file>\n<parameter=path>\ntrip/itinerary.md\n</parameter>\n"
    "<parameter=content>\n" + "Day one: the fjord ferry at nine, lunch in Flåm, the train up to Myrdal.\n" * 8
    + "</parameter>\n</function>\n</tool_call>\nSaved.",
]


@pytest.mark.parametrize("LONG_CALL", LONG_CALLS, ids=["hermes", "qwen3_coder_xml"])
def test_stream_arguments_sends_a_long_call_as_it_is_written(whole_client, client, LONG_CALL) -> None:
    # With --whole-arguments, one chunk carries a call's arguments, from the backend chunk that
    # ends it. By default they come in many chunks: the adapter writes one chunk
    # a backend chunk, so all but the last were sent before the call's end had arrived.
    # Concatenated, they are the arguments of the whole reply's call.
    final = toolgram.parse(LONG_CALL, WRITE_TOOLS).calls[0]
    for seed in (1, 2, 3):
        order = {"text": LONG_CALL, "seed": seed}
        assert len(argument_chunks(whole_client, order, WRITE_TOOLS)) == 1
        got = argument_chunks(client, order, WRITE_TOOLS)
        assert len(got) > 10 and {index for index, _ in got} == {0}
        assert json.loads("".join(text for _, text in got)) == final.arguments
        response = streamed(client, order, WRITE_TOOLS)
        assert response == expected(LONG_CALL, WRITE_TOOLS, response, streamed=True)


# (JSON arguments after an opener that names the call, in formats whose headers declare it:
# `stream_json:`. Before, these came whole at the call's end with --stream-arguments too.)
_WRITE = json.dumps({"path": "trip/itinerary.md", "content": "Day one: the fjord ferry at nine, lunch in Flåm.\n" * 8})
LONG_JSON_CALLS = {
    "deepseek_v31": f"Writing it.<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>write_file<｜tool▁sep｜>{_WRITE}<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
    "deepseek_v3": (
        "Writing it.<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>write_file\n```json\n"
        f"{_WRITE}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>"
    ),
    "functionary_v31": f"Writing it.\n<function=write_file>{_WRITE}</function>",
    "hermes_function_tag": f"Writing it.\n<tool_call><function>write_file</function>{_WRITE}</tool_call>",
    "internlm": f'Writing it.<|action_start|><|plugin|>\n{{"name": "write_file", "parameters": {_WRITE}}}<|action_end|>',
    # (a JSON call object after a marker, a JSON list of call objects: their headers' stream_json, and stream_sep)
    "gigachat": f'Writing it.<|message_sep|>\n\nfunction call<|role_sep|>\n{{"name": "write_file", "arguments": {_WRITE}}}',
    "granite": f'<|tool_call|>[{{"name": "write_file", "arguments": {_WRITE}}}]',
    "nemotron": f'Writing it.<TOOLCALL>[{{"name": "write_file", "arguments": {_WRITE}}}]</TOOLCALL>',
    "jamba": f'Writing it.\n<tool_calls>[{{"name": "write_file", "arguments": {_WRITE}}}]</tool_calls>',
    "command_r": f'Action:\n```json\n[{{"tool_name": "write_file", "parameters": {_WRITE}}}]\n```',
    "cohere": f'<|START_ACTION|>[{{"tool_call_id": "0", "tool_name": "write_file", "parameters": {_WRITE}}}]<|END_ACTION|>',
    "plamo3": (
        "Writing it.<|plamo:begin_tool_requests:plamo|><|plamo:begin_tool_request:plamo|><|plamo:begin_tool_name:plamo|>write_file"
        f"<|plamo:end_tool_name:plamo|><|plamo:begin_tool_arguments:plamo|><|plamo:constrain|>json<|plamo:msg|>{_WRITE}"
        "<|plamo:end_tool_arguments:plamo|><|plamo:end_tool_request:plamo|><|plamo:end_tool_requests:plamo|>"
    ),
}


@pytest.mark.parametrize("fmt", sorted(LONG_JSON_CALLS))
def test_stream_arguments_sends_json_after_a_declared_opener_as_it_is_written(client, whole_client, fmt) -> None:
    raw = LONG_JSON_CALLS[fmt]
    [final] = toolgram.parse(raw, WRITE_TOOLS).calls
    assert final.format == fmt
    for seed in (1, 2):
        _one_call_streams_as_written(client, whole_client, {"text": raw, "seed": seed}, raw, final, WRITE_TOOLS)


def _one_call_streams_as_written(client: Any, whole_client: Any, order: dict[str, Any], raw: str, final: Any, tools: Any) -> None:
    """The reply's one call comes in one argument chunk with --whole-arguments, and by
    default in many, all of index 0, that join to the whole reply's arguments; nothing
    withdrawn, the stream parse()'s."""
    assert len(argument_chunks(whole_client, order, tools)) == 1
    got = argument_chunks(client, order, tools)
    assert len(got) > 10 and {index for index, _ in got} == {0}
    assert "".join(text for _, text in got) == json.dumps(final.arguments, ensure_ascii=False)
    response = streamed(client, order, tools)
    assert "withdrawn" not in response
    assert response == expected(raw, tools, response, streamed=True)


# (Arguments that are no JSON, echoed as json.dumps writes them: Gemma's loose objects,
# stream_loose; a lone Python-style call, stream_pycall; MFCS's parameters after its fields;
# Cohere's cofl values and MiniMax-M3's elements, stream_call; BFCL's attribute values,
# stream_attr. Before, these came whole.)
_DAYS = json.loads(_WRITE)["content"]
_Q = json.dumps(_DAYS, ensure_ascii=False)  # (a Python string literal too)
_M3 = "]<]minimax[>["
LONG_ECHOED_CALLS = {
    "gemma4_call": f'Writing it.<|tool_call>call:write_file{{path:<|"|>trip/itinerary.md<|"|>,content:<|"|>{_DAYS}<|"|>}}<tool_call|>',
    "functiongemma_call": f"<start_function_call>call:write_file{{path:<escape>trip/itinerary.md<escape>,content:<escape>{_DAYS}<escape>}}<end_function_call>",
    "llama3_builtin": f'<|python_tag|>write_file.call(path="trip/itinerary.md", content={_Q})<|eom_id|>',
    "mfcs": f"<mfcs_tool><instructions>Write the plan</instructions><call_id>call_1</call_id><name>write_file</name><parameters>{_WRITE}</parameters></mfcs_tool>",
    "cohere_cofl_xml": '<cofl:tool_calls><cofl:tool_call id="0" name="write_file"><cofl:value name="path" type="raw">trip/itinerary.md</cofl:value>'
    f'<cofl:value name="content" type="raw">{_DAYS}</cofl:value></cofl:tool_call></cofl:tool_calls>',
    "minimax_m3_nested_xml": f'{_M3}<tool_call>\n{_M3}<invoke name="write_file">\n{_M3}<path>trip/itinerary.md{_M3}</path>\n'
    f"{_M3}<content>{_DAYS}{_M3}</content>\n{_M3}</invoke>\n{_M3}</tool_call>",
    # (BFCL's values in attributes, stream_attr: the schema says string, the type comes after)
    "bfcl_verbose_xml": '<functions><function name="write_file"><params><param name="path" value="trip/itinerary.md" type="string"/>'
    f'<param name="content" value="{_DAYS}" type="string"/></params></function></functions>',
}


@pytest.mark.parametrize("fmt", sorted(LONG_ECHOED_CALLS))
def test_stream_arguments_echoes_arguments_that_are_no_json_as_they_are_written(client, whole_client, fmt) -> None:
    raw = LONG_ECHOED_CALLS[fmt]
    [final] = toolgram.parse(raw, WRITE_TOOLS).calls
    assert final.format == fmt
    for seed in (1, 2):
        _one_call_streams_as_written(client, whole_client, {"text": raw, "seed": seed}, raw, final, WRITE_TOOLS)


@pytest.mark.parametrize("case", list({c.format: c for c in reversed(CASES)}.values()), ids=lambda c: c.id)  # (the first of each format)
def test_whole_arguments_on_a_case_of_every_format(whole_client, written, case) -> None:
    # The opt-out: each call whole once certain, nothing withdrawn, the indexes parse()'s.
    # And --stream-arguments, a no-op kept for compatibility, serves as the default does.
    tools = openai_tools(case.tools)
    order = {"case": case.id, "seed": len(case.raw)}
    got = streamed(whole_client, order, tools)
    assert "withdrawn" not in got
    assert got == expected(case.raw, tools, got, streamed=True)
    got = streamed(written, order, tools)
    got.pop("withdrawn", None)
    assert got == expected(case.raw, tools, got, streamed=True)


# (A long string value in each format whose header declares its parameter tags, a corpus case.)
PARAM_CASES = [c for c in corpus_cases() if c.name == "long_string_value_streams"]
PARAM_TOOLS = [{"type": "function", "function": {"name": "write_file", "parameters": {"type": "object", "properties": {
    "path": {"type": "string"}, "mode": {"type": "integer"}, "content": {"type": "string"}}}}}]  # fmt: skip


@pytest.mark.parametrize("case", PARAM_CASES, ids=lambda c: c.format)
def test_stream_arguments_sends_xml_parameters_as_they_are_written(client, whole_client, case) -> None:
    # GLM, MiniMax, Seed-OSS, DSML, Kimi K3, Qwen3-Coder, BFCL: the path, then the mode once its close
    # came, then the content's text as it comes, in many chunks of the one call; concatenated,
    # the arguments of the whole reply's call, nothing withdrawn.
    final = toolgram.parse(case.raw, PARAM_TOOLS).calls[0]
    assert final.format == case.format
    for seed in (1, 2):
        _one_call_streams_as_written(client, whole_client, {"case": case.id, "seed": seed}, case.raw, final, PARAM_TOOLS)


DAYS = "Day one: the fjord ferry at nine, lunch in Flåm, the train up to Myrdal.\n" * 8
TWO_CALL_BLOCKS = {
    "minimax_m2_invoke": (
        "Reading, then writing.\n<minimax:tool_call>\n<invoke name=\"get_weather\">\n<parameter name=\"city\">Bergen</parameter>\n"
        "</invoke>\n<invoke name=\"write_file\">\n<parameter name=\"path\">trip/itinerary.md</parameter>\n<parameter name=\"content\">"
        + DAYS
        + "</parameter>\n</invoke>\n</minimax:tool_call>"
    ),
    # (a JSON object after the opener its header declares, stream_json: the model's own ids)
    "kimi_k2": (
        "Reading, then writing. <|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0"
        '<|tool_call_argument_begin|>{"city": "Bergen"}<|tool_call_end|><|tool_call_begin|>functions.write_file:1'
        '<|tool_call_argument_begin|>' + json.dumps({"path": "trip/itinerary.md", "content": DAYS}) + "<|tool_call_end|>"
        "<|tool_calls_section_end|>"
    ),
    "mistral": (
        '[TOOL_CALLS]get_weather[ARGS]{"city": "Bergen"}[TOOL_CALLS]write_file[ARGS]'
        + json.dumps({"path": "trip/itinerary.md", "content": DAYS})
    ),
    "step3_steptml": (
        '<｜tool_calls_begin｜><｜tool_call_begin｜><steptml:invoke name="get_weather"><steptml:parameter name="city">Bergen'
        '</steptml:parameter></steptml:invoke><｜tool_call_end｜><｜tool_sep｜><｜tool_call_begin｜><steptml:invoke name="write_file">'
        '<steptml:parameter name="path">trip/itinerary.md</steptml:parameter><steptml:parameter name="content">'
        + DAYS
        + "</steptml:parameter></steptml:invoke><｜tool_call_end｜><｜tool_calls_end｜>"
    ),
}
TWO_CALL_BLOCK = TWO_CALL_BLOCKS["minimax_m2_invoke"]


@pytest.mark.parametrize("fmt", sorted(TWO_CALL_BLOCKS))
def test_stream_arguments_sends_the_second_call_of_a_block_as_it_is_written(whole_client, client, fmt) -> None:
    # A block of two calls: the second is announced once its name shows, with the index and
    # id of the whole completion, and its content comes in many chunks, as for a block's first
    # call; concatenated, the arguments of the whole reply's call.
    TWO_CALL_BLOCK = TWO_CALL_BLOCKS[fmt]
    final = toolgram.parse(TWO_CALL_BLOCK, WRITE_TOOLS).calls
    assert {c.format for c in final} == {fmt}
    assert [c.name for c in final] == ["get_weather", "write_file"]
    for seed in (1, 2, 3):
        order = {"text": TWO_CALL_BLOCK, "seed": seed}
        assert [index for index, _ in argument_chunks(whole_client, order, WRITE_TOOLS)] == [0, 1]
        got = argument_chunks(client, order, WRITE_TOOLS)
        second = [text for index, text in got if index == 1]
        assert len(second) > 10
        assert "".join(second) == json.dumps(final[1].arguments, ensure_ascii=False)
        response = streamed(client, order, WRITE_TOOLS)
        assert "withdrawn" not in response
        assert response == expected(TWO_CALL_BLOCK, WRITE_TOOLS, response, streamed=True)


_PYTHON_LIST = '[get_weather(city="Bergen"), write_file(path="trip/itinerary.md", content="' + DAYS.replace("\n", " ") + '")]'
PYTHON_STYLE_LISTS = {
    "lfm2": f"<|tool_call_start|>{_PYTHON_LIST}<|tool_call_end|>",
    # (its opener as long as LFM2's: the backend's seeded pieces end at the same places, none
    # bringing a name with the arguments after it)
    "fenced_python": f"Both.\n```tool_code\n{_PYTHON_LIST}\n```\nDone.",
}


@pytest.mark.parametrize("fmt", sorted(PYTHON_STYLE_LISTS))
def test_stream_arguments_names_each_python_style_call_before_the_list_ends(client, fmt) -> None:
    # A list of Python-style calls (LFM2's, a ```python fence's): each call's name chunk (index,
    # id) comes as soon as its name and "(" show, before the list's end; its arguments, as JSON,
    # as they are written (a quoted value's text in several chunks; the last `}` with the list's end).
    raw = PYTHON_STYLE_LISTS[fmt]
    final = toolgram.parse(raw, WRITE_TOOLS).calls
    assert [(c.format, c.name) for c in final] == [(fmt, "get_weather"), (fmt, "write_file")]
    for seed in (1, 2):
        entries = [
            (n, entry.index, entry.function.name, entry.function.arguments)
            for n, chunk in enumerate(ask(client, {"text": raw, "seed": seed}, WRITE_TOOLS, stream=True))
            for entry in (chunk.choices[0].delta.tool_calls or [] if chunk.choices else [])
        ]
        named = [(index, name, arguments) for _, index, name, arguments in entries if name]
        # (the `{` comes with the next piece: a call's last argument character sent so far is held)
        assert named == [(0, "get_weather", ""), (1, "write_file", "")]
        # (the second call's name chunk came first, then its arguments in pieces)
        (at_name,) = [n for n, index, name, _ in entries if index == 1 and name]
        pieces = [(n, arguments) for n, index, name, arguments in entries if index == 1 and arguments]
        assert all(n >= at_name for n, _ in pieces) and len(pieces) > 3
        assert json.loads("".join(a for _, a in pieces)) == final[1].arguments
        response = streamed(client, {"text": raw, "seed": seed}, WRITE_TOOLS)
        assert "withdrawn" not in response
        assert response == expected(raw, WRITE_TOOLS, response, streamed=True)


def test_stream_arguments_withdraws_a_call_that_fails(client) -> None:
    # Announced by its name, then a stray quote makes it prose and an error. The client was sent
    # index 0 with that name and part of its arguments, and cannot be told to forget them: the
    # extension field withdraws index 0 (with the id it was sent), the text comes as content
    # with the error, and the next call takes index 1, not 0 (no glued names).
    raw = (
        'Checking. <tool_call>{"name": "get_weather", "arguments": {"city": "Ber"gen"}}</tool_call>'
        ' <tool_call>{"name": "search_web", "arguments": {"query": "Bergen rain"}}</tool_call>'
    )
    result = toolgram.parse(raw, TOOLS)
    for seed in range(1, 5):
        got = streamed(client, {"text": raw, "seed": seed})
        withdrawn = got.pop("withdrawn")
        assert list(withdrawn) == [0] and "withdrawn" in withdrawn[0]["error"]
        assert got == expected(raw, TOOLS, got, streamed=True)
        assert [c["function"]["name"] for c in got["tool_calls"]] == ["search_web"] and result.errors == got["errors"]
        assert '"Ber"gen"' in got["content"] and got["finish_reason"] == "tool_calls"
    alone = raw[: raw.index("</tool_call>") + len("</tool_call>")]
    got = streamed(client, {"text": alone, "seed": 2})
    assert list(got.pop("withdrawn")) == [0] and got["tool_calls"] == [] and got["finish_reason"] == "stop"
    # (The SDK's own accumulator keeps the withdrawn entry: an agent must read the extension.)
    final = sdk_final(client, {"text": raw, "seed": 3})
    assert [c.function.name for c in final.choices[0].message.tool_calls] == ["get_weather", "search_web"]


def test_a_withdrawn_call_is_never_whole_in_the_sdks_accumulated_message(client) -> None:
    # The openai SDK's stream helper keeps a withdrawn call in the final message's tool_calls
    # (it knows no withdrawal): its arguments are not a JSON object an agent could run, since
    # the last character of a call's arguments comes with the call's completion.
    raw = '<tool_call>{"name": "get_weather", "arguments": {"city": "Lima"}, "name": "search_web"}</tool_call>'
    assert toolgram.parse(raw, TOOLS).calls == []
    for seed in (1, 2, 3):
        with client.chat.completions.stream(
            model="replay", messages=[{"role": "user", "content": json.dumps({"text": raw, "seed": seed})}], tools=TOOLS
        ) as stream:
            for _ in stream:
                pass
            final = stream.get_final_completion()
        choice = final.choices[0]
        [call] = choice.message.tool_calls
        assert call.function.name == "get_weather"
        with pytest.raises(ValueError):
            json.loads(call.function.arguments)
        extension = choice.message.model_extra["toolgram"]
        assert [w["index"] for w in extension["withdrawn"]] == [0] and extension["errors"]
        assert choice.finish_reason == "stop"


def test_truncated_says_what_a_call_the_end_cut_becomes(backend, client) -> None:
    # The backend stops inside a call's value (max_tokens): by default the call is kept,
    # repaired (cut_value); `--truncated error` makes it an error the agent can send back.
    cut = 'I will look it up.\n<tool_call>\n{"name": "search_web", "arguments": {"query": "ferry times Bergen to Stav'
    proc, url = serve(backend, "--truncated", "error")
    try:
        strict = openai.OpenAI(base_url=url + "/v1", api_key="unused", max_retries=0, timeout=30)
        for mode, sdk in (("repair", client), ("error", strict)):
            result = toolgram.parse(cut, TOOLS, truncated=mode)
            got = whole(ask(sdk, {"text": cut, "finish_reason": "length"}))
            assert got == expected(cut, TOOLS, got, truncated=mode, finish_reason="length")
            for seed in (1, 2, 3):
                got = streamed(sdk, {"text": cut, "seed": seed, "finish_reason": "length"})
                # (by default the call was sent by its name: refused at the end, it is withdrawn)
                assert list(got.pop("withdrawn", {})) == ([0] if mode == "error" else [])
                assert got == expected(cut, TOOLS, got, streamed=True, truncated=mode, finish_reason="length")
            if mode == "repair":
                assert [c.name for c in result.calls] == ["search_web"] and "cut_value" in result.calls[0].repairs
                # (the backend's "length" kept, as OpenAI's: the call was cut; QA D22)
                assert got["finish_reason"] == "length" and got["repairs"][0]["repairs"] == list(result.calls[0].repairs)
            else:
                assert not result.calls and result.errors and got["errors"] == result.errors
                assert got["finish_reason"] == "length" and got["content"] == result.text
    finally:
        stop(proc)
    with pytest.raises(subprocess.CalledProcessError):  # (not a choice: refused before serving)
        subprocess.run([sys.executable, "-m", "toolgram", "serve", "--backend", backend, "--truncated", "drop"],
                       env={**os.environ, "PYTHONPATH": str(SRC)}, check=True, capture_output=True, timeout=60)  # fmt: skip


def test_models_and_health(client, backend) -> None:
    assert [m.id for m in client.models.list()] == ["replay"]
    assert httpx.get(str(client.base_url).replace("/v1/", "/health")).json()["status"] == "ok"


def test_a_backend_that_is_down_is_a_502_with_a_message() -> None:
    proc, url = serve(f"http://127.0.0.1:{free_port()}")
    try:
        down = openai.OpenAI(base_url=url + "/v1", api_key="unused", max_retries=0)
        for stream in (False, True):
            with pytest.raises(openai.APIStatusError) as caught:
                ask(down, {"text": "hi"}, stream=stream)
            assert caught.value.status_code == 502 and "cannot be reached" in caught.value.message
        with pytest.raises(openai.APIStatusError) as caught:
            down.models.list()
        assert caught.value.status_code == 502
    finally:
        stop(proc)


def test_a_backend_error_status_is_passed_on(client) -> None:
    with pytest.raises(openai.APIStatusError) as caught:
        ask(client, {"text": "hi", "status": 500})
    assert caught.value.status_code == 502 and "failing on request" in caught.value.message
    with pytest.raises(openai.BadRequestError, match="failing on request"):
        ask(client, {"text": "hi", "status": 400}, stream=True)


def test_a_reply_that_is_no_chat_completion_is_a_502(client) -> None:
    for body in ({"hello": 1}, {"choices": [{"message": {"content": ["a", "list"]}}]}, [1, 2]):
        with pytest.raises(openai.APIStatusError) as caught:
            ask(client, {"text": "", "body": body})
        assert caught.value.status_code == 502 and "not a chat completion" in caught.value.message


def test_a_backend_that_answers_a_stream_request_with_one_json_is_streamed_out(client) -> None:
    """A backend that ignores `stream` and answers one whole chat.completion: that is the
    reply, streamed out as chunks as usual; a body that is no chat completion is a 502."""
    raw = 'Sure.<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>'
    body = {
        "id": "x", "object": "chat.completion", "created": 1, "model": "m",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": raw}, "finish_reason": "stop"}],
    }
    got = streamed(client, {"body": body})
    assert got == expected(raw, TOOLS, got, streamed=True) and got["tool_calls"][0]["function"]["name"] == "get_weather"
    # (with the backend's own reasoning and calls, and a reply cut by the token limit)
    own = [{"id": "call_own", "type": "function", "function": {"name": "search_web", "arguments": {"query": "x"}}}]
    message = {"role": "assistant", "content": "Hm.", "reasoning_content": "Think.", "tool_calls": own}
    got = streamed(client, {"body": {**body, "choices": [{"index": 0, "message": message, "finish_reason": "length"}]}})
    assert (got["content"], got["reasoning"], got["finish_reason"]) == ("Hm.", "Think.", "length")
    assert [(c["id"], c["function"]["arguments"]) for c in got["tool_calls"]] == [("call_own", '{"query": "x"}')]
    for odd in ({"hello": 1}, {"choices": [{"message": {"content": ["a", "list"]}}]}, [1, 2]):
        with pytest.raises(openai.APIStatusError) as caught:
            ask(client, {"body": odd}, stream=True)
        assert caught.value.status_code == 502 and "not a chat completion" in caught.value.message


def test_a_slow_backend_is_waited_for_then_timed_out(client) -> None:
    raw = 'One moment.<tool_call>{"name": "get_weather", "arguments": {"city": "Oslo"}}</tool_call>'
    slow = {"text": raw, "delay": 0.02}  # (between chunks: well within the timeout)
    got = streamed(client, slow)
    assert got == expected(raw, TOOLS, got, streamed=True)
    got = whole(ask(client, {"text": raw, "delay": 1.0}))
    assert got == expected(raw, TOOLS, got)
    with pytest.raises(openai.APIStatusError) as caught:
        ask(client, {"text": raw, "delay": SERVE_TIMEOUT + 1})
    assert caught.value.status_code == 504
    # (Streamed, the backend's headers came at once: the status is sent, the error follows.)
    with pytest.raises(openai.APIError, match="stalled"):
        for _ in ask(client, {"text": raw, "delay": SERVE_TIMEOUT + 1}, stream=True):
            pass


def test_a_broken_stream_reaches_the_client_as_an_error(client) -> None:
    raw = "Some prose first. " * 5 + '<tool_call>{"name": "get_weather", "arguments": {"city": "Oslo"}}</tool_call>'
    content = []
    with pytest.raises(openai.APIError, match="broke off"):
        for chunk in ask(client, {"text": raw, "break_after": 6}, stream=True):
            content.append(chunk.choices[0].delta.content or "" if chunk.choices else "")
    assert raw.startswith("".join(content))  # (what came before the break, and nothing invented)


def broken(client: Any, order: dict[str, Any], match: str = "broke off") -> dict[str, Any]:
    """A stream that ends in an error event: what came before it, assembled as a client does
    (calls by index, those the extension field withdraws dropped)."""
    content, errors, calls, withdrawn = [], [], {}, set()
    with pytest.raises(openai.APIError, match=match) as caught:
        for chunk in ask(client, order, stream=True):
            if not chunk.choices:
                continue
            assert chunk.choices[0].finish_reason is None  # (no finish: an error ends it)
            delta = chunk.choices[0].delta
            content.append(delta.content or "")
            extension = (delta.model_extra or {}).get("toolgram") or {}
            errors += extension.get("errors", [])
            withdrawn |= {w["index"] for w in extension.get("withdrawn", [])}
            for c in delta.tool_calls or []:
                name, arguments = calls.get(c.index, ("", ""))
                calls[c.index] = (name + (c.function.name or ""), arguments + (c.function.arguments or ""))
    body = caught.value.body if isinstance(caught.value.body, dict) else {}
    kept = [calls[i] for i in sorted(calls) if i not in withdrawn]
    return {"content": "".join(content), "errors": errors, "calls": kept, "error": body}


@pytest.mark.parametrize("mode", ["default", "whole_arguments"])
def test_a_broken_stream_sends_what_came_before_the_break(client, whole_client, mode) -> None:
    """Nothing the model wrote is lost: the text received is read as ending at the break,
    its prose, its calls and a cut call's text (with its error) sent before the error event
    (by default a call the break cut is withdrawn, the same text and error following)."""
    client = client if mode == "default" else whole_client
    raw = 'Hello there, checking now. <tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>'
    got = broken(client, {"text": raw, "chunk": 10, "break_after": 5})
    # (The blank between prose and a call is the call's, as parse() has it.)
    assert got["content"] == raw[:26] + raw[27:50] and got["calls"] == []
    assert got["errors"] and "name" in got["errors"][0]
    got = broken(client, {"text": raw, "chunk": 10, "break_after": 9})  # (cut inside the arguments)
    assert got["content"] == raw[:26] + raw[27:90] and got["calls"] == [] and "cut off" in got["errors"][0]
    # (A GLM-4.7 reply of two complete calls, broken after its text, before the finish:
    # the second call's end is known only at the reply's end, the break.)
    glm = "".join(
        f"<tool_call>get_weather<arg_key>city</arg_key><arg_value>{city}</arg_value></tool_call>" for city in ("Paris", "Rome")
    )
    for chunk in (len(glm) // 2, 7):
        got = broken(client, {"text": glm, "chunk": chunk, "break_after": 10**6})
        assert got["calls"] == [("get_weather", '{"city": "Paris"}'), ("get_weather", '{"city": "Rome"}')]
        assert got["content"] == "" and got["errors"] == []
    # (A line that is no JSON breaks it too; a Hermes call complete before it is sent.)
    got = broken(client, {"text": raw, "chunk": 10, "garble_after": 10})
    assert got["content"] == "Hello there, checking now." and got["calls"] == [("get_weather", '{"city": "Paris"}')]


def test_errors_have_openais_shape_streamed_and_on_unknown_routes(client) -> None:
    """A streamed error event, an unknown route and a method not allowed are OpenAI error
    objects (message, type, param, code), as every other error of serve's."""
    keys = {"message", "type", "param", "code"}
    got = broken(client, {"text": "Hello there.", "chunk": 3, "break_after": 2})
    assert set(got["error"]) == keys and got["content"] == "Hello"
    base = str(client.base_url).rstrip("/")
    for method, path, status in (("POST", "/completions", 404), ("GET", "/nowhere", 404), ("GET", "/chat/completions", 405)):
        reply = httpx.request(method, base + path)
        assert reply.status_code == status and set(reply.json()["error"]) == keys, reply.text
        assert reply.json()["error"]["type"] == "invalid_request_error"
    assert "POST" in httpx.get(base + "/chat/completions").headers["allow"]
    with pytest.raises(openai.NotFoundError, match="Invalid URL"):
        client.completions.create(model="replay", prompt="hi")


def test_help_of_stream_arguments_names_the_formats_that_stream() -> None:
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    out = subprocess.run([sys.executable, "-m", "toolgram", "serve", "--help"], env=env, capture_output=True, text=True, check=True).stdout
    text = " ".join(out.split())
    for family in ("Hermes", "Kimi K2", "Mistral", "Llama 3 JSON", "pythonic", "Llama 4", "LFM2", "OLMo 3", "Qwen3-Coder", "GLM", "Hunyuan Hy3"):
        assert family in text, family


def test_a_broken_stream_withdraws_the_call_it_cut_with_stream_arguments(client) -> None:
    raw = 'Checking. <tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>'
    withdrawn, content = [], []
    with pytest.raises(openai.APIError, match="broke off"):
        for chunk in ask(client, {"text": raw, "chunk": 10, "break_after": 6}, stream=True):
            delta = chunk.choices[0].delta
            content.append(delta.content or "")
            withdrawn += ((delta.model_extra or {}).get("toolgram") or {}).get("withdrawn", [])
    assert [w["index"] for w in withdrawn] == [0] and "".join(content) == raw[:9] + raw[10:60]


def test_prompt_writes_the_tools_into_the_system_prompt(backend) -> None:
    proc, url = serve(backend, "--prompt", "hermes", "--api-key", "sesame")
    try:
        with pytest.raises(openai.AuthenticationError):
            ask(openai.OpenAI(base_url=url + "/v1", api_key="wrong", max_retries=0), {"text": "hi"})
        prompted = openai.OpenAI(base_url=url + "/v1", api_key="sesame", max_retries=0)
        response = ask(prompted, {"text": TWO_CALLS})
        assert len(response.choices[0].message.tool_calls) == 2
        forwarded = httpx.get(backend + "/last").json()
        assert "tools" not in forwarded
        system = forwarded["messages"][0]
        assert system["role"] == "system" and "search_web" in system["content"] and "<tool_call>" in system["content"]
    finally:
        stop(proc)


def test_the_readme_snippet_runs(backend, client, capsys) -> None:
    readme = (HERE.parent / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Serve", 1)[1].split("\n## ", 1)[0]
    code = section.split("```py\n", 1)[1].split("```", 1)[0]
    assert "http://127.0.0.1:8000/v1" in code
    exec(compile(code.replace("http://127.0.0.1:8000/v1", str(client.base_url)), "README:Serve", "exec"), {})  # noqa: S102 - the README block, as test_readme_examples runs them
    out = capsys.readouterr().out
    assert "get_weather {}" in out and "call_" in out


def test_requests_it_cannot_read_are_400s(client) -> None:
    url = str(client.base_url) + "chat/completions"
    assert httpx.post(url, content=b"{not json").status_code == 400
    assert httpx.post(url, json={"model": "m"}).json()["error"]["message"].startswith("'messages' is required")
    bad_tools = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "tools": [42]}
    reply = httpx.post(url, json=bad_tools)
    assert reply.status_code == 400 and "'tools' cannot be read" in reply.json()["error"]["message"]
    odd_choice = {**bad_tools, "tools": TOOLS, "tool_choice": {"type": "function", "function": "x"}}
    assert httpx.post(url, json=odd_choice).status_code == 400


def test_requests_it_would_read_wrongly_are_400s(client) -> None:
    """QA: n=2 lost the second choice (streamed, both were fed to one parser), and odd
    values of tool_choice, stream or tools passed for defaults."""
    url = str(client.base_url) + "chat/completions"
    base = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "tools": TOOLS}
    for odd, says in (
        ({"n": 2}, "'n' must be 1"),
        ({"n": 2, "stream": True}, "'n' must be 1"),
        ({"tool_choice": "bogus"}, "'tool_choice' must be"),
        ({"tool_choice": 42}, "'tool_choice' must be"),
        ({"stream": "yes"}, "'stream' must be true or false"),
        ({"tools": "abc"}, "'tools' must be a list"),
        ({"tools": {}}, "'tools' must be a list"),
        ({"tools": False}, "'tools' must be a list"),
        ({"stream": 1}, "'stream' must be true or false"),
        ({"n": True}, "'n' must be 1"),
        ({"n": 1.0}, "'n' must be 1"),
        ({"parallel_tool_calls": "no"}, "'parallel_tool_calls' must be true or false"),
    ):
        reply = httpx.post(url, json={**base, **odd})
        assert reply.status_code == 400 and says in reply.json()["error"]["message"], (odd, reply.text)
    assert httpx.post(url, json={**base, "n": 1}).status_code == 200


def test_a_lone_surrogate_in_the_arguments_reaches_the_client(client) -> None:
    """A reply cut between an emoji's two escapes: the call's value ends in a lone
    surrogate, which UTF-8 cannot carry; it is sent as its JSON escape (it was a 500, and
    a stream that broke off)."""
    raw = '<tool_call>{"name": "get_weather", "arguments": {"city": "Hi \\ud83d'
    order = {"text": raw}
    got = whole(ask(client, order))
    assert got == expected(raw, TOOLS, got)
    assert json.loads(got["tool_calls"][0]["function"]["arguments"]) == {"city": "Hi \ud83d"}
    got = streamed(client, order)
    assert got["tool_calls"] == expected(raw, TOOLS, got, streamed=True)["tool_calls"]


def test_a_backends_tool_calls_finish_without_calls_is_stop(client) -> None:
    """A backend that read calls of its own says finish_reason "tool_calls"; toolgram does
    not pass those calls on, so a reply without calls of ours finishes with "stop"."""
    order = {"text": "Nothing to call.", "finish_reason": "tool_calls"}
    assert whole(ask(client, order))["finish_reason"] == "stop"
    assert streamed(client, order)["finish_reason"] == "stop"
    order = {"text": "Cut short.", "finish_reason": "length"}
    assert whole(ask(client, order))["finish_reason"] == "length"


def test_a_long_call_is_read_whole_unless_max_chars_says(client, backend) -> None:
    """serve reads a reply whole by default: parse()'s 32,768 characters cut a long
    write_file's arguments (QA). --max-chars sets a limit."""
    raw = 'Writing it.<tool_call>{"name": "get_weather", "arguments": {"city": "' + "x" * 40_000 + '"}}</tool_call>'
    order = {"text": raw}
    got = whole(ask(client, order))
    assert json.loads(got["tool_calls"][0]["function"]["arguments"])["city"] == "x" * 40_000
    assert got["content"] == "Writing it." and not got["repairs"]
    assert [c["function"] for c in streamed(client, order)["tool_calls"]] == [c["function"] for c in got["tool_calls"]]
    proc, url = serve(backend + "/v1", "--max-chars", "1000")
    try:
        limited = openai.OpenAI(base_url=url + "/v1", api_key="unused", max_retries=0, timeout=30)
        cut = whole(ask(limited, order))
        assert cut["repairs"] and "cut_by_max_chars" in json.dumps(cut["repairs"])
    finally:
        stop(proc)


def test_a_request_holding_a_lone_surrogate_is_forwarded(client) -> None:
    """QA: a message with a lone surrogate (a value sent back from an earlier reply cut
    between an emoji's escapes) could not be written as UTF-8: a 502 without asking the
    backend, and a 500 streamed. It is forwarded with the JSON escape."""
    # (The openai SDK cannot send one: it writes UTF-8. A JSON body with the escape, as a
    # JavaScript client writes it.)
    url = str(client.base_url) + "chat/completions"
    order = json.dumps({"text": "Fine."})
    messages = [{"role": "assistant", "content": "Hi \ud83d"}, {"role": "user", "content": order}]
    body = {"model": "replay", "messages": messages, "tools": TOOLS}
    headers = {"Content-Type": "application/json"}
    got = httpx.post(url, content=json.dumps(body).encode("ascii"), headers=headers, timeout=30)
    assert got.status_code == 200, got.text
    assert got.json()["choices"][0]["message"]["content"] == "Fine."
    streamed_body = json.dumps({**body, "stream": True}).encode("ascii")
    with httpx.stream("POST", url, content=streamed_body, headers=headers, timeout=30) as reply:
        assert reply.status_code == 200
        lines = [line[5:].strip() for line in reply.iter_lines() if line.startswith("data:")]
    deltas = [json.loads(x)["choices"] for x in lines if x != "[DONE]"]
    assert "".join(c[0]["delta"].get("content") or "" for c in deltas if c) == "Fine."


def test_the_backends_reasoning_and_the_contents_are_apart_in_both_modes(client) -> None:
    """QA: streamed, the backend's reasoning and the one read out of the content ran
    together ("backend thinksown thoughts"); whole, a blank line parts them."""
    order = {"text": "<think>Weighing the routes.</think>The train is best.", "reasoning": "Asked about travel."}
    want = "Asked about travel.\n\nWeighing the routes."
    assert whole(ask(client, order))["reasoning"] == want
    assert streamed(client, order)["reasoning"] == want


def test_a_reply_slow_to_parse_does_not_hold_up_other_clients(client) -> None:
    """QA (D25): a streamed reply was parsed on the server's event loop, so a reply slow to
    read (a model looping on `<tool_call>{`, ~2 s of parsing at 32 KB) froze every other
    request, /health included, until it was done. It is parsed in a worker thread: other
    requests are answered while it is read (no clock: five requests, each sent after the
    previous one answered, all answered before the slow reply's stream ends)."""
    storm = "Working on it.\n" + "<tool_call>{" * 2730
    started, ended = threading.Event(), threading.Event()
    got: list[Any] = []

    def slow() -> None:
        for chunk in ask(client, {"text": storm, "chunk": 64}, stream=True):
            started.set()
            got.append(chunk)
        ended.set()

    reader = threading.Thread(target=slow)
    reader.start()
    try:
        assert started.wait(60)  # (the proxy has begun sending the slow reply)
        health = str(client.base_url).removesuffix("v1/") + "health"
        answered = []
        for _ in range(5):
            assert httpx.get(health, timeout=60).json()["status"] == "ok"
            answered.append(not ended.is_set())
        assert answered == [True] * 5
    finally:
        reader.join(120)
    assert ended.is_set() and got[-1].choices[0].finish_reason == "stop"


def test_a_call_cut_by_the_token_limit_finishes_with_length(client) -> None:
    """QA (D22): a reply cut by max_tokens inside a call's value came back with
    finish_reason "tool_calls": the call, repaired (cut_value), looked finished, and an
    agent ran `rm -rf /srv/ap`. The backend's "length" is kept, as OpenAI answers it when the
    token limit cuts a call (the repaired call is still given, with its repairs)."""
    raw = 'Cleaning up.<tool_call>{"name": "get_weather", "arguments": {"city": "rm -rf /srv/ap'
    order = {"text": raw, "finish_reason": "length"}
    got = whole(ask(client, order))
    assert got == expected(raw, TOOLS, got, finish_reason="length")
    assert got["finish_reason"] == "length" and got["tool_calls"] and "cut_value" in got["repairs"][0]["repairs"]
    for seed in (1, 4):
        got = streamed(client, {**order, "seed": seed})
        assert got == expected(raw, TOOLS, got, streamed=True, finish_reason="length")
        assert got["finish_reason"] == "length" and got["tool_calls"]
    # (A whole reply with a call, finished by the model: "tool_calls", as before.)
    assert whole(ask(client, {"text": TWO_CALLS, "finish_reason": "stop"}))["finish_reason"] == "tool_calls"


BACKEND_CALLS = [
    {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}},
    {"id": "c2", "type": "function", "function": {"name": "search_web", "arguments": '{"query": "Paris museums"}'}},
]


def test_a_backends_own_tool_calls_are_passed_on(client) -> None:
    """QA (D27): a backend that reads calls itself (Ollama, vLLM with a tool parser) answers
    with `tool_calls` and empty content; the client got an empty message, "stop", nothing
    else. Its calls are passed on, after those read out of the content, in both modes."""
    want = [{"id": c["id"], "type": "function", "function": c["function"]} for c in BACKEND_CALLS]
    order = {"text": "", "tool_calls": BACKEND_CALLS, "finish_reason": "tool_calls"}
    got = whole(ask(client, order))
    assert got["tool_calls"] == want and got["finish_reason"] == "tool_calls" and not got["errors"]
    got = streamed(client, order)
    assert got["tool_calls"] == want and got["finish_reason"] == "tool_calls" and not got["errors"]
    # The content is read too: its calls first, the backend's after them.
    raw = 'Checking.<tool_call>{"name": "search_web", "arguments": {"query": "Lyon"}}</tool_call>'
    order = {"text": raw, "tool_calls": BACKEND_CALLS[:1], "finish_reason": "tool_calls", "seed": 3}
    for got in (whole(ask(client, order)), streamed(client, order)):
        assert got["content"] == "Checking."
        assert [c["function"]["name"] for c in got["tool_calls"]] == ["search_web", "get_weather"]
        assert got["tool_calls"][1] == want[0] and got["finish_reason"] == "tool_calls"
    # parallel_tool_calls false: the first call of all.
    for got in (whole(ask(client, order, parallel_tool_calls=False)), streamed(client, order, parallel_tool_calls=False)):
        assert [c["function"]["name"] for c in got["tool_calls"]] == ["search_web"] and got["errors"]
    # tool_choice "required" is met by the backend's calls.
    order = {"text": "", "tool_calls": BACKEND_CALLS[1:], "finish_reason": "tool_calls"}
    for got in (whole(ask(client, order, tool_choice="required")), streamed(client, order, tool_choice="required")):
        assert got["tool_calls"] == want[1:] and not got["errors"]


def test_in_think_sends_the_reasoning_the_template_opened_as_reasoning(backend, client) -> None:
    """QA (D23): a DeepSeek-R1 / QwQ reply starts inside the `<think>` its chat template
    wrote; serve sent the reasoning as content and dropped the `</think>`. With --in-think
    it is reasoning_content, as vLLM and SGLang with a reasoning parser give it, whole and
    streamed, with tools or without (and a reply's own `<think>` block is reasoning without
    tools too, as with them)."""
    thought = "The user greets me; no tool needed."
    raw = thought + "\n</think>\n\nHello!"
    call = '<tool_call>{"name": "get_weather", "arguments": {"city": "Oslo"}}</tool_call>'
    proc, url = serve(backend, "--in-think")
    try:
        thinking = openai.OpenAI(base_url=url + "/v1", api_key="unused", max_retries=0, timeout=30)
        for tools in (TOOLS, openai.NOT_GIVEN):
            for got in (whole(ask(thinking, {"text": raw}, tools)), streamed(thinking, {"text": raw, "seed": 2}, tools)):
                assert (got["content"], got["reasoning"], got["finish_reason"]) == ("Hello!", thought, "stop")
        order = {"text": raw + call, "seed": 5}
        for got in (whole(ask(thinking, order)), streamed(thinking, order)):
            assert got["reasoning"] == thought and got["content"] == "Hello!"
            assert [c["function"]["name"] for c in got["tool_calls"]] == ["get_weather"]
    finally:
        stop(proc)
    # Without --in-think the reply is as before: no reasoning opened by the template.
    got = whole(ask(client, {"text": raw}))
    assert got["reasoning"] == "" and thought in got["content"]
    # A reply's own <think> block: reasoning, with tools or without.
    own = "<think>" + thought + "</think>Hello!"
    for tools in (TOOLS, openai.NOT_GIVEN):
        for got in (whole(ask(client, {"text": own}, tools)), streamed(client, {"text": own, "seed": 3}, tools)):
            assert (got["content"], got["reasoning"]) == ("Hello!", thought)


LOOP = [
    {"role": "user", "content": "Weather in Paris?"},
    {"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}]},
    {"role": "tool", "tool_call_id": "call_1", "content": '{"temp": 21}'},
    {"role": "user", "content": "And in Lyon?"},
]  # fmt: skip


def test_prompt_writes_the_tool_loop_as_the_prompt_taught_it(backend) -> None:
    """QA (D16, D6): with --prompt (a chat template without tools) a tool loop's second turn
    was forwarded in OpenAI's structured shape, which such a template cannot show the model
    (an empty assistant turn, a "tool" role it never learnt); and a system message whose
    content is a list of parts, or a developer message, got a second system message before
    it. The calls are written in the format's syntax, the results in its result syntax (or
    a plain block), in a user turn; the tools' prompt merged into the one system message."""
    hermes, hermes_url = serve(backend, "--prompt", "hermes")
    pythonic, pythonic_url = serve(backend, "--prompt", "pythonic")
    try:
        for url, call, result in (
            (hermes_url, '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>',
             '<tool_response>\n{"name": "get_weather", "content": {"temp": 21}}\n</tool_response>'),
            (pythonic_url, '[get_weather(city="Paris")]', 'Result of get_weather (call id call_1):\n{"temp": 21}'),
        ):  # fmt: skip
            prompted = openai.OpenAI(base_url=url + "/v1", api_key="unused", max_retries=0)
            system = [{"type": "text", "text": "You are terse."}]
            for first in ({"role": "system", "content": system}, {"role": "developer", "content": "You are terse."}):
                prompted.chat.completions.create(model="replay", messages=[first, *LOOP], tools=TOOLS)
                sent = httpx.get(backend + "/last").json()["messages"]
                assert [m["role"] for m in sent] == ["system", "user", "assistant", "user"]
                assert sent[0]["content"].endswith("\n\nYou are terse.") and "search_web" in sent[0]["content"]
                assert sent[2] == {"role": "assistant", "content": call}
                assert sent[3] == {"role": "user", "content": result + "\n\nAnd in Lyon?"}
    finally:
        stop(hermes)
        stop(pythonic)
