"""toolgram.openai: completion() of a ParseResult, and CompletionStream's chunks.

Over every corpus case, in several chunkings, the chunks assembled as an OpenAI client
assembles them give completion(parse(raw)): the same content, reasoning, calls (index,
id, name, arguments) and toolgram extension, the withdrawn calls aside. By default
(arguments="as_written") a call's index, id and name are sent once, its arguments as
they come, valid JSON only once it completes; with arguments="whole" (the opt-out) each
call index is sent once, in order, with its id and whole arguments, and never again.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from conftest import corpus_cases
from serve.replay_backend import pieces  # (as the replay backend streams a reply: 1-12 characters a piece)

import toolgram
from toolgram.openai import CompletionStream, completion, message

CASES = corpus_cases()
TOOLS = [
    {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}},
    {"type": "function", "function": {"name": "search_web", "parameters": {"type": "object", "properties": {"query": {"type": "string"}}}}},
]


def assemble(chunks: list[dict[str, Any]]) -> dict[str, Any]:
    """What an OpenAI client makes of the chunks; asserts the stream's contract on the way."""
    content, reasoning, errors, repairs, repeated = [], [], [], [], []
    calls: dict[int, dict[str, Any]] = {}
    finish = [c["choices"][0]["finish_reason"] for c in chunks]
    assert finish[-1] is not None and all(f is None for f in finish[:-1])
    assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
    assert len({c["id"] for c in chunks}) == 1
    for chunk in chunks:
        assert chunk["object"] == "chat.completion.chunk"
        delta = chunk["choices"][0]["delta"]
        content.append(delta.get("content") or "")
        reasoning.append(delta.get("reasoning_content") or "")
        extension = delta.get("toolgram", {})
        errors += extension.get("errors", [])
        repairs += extension.get("repairs", [])
        repeated += extension.get("repeated_ids", [])
        for entry in delta.get("tool_calls", []):
            index = entry["index"]
            assert index not in calls, "a call index was sent twice"
            assert index == len(calls), "call indexes come in order, from 0"
            assert entry["id"] and entry["function"]["name"]
            calls[index] = {k: v for k, v in entry.items() if k != "index"}
    return {
        "content": "".join(content),
        "reasoning": "".join(reasoning),
        "tool_calls": [calls[i] for i in range(len(calls))],
        "errors": errors,
        "repairs": repairs,
        "repeated_ids": repeated,
        "finish_reason": finish[-1],
    }


def expected_of(result: Any, **kw: Any) -> dict[str, Any]:
    choice = completion(result, **kw)["choices"][0]
    msg = choice["message"]
    extension = msg.get("toolgram", {})
    return {
        "content": msg["content"] or "",
        "reasoning": msg.get("reasoning_content", ""),
        "tool_calls": msg.get("tool_calls", []),
        "errors": extension.get("errors", []),
        "repairs": extension.get("repairs", []),
        "repeated_ids": extension.get("repeated_ids", []),
        "finish_reason": choice["finish_reason"],
    }


def run_stream(raw: str, pieces: list[str], tools: Any = None, *, arguments: str = "whole", **kw: Any) -> list[dict[str, Any]]:
    """The chunks of `raw` fed in `pieces`; arguments="whole" (the opt-out, which assemble()
    checks) unless told: the default's chunks are assemble_as_written()'s."""
    stream = CompletionStream(tools, model="m", arguments=arguments, **kw)
    chunks = [c for piece in pieces for c in stream.feed(piece)]
    return chunks + stream.close()


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_stream_assembles_to_the_completion_of_parse(case: Any) -> None:
    options = {"formats": case.formats, "in_think": case.in_think, "truncated": case.truncated}
    result = toolgram.parse(case.raw, case.tools, **options)
    for seed, salt in ((1, ""), (2, "chatcmpl-7f3a")):  # (unsalted: parse()'s ids; salted per response)
        expected = expected_of(result, salt=salt)
        if not result.text.strip():
            expected["content"] = result.text  # (the message says None; the deltas still carry it)
        got = assemble(run_stream(case.raw, pieces(case.raw, seed), case.tools, salt=salt, **options))
        assert got == expected
        ids = [c["id"] for c in got["tool_calls"]]
        assert len(set(ids)) == len(ids), "ids within one message are unique"
    expected = expected_of(result)
    assert expected["errors"] == result.errors
    assert [c["function"]["name"] for c in expected["tool_calls"]] == [c.name for c in result.calls]
    for call, entry in zip(result.calls, expected["tool_calls"]):
        assert json.loads(entry["function"]["arguments"]) == json.loads(json.dumps(call.arguments, default=str))


def test_an_unknown_tool_is_an_error_in_the_extension() -> None:
    raw = 'Let me look.<tool_call>{"name": "book_flight", "arguments": {"to": "Oslo"}}</tool_call>'
    result = toolgram.parse(raw, TOOLS)
    assert not result.calls and result.errors
    msg = message(result)
    assert "tool_calls" not in msg
    assert msg["toolgram"]["errors"] == result.errors and "book_flight" in msg["toolgram"]["errors"][0]
    got = assemble(run_stream(raw, pieces(raw, 3), TOOLS))
    assert got["errors"] == result.errors and got["finish_reason"] == "stop"
    got = assemble_as_written(run_stream(raw, pieces(raw, 3), TOOLS, arguments="as_written"))
    assert got["errors"] == result.errors and got["tool_calls"] == [] and got["finish_reason"] == "stop"


def test_repairs_reach_the_client() -> None:
    raw = '<tool_call>{"name": "search_web", "arguments": {"query": "tides",}}</tool_call>'
    result = toolgram.parse(raw, TOOLS)
    assert result.calls[0].repairs
    assert message(result)["toolgram"]["repairs"] == [{"index": 0, "repairs": list(result.calls[0].repairs)}]
    assert assemble(run_stream(raw, pieces(raw, 4), TOOLS))["repairs"] == message(result)["toolgram"]["repairs"]
    got = assemble_as_written(run_stream(raw, pieces(raw, 4), TOOLS, arguments="as_written"))
    assert got["repairs"] == message(result)["toolgram"]["repairs"]


def test_a_clean_reply_has_no_extension_field() -> None:
    raw = '<tool_call>{"name": "search_web", "arguments": {"query": "tides"}}</tool_call>'
    assert "toolgram" not in message(toolgram.parse(raw, TOOLS))
    for arguments in ("whole", "as_written"):
        assert all("toolgram" not in c["choices"][0]["delta"] for c in run_stream(raw, [raw], TOOLS, arguments=arguments))


def test_parallel_tool_calls_false_keeps_the_first_call() -> None:
    raw = (
        '<tool_call>{"name": "get_weather", "arguments": {"city": "Lima"}}</tool_call>'
        '<tool_call>{"name": "search_web", "arguments": {"query": "Lima"}}</tool_call>'
    )
    result = toolgram.parse(raw, TOOLS)
    assert len(result.calls) == 2
    whole = expected_of(result, parallel_tool_calls=False)
    got = assemble(run_stream(raw, pieces(raw, 5), TOOLS, parallel_tool_calls=False))
    assert got == whole
    assert [c["function"]["name"] for c in got["tool_calls"]] == ["get_weather"]
    assert got["tool_calls"][0]["id"] == result.calls[0].to_openai()["id"]
    assert "parallel_tool_calls" in got["errors"][-1]


def test_a_call_is_sent_by_the_delta_that_ends_it() -> None:
    call = '<tool_call>{"name": "get_weather", "arguments": {"city": "Quito"}}</tool_call>'
    stream = CompletionStream(TOOLS)
    sent_at = None
    for i, piece in enumerate(pieces(call + " and now a long answer." * 20, 6)):
        if any("tool_calls" in c["choices"][0]["delta"] for c in stream.feed(piece)):
            sent_at = i
            break
    assert sent_at is not None, "the call waited for the end of the stream"


def test_identical_calls_get_distinct_ids_as_in_the_message() -> None:
    one = '<tool_call>{"name": "get_weather", "arguments": {"city": "Rome"}}</tool_call>'
    result = toolgram.parse(one + one, TOOLS)
    for salt in ("", "chatcmpl-1"):
        ids = [c["id"] for c in message(result, salt=salt)["tool_calls"]]
        assert len(set(ids)) == 2
        assert [c["id"] for c in assemble(run_stream(one + one, list(one + one), TOOLS, salt=salt))["tool_calls"]] == ids
        got = assemble_as_written(run_stream(one + one, list(one + one), TOOLS, salt=salt, arguments="as_written"))
        assert [c["id"] for c in got["tool_calls"]] == ids


# A model that writes one id for two calls (Kimi K2 numbering each call :0, a repeated MFCS
# call_id or Mistral [CALL_ID]): tool results are keyed by id, so the first keeps it and the
# repeat gets a generated one, said in the extension field (the corpus cases, streamed,
# check that the stream agrees).
REPEATED_IDS = [
    ("kimi_k2/same_id_written_twice", "functions.get_weather:0"),
    ("mfcs/duplicate_call_ids", "1"),
    ("mistral/same_call_id_twice", "abc123456"),
]


@pytest.mark.parametrize("case_id, written", REPEATED_IDS)
def test_a_repeated_model_written_id_is_made_unique(case_id: str, written: str) -> None:
    case = next(c for c in CASES if c.id == case_id)
    result = toolgram.parse(case.raw, case.tools, formats=case.formats)
    assert [c.id for c in result.calls] == [written, written]  # (parse() keeps what was written)
    for salt in ("", "chatcmpl-r"):
        msg = message(result, salt=salt)
        first, second = (c["id"] for c in msg["tool_calls"])
        assert first == written and second.startswith("call_") and second != first
        assert msg["toolgram"]["repeated_ids"] == [{"index": 1, "id": second, "written": written}]
        for arguments in ("whole", "as_written"):
            got = run_stream(case.raw, list(case.raw), case.tools, salt=salt, arguments=arguments)
            assert [t["id"] for c in got for t in c["choices"][0]["delta"].get("tool_calls", []) if "id" in t] == [first, second]


SALTED = [
    # (reply, tools): a generated id, a model-written one, two calls of one tool
    ('<tool_call>{"name": "get_weather", "arguments": {"city": "Rome"}}</tool_call>', TOOLS),
    ('Sure.[TOOL_CALLS]get_weather[CALL_ID]Zx81Qa0pp[ARGS]{"city": "Rome"}', TOOLS),
    (2 * '<tool_call>{"name": "search_web", "arguments": {"query": "a"}}</tool_call>\n', TOOLS),
]


@pytest.mark.parametrize("raw, tools", SALTED)
def test_a_salt_changes_generated_ids_only(raw: str, tools: Any) -> None:
    # Two replies that open with the same call get different ids once each response salts
    # them (an agent keys tool results by id across turns); the whole and the streamed
    # form of one response agree; the model's own ids are kept; no salt gives parse()'s.
    result = toolgram.parse(raw, tools)
    plain = [c.to_openai()["id"] for c in result.calls]
    assert [c["id"] for c in message(result)["tool_calls"]] == plain
    seen = set(plain)
    for salt in ("chatcmpl-a", "chatcmpl-b"):
        ids = [c["id"] for c in completion(result, salt=salt)["choices"][0]["message"]["tool_calls"]]
        for call, got, unsalted in zip(result.calls, ids, plain):
            assert (got == unsalted) is bool(call.id)  # (a model-written id is kept as written)
        assert len(set(ids)) == len(ids)
        generated = {i for i, call in zip(ids, result.calls) if not call.id}
        assert not generated & seen
        seen |= generated
        for seed in (1, 2):
            streamed = assemble(run_stream(raw, pieces(raw, seed), tools, salt=salt))
            assert [c["id"] for c in streamed["tool_calls"]] == ids
            streamed = assemble_as_written(run_stream(raw, pieces(raw, seed), tools, salt=salt, arguments="as_written"))
            assert [c["id"] for c in streamed["tool_calls"]] == ids


def test_completion_shape_and_finish_reason() -> None:
    result = toolgram.parse("Just prose.", TOOLS)
    out = completion(result, model="m", id="chatcmpl-x", created=7, finish_reason="length", usage={"total_tokens": 3})
    assert out["object"] == "chat.completion" and out["id"] == "chatcmpl-x" and out["created"] == 7
    assert out["choices"][0]["finish_reason"] == "length" and out["usage"] == {"total_tokens": 3}
    assert out["choices"][0]["message"] == {"role": "assistant", "content": "Just prose."}


def test_announce_is_not_an_option() -> None:
    with pytest.raises(TypeError):
        CompletionStream(TOOLS, announce="name")


# -- arguments="as_written" ---------------------------------------------------------------


def assemble_as_written(chunks: list[dict[str, Any]]) -> dict[str, Any]:
    """What an OpenAI client makes of arguments="as_written" chunks (a call's first delta has
    its index, id and name, the later ones more of its arguments), with the calls the
    extension field withdraws dropped; asserts the stream's contract on the way."""
    content, reasoning, errors, repairs, repeated, withdrawn = [], [], [], [], [], {}
    calls: dict[int, dict[str, Any]] = {}
    finish = [c["choices"][0]["finish_reason"] for c in chunks]
    assert finish[-1] is not None and all(f is None for f in finish[:-1])
    for chunk in chunks:
        delta = chunk["choices"][0]["delta"]
        content.append(delta.get("content") or "")
        reasoning.append(delta.get("reasoning_content") or "")
        extension = delta.get("toolgram", {})
        errors += extension.get("errors", [])
        repairs += extension.get("repairs", [])
        repeated += extension.get("repeated_ids", [])
        for entry in extension.get("withdrawn", []):
            assert entry["index"] in calls and entry["index"] not in withdrawn and entry["id"] == calls[entry["index"]]["id"]
            withdrawn[entry["index"]] = entry
        for entry in delta.get("tool_calls", []):
            index = entry["index"]
            assert index not in withdrawn, "a withdrawn call got more"
            if index not in calls:
                assert index == len(calls), "call indexes come in order, from 0"
                assert entry["id"] and entry["function"]["name"]
                calls[index] = {"id": entry["id"], "type": "function", "function": {"name": entry["function"]["name"], "arguments": ""}}
            else:
                assert "id" not in entry and "name" not in entry["function"], "a call's id or name sent twice"
            calls[index]["function"]["arguments"] += entry["function"]["arguments"]
    kept = [i for i in sorted(calls) if i not in withdrawn]
    place = {index: n for n, index in enumerate(kept)}  # (the stream's indexes count the withdrawn calls)
    for index, entry in withdrawn.items():  # (what a client that ignores the extension field keeps of it)
        entry["sent"] = calls[index]["function"]["arguments"]
    return {
        "content": "".join(content),
        "reasoning": "".join(reasoning),
        "tool_calls": [calls[i] for i in kept],
        "errors": errors,
        "repairs": [{**r, "index": place[r["index"]]} for r in repairs],
        "repeated_ids": [{**r, "index": place[r["index"]]} for r in repeated],
        "finish_reason": finish[-1],
        "withdrawn": withdrawn,
    }


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_as_written_assembles_to_the_completion_of_parse(case: Any) -> None:
    # Calls withdrawn aside, the client gets what the whole reply's completion holds: the same
    # calls (ids, names, arguments: the deltas concatenated), content, errors and repairs.
    options = {"formats": case.formats, "in_think": case.in_think, "truncated": case.truncated}
    result = toolgram.parse(case.raw, case.tools, **options)
    for seed in (1, 2):
        expected = expected_of(result, salt="chatcmpl-w")
        if not result.text.strip():
            expected["content"] = result.text
        chunks = run_stream(case.raw, pieces(case.raw, seed), case.tools, salt="chatcmpl-w", arguments="as_written", **options)
        got = assemble_as_written(chunks)
        withdrawn = got.pop("withdrawn")
        assert got == expected
        for entry in withdrawn.values():
            assert "withdrawn" in entry["error"]
            assert not is_json(entry["sent"]), "a withdrawn call's arguments that a client could run"


def is_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


@pytest.mark.parametrize(
    "raw",
    [
        # (the arguments whole, then a second "name": not a call)
        '<tool_call>{"name": "get_weather", "arguments": {"city": "Lima"}, "name": "search_web"}</tool_call>',
        # (arguments nested deeper than the decoder reads: not a call either)
        '<tool_call>{"name": "get_weather", "arguments": {"city": ' + "[" * 600 + "]" * 600 + "}}</tool_call>",
    ],
)
def test_as_written_never_sends_a_withdrawn_call_whole(raw: str) -> None:
    # A client that ignores the extension field keeps a withdrawn call in its tool_calls (the
    # openai SDK's stream accumulator does): its arguments must not be a JSON object it could
    # run. The last character of a call's arguments comes with the call's completion.
    assert toolgram.parse(raw, TOOLS).calls == []
    for size in (1, 3, 7, 64):
        got = assemble_as_written(run_stream(raw, [raw[i : i + size] for i in range(0, len(raw), size)], TOOLS, arguments="as_written"))
        assert list(got["withdrawn"]) == [0] and got["tool_calls"] == []
        assert not is_json(got["withdrawn"][0]["sent"])


LONG_CALL = (
    'Saving it.<tool_call>{"name": "write_file", "arguments": {"path": "notes/plan.md", "content": "'
    + "Step by step, the plan for the week: " * 12
    + '", "mode": 420}}</tool_call> Done.'
)


def test_as_written_sends_arguments_before_the_call_ends() -> None:
    tools = ["write_file"]
    stream = CompletionStream(tools, arguments="as_written")
    end = LONG_CALL.index("</tool_call>")
    before, parts, seen = [], [], 0
    for piece in pieces(LONG_CALL, 7):
        for chunk in stream.feed(piece):
            for entry in chunk["choices"][0]["delta"].get("tool_calls", []):
                parts.append(entry["function"]["arguments"])
                if seen + len(piece) <= end:
                    before.append(entry)
        seen += len(piece)
    last = stream.close()
    parts += [e["function"]["arguments"] for c in last for e in c["choices"][0]["delta"].get("tool_calls", [])]
    assert before and before[0]["function"]["name"] == "write_file" and before[0]["id"].startswith("call_")
    assert sum(1 for e in before if e["function"]["arguments"]) > 5, "the arguments waited for the call's end"
    assert "".join(parts) == completion(stream.result)["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"]
    assert last[-1]["choices"][0]["finish_reason"] == "tool_calls"


def test_as_written_withdraws_a_call_that_fails() -> None:
    # Announced by its name, then a stray quote: not a call. An OpenAI stream cannot take the
    # name back: the extension field says the index is withdrawn, the text comes as content
    # with its error, and a call after it takes the next index.
    raw = (
        'Checking. <tool_call>{"name": "get_weather", "arguments": {"city": "Ber"gen"}}</tool_call>'
        ' <tool_call>{"name": "search_web", "arguments": {"query": "Bergen rain"}}</tool_call>'
    )
    result = toolgram.parse(raw, TOOLS)
    assert [c.name for c in result.calls] == ["search_web"] and result.errors
    for seed in range(1, 6):
        chunks = run_stream(raw, pieces(raw, seed), TOOLS, arguments="as_written")
        got = assemble_as_written(chunks)
        assert list(got["withdrawn"]) == [0]
        assert got["errors"] == result.errors and '"Ber"gen"' in got["content"]
        assert [c["function"]["name"] for c in got["tool_calls"]] == ["search_web"]
        sent = [e for c in chunks for e in c["choices"][0]["delta"].get("tool_calls", []) if "id" in e]
        assert [(e["index"], e["function"]["name"]) for e in sent] == [(0, "get_weather"), (1, "search_web")]
        assert got["finish_reason"] == "tool_calls"
    # Only a withdrawn call: the finish reason is not "tool_calls".
    alone = raw[: raw.index("</tool_call>") + len("</tool_call>")]
    got = assemble_as_written(run_stream(alone, pieces(alone, 1), TOOLS, arguments="as_written"))
    assert list(got["withdrawn"]) == [0] and got["tool_calls"] == [] and got["finish_reason"] == "stop"


def test_as_written_with_parallel_tool_calls_false() -> None:
    raw = (
        '<tool_call>{"name": "get_weather", "arguments": {"city": "Lima"}}</tool_call>'
        '<tool_call>{"name": "search_web", "arguments": {"query": "Lima"}}</tool_call>'
    )
    result = toolgram.parse(raw, TOOLS)
    got = assemble_as_written(run_stream(raw, pieces(raw, 5), TOOLS, parallel_tool_calls=False, arguments="as_written"))
    got.pop("withdrawn")
    assert got == expected_of(result, parallel_tool_calls=False)


BLOCK_FIRST_CALL_FAILS = (
    '<minimax:tool_call>\n<invoke name="get_weather">\n<parameter name="city">Lima</parameter>\n'
    '<parameter name="city">Cusco</parameter>\n</invoke>\n<invoke name="search_web">\n'
    '<parameter name="query">Lima museums open on Monday</parameter>\n</invoke>\n</minimax:tool_call>'
)


@pytest.mark.parametrize("parallel", [True, False])
def test_as_written_a_block_whose_first_call_fails(parallel: bool) -> None:
    # Both calls of the block are announced by their name; the first then fails (a key given
    # twice) and is withdrawn; the second stands, with the id parse() gives it. Without
    # parallel calls it was not sent when announced (a call was open): it is the first call
    # kept, sent whole at the block's end.
    raw = BLOCK_FIRST_CALL_FAILS
    result = toolgram.parse(raw, TOOLS)
    assert [c.name for c in result.calls] == ["search_web"] and result.errors
    for seed in (1, 2, 3):
        chunks = run_stream(raw, pieces(raw, seed), TOOLS, parallel_tool_calls=parallel, arguments="as_written")
        got = assemble_as_written(chunks)
        assert list(got.pop("withdrawn")) == [0]
        assert got == expected_of(result, parallel_tool_calls=parallel)


def test_arguments_takes_two_values() -> None:
    with pytest.raises(ValueError):
        CompletionStream(TOOLS, arguments="early")


# -- the default ---------------------------------------------------------------------------


@pytest.mark.parametrize("case", list({c.format: c for c in reversed(CASES) if c.tools is not None}.values()), ids=lambda c: c.id)
def test_the_default_is_as_written(case: Any) -> None:
    # CompletionStream() without `arguments` sends what arguments="as_written" sends, chunk
    # for chunk (a case of every format); "whole" is the opt-out.
    options = {"formats": case.formats, "in_think": case.in_think, "truncated": case.truncated}

    def chunks(**kw: Any) -> list[dict[str, Any]]:
        stream = CompletionStream(case.tools, id="chatcmpl-d", created=1, salt="s", **options, **kw)
        return [c for piece in pieces(case.raw, 3) for c in stream.feed(piece)] + stream.close()

    assert chunks() == chunks(arguments="as_written")
    whole = assemble(chunks(arguments="whole"))
    got = assemble_as_written(chunks())
    got.pop("withdrawn")
    assert got == {**whole, "content": got["content"]}  # (content: a withdrawn call's text comes as content, as parse()'s)
    assert got["content"] == toolgram.parse(case.raw, case.tools, **options).text


def test_finish_reason_is_tool_calls_only_when_a_call_completed() -> None:
    # A reply whose only calls were withdrawn finishes "stop" (the SDK's accumulator still
    # holds their entries, their JSON never complete); one call completed among withdrawn
    # ones: "tool_calls". Over the corpus (test_as_written_assembles_to_the_completion_of_parse)
    # the finish reason is the whole completion's, whose calls are the completed ones.
    failed = '<tool_call>{"name": "get_weather", "arguments": {"city": "Lima"}, "name": "search_web"}</tool_call>'
    good = '<tool_call>{"name": "search_web", "arguments": {"query": "Lima"}}</tool_call>'
    for raw, calls, reason in ((failed, [], "stop"), (failed + failed, [], "stop"), (failed + good, ["search_web"], "tool_calls")):
        for seed in (1, 2, 3):
            got = assemble_as_written(run_stream(raw, pieces(raw, seed), TOOLS, arguments="as_written"))
            assert got["withdrawn"] and [c["function"]["name"] for c in got["tool_calls"]] == calls
            assert got["finish_reason"] == reason
            assert all(not is_json(w["sent"]) for w in got["withdrawn"].values())
        for cut in ("length", "content_filter"):  # (a cut reply's own reason is kept)
            stream = CompletionStream(TOOLS)
            for piece in pieces(raw, 2):
                stream.feed(piece)
            assert stream.close(cut)[-1]["choices"][0]["finish_reason"] == cut


# -- a format's arguments as written -------------------------------------------------------

# (A reply of each format that streams its arguments through a header line, `stream_json`,
# `stream_sep`, `stream_python`: two calls where its region or
# its reply can hold two, each with a long string value. Sent whole, each call's arguments
# would come in one delta at its completion.)
_DAY = "Day one: the fjord ferry at nine, lunch in Flåm, the train up to Myrdal. " * 5
_A, _B = {"path": "a.md", "content": _DAY}, {"path": "b.md", "content": _DAY.upper()}
_JA, _JB = json.dumps(_A, ensure_ascii=False), json.dumps(_B, ensure_ascii=False)


def _objects(a: str = "name", args: str = "arguments") -> tuple[str, str]:
    return (f'{{"{a}": "write_file", "{args}": {_JA}}}', f'{{"{a}": "write_file", "{args}": {_JB}}}')


WRITTEN = {
    "hermes_im_start": "<|im_start|>\n{0}\n<|im_start|>\n<|im_start|>\n{1}\n<|im_end|>".format(*_objects()),
    "fenced_xml": "Writing.\n```xml\n{0}\n```\n```xml\n<function_call>\n{1}\n</function_call>\n```\nDone.".format(*_objects()),
    "gigachat": "Writing.<|message_sep|>\n\nfunction call<|role_sep|>\n{0}".format(*_objects()),
    "granite_20b_fc": "<function_call> {0}\n<function_call> {1}".format(*_objects()),
    "functionary_v32": f"write_file\n{_JA}\n>>>write_file\n{_JB}",
    # (a JSON list of call objects: the object's opener with and without the list's `[`, `} ,` between)
    "granite": "<|tool_call|>[{0}, {1}]".format(*_objects()),
    "nemotron": "Writing.<TOOLCALL>[{0},\n{1}]</TOOLCALL>".format(*_objects()),
    "jamba": "Writing.\n<tool_calls>[{0}, {1}]</tool_calls>".format(*_objects()),
    "apriel": "[BEGIN FINAL RESPONSE]Writing.\n<tool_calls>[{0}, {1}]</tool_calls>[END FINAL RESPONSE]".format(*_objects()),
    "xlam": "[{0}, {1}]".format(*_objects()),
    "xlam_tool_calls": '{{"tool_calls": [{0}, {1}]}}'.format(*_objects()),
    "functools": "functools[{0}, {1}]".format(*_objects()),
    "command_r": "Action:\n```json\n[{0}, {1}]\n```".format(*_objects("tool_name", "parameters")),
    "cohere": '<|START_ACTION|>[{{"tool_call_id": "0", {0}, {{"tool_call_id": "1", {1}]<|END_ACTION|>'.format(
        *(o[1:] for o in _objects("tool_name", "parameters"))
    ),
    "apertus": f'<|tools_prefix|>[{{"write_file": {_JA}}}, {{"write_file": {_JB}}}]<|tools_suffix|>',
    "hermes_response_tools": "<response><tools>{0}</tools></response>\n<response><tools>{1}</tools></response>".format(*_objects()),
    "json_reply": '{{"type": "tool_call", "name": "write_file", "arguments": {0}}}'.format(_JA),
    "plamo3": "Writing.<|plamo:begin_tool_requests:plamo|>"
    + "".join(
        "<|plamo:begin_tool_request:plamo|><|plamo:begin_tool_name:plamo|>write_file<|plamo:end_tool_name:plamo|>"
        f"<|plamo:begin_tool_arguments:plamo|><|plamo:constrain|>json<|plamo:msg|>{args}<|plamo:end_tool_arguments:plamo|>"
        "<|plamo:end_tool_request:plamo|>"
        for args in (_JA, _JB)
    )
    + "<|plamo:end_tool_requests:plamo|>",
    # (GLM's key/value call with its <tool_call> left out: one call, the whole reply; announced
    # once the first <arg_key> follows its name line)
    "glm45_bare": f"write_file\n<arg_key>path</arg_key>\n<arg_value>a.md</arg_value>\n<arg_key>content</arg_key>\n<arg_value>{_DAY}</arg_value>",
    # (the keyword arguments of a Python-style list in a ```python fence: stream_python)
    "fenced_python": f'```python\n[write_file(path="a.md", content="{_DAY}"), write_file(path="b.md", content="{_DAY.upper()}")]\n```',
    # (values in attributes: a value streams where the schema or a `type=` before it says string)
    "bfcl_verbose_xml": "".join(
        f'<functions><function name="write_file"><params><param name="path" type="string" value="{path}"/>'
        f'<param name="content" type="string" value="{content}"/></params></function></functions>\n'
        for path, content in (("a.md", _DAY), ("b.md", _DAY.upper()))
    ),
}
_FORMAT_OF = {"xlam_tool_calls": "xlam"}  # (another shape of one format)
# (Read with formats=[the format]: without it a bare JSON list (xLAM) and `functools[…]` are
# no format's for certain until the reply ends, so their calls come whole then; Apriel's
# block without its reasoning is read as Jamba's.)
NAMED = {"xlam", "xlam_tool_calls", "functools", "apriel"}


@pytest.mark.parametrize("key", sorted(WRITTEN))
def test_a_format_streams_its_arguments_as_written(key: str) -> None:
    # Each call's arguments come in many deltas, sent before the feed that completes it (the
    # one in which arguments="whole" sends it), and complete in that feed, not later; they
    # join to the arguments of parse()'s call; nothing withdrawn; the whole stream is the
    # whole reply's completion.
    raw, tools, fmt = WRITTEN[key], ["write_file"], _FORMAT_OF.get(key, key)
    options = {"formats": [fmt] if key in NAMED else None}
    result = toolgram.parse(raw, tools, **options)
    assert result.calls and {c.format for c in result.calls} == {fmt} and not result.errors
    final = [json.dumps(c.arguments, ensure_ascii=False) for c in result.calls]
    for seed in (1, 2, 3):
        feeds = pieces(raw, seed)
        whole_at: dict[int, int] = {}
        stream = CompletionStream(tools, arguments="whole", **options)
        for n, piece in enumerate([*feeds, None]):
            for chunk in stream.feed(piece) if piece is not None else stream.close():
                for entry in chunk["choices"][0]["delta"].get("tool_calls", []):
                    whole_at[entry["index"]] = n
        sent: dict[int, list[tuple[int, str]]] = {}
        chunks: list[dict[str, Any]] = []
        stream = CompletionStream(tools, arguments="as_written", **options)
        for n, piece in enumerate([*feeds, None]):
            out = stream.feed(piece) if piece is not None else stream.close()
            chunks += out
            for chunk in out:
                for entry in chunk["choices"][0]["delta"].get("tool_calls", []):
                    sent.setdefault(entry["index"], []).append((n, entry["function"]["arguments"]))
        got = assemble_as_written(chunks)
        assert got.pop("withdrawn") == {}
        assert got == expected_of(result)
        assert sorted(sent) == sorted(whole_at) == list(range(len(final)))
        for index, deltas in sent.items():
            assert "".join(text for _, text in deltas) == final[index]
            early = [text for n, text in deltas if n < whole_at[index] and text]
            assert len(early) > 10, f"call {index}: its arguments waited for its completion"
            assert max(n for n, text in deltas if text) <= whole_at[index], f"call {index} completed later than sent whole"


def _streaming_column() -> dict[str, str]:
    """Each built-in format's *streams arguments* cell of the formats table."""
    from toolgram._audit import catalog

    rows = zip(catalog.builtin_formats(), catalog.short_table().splitlines()[2:])
    return {f.name: row.rsplit(" | ", 2)[1].strip() for f, row in rows}


# (The formats that still send a call's arguments whole, at its completion: no header line
# reads their arguments yet, or a stream would withdraw calls it announced early; docs/formats.md says why. A format taken off this list streams
# as written and gets its reply in WRITTEN.)
WHOLE = {"bare_pythonic"}


def test_the_formats_table_says_which_formats_stream_as_written() -> None:
    column = _streaming_column()
    assert {name for name, cell in column.items() if not cell} == WHOLE
    assert all(column[_FORMAT_OF.get(key, key)] in ("yes", "per parameter") for key in WRITTEN)
