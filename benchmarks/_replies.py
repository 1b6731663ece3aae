"""Replies the benchmarks and tests share: deterministic Hermes-style replies of a given
size (prose with calls between), and one write_file call framed by each XML-ish format."""

from __future__ import annotations

import json
import random

WORDS = "the weather in tokyo is mild and the user wants a forecast for tomorrow so call the tool".split()


def hermes_reply(size: int, seed: int = 0) -> str:
    rng = random.Random(seed)
    parts: list[str] = []
    total = 0
    i = 0
    while total < size:
        prose = " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 30))) + ".\n"
        call = {
            "name": rng.choice(["get_weather", "search_web", "send_email"]),
            "arguments": {"city": rng.choice(["Tokyo", "Paris", "Lima"]), "days": rng.randint(1, 9), "n": i},
        }
        block = "<tool_call>\n" + json.dumps(call) + "\n</tool_call>\n"
        parts += [prose, block]
        total += len(prose) + len(block)
        i += 1
    return "".join(parts)


# XML-ish formats whose value is raw text up to the next tag: (format, before the
# value, after it, whether the value is inside a JSON string). Values holding
# "<" that opens no tag test Driver._lex's resuming of such a token (_loop, _loop_wait):
# tests/test_stream.py and benchmarks/bench_stream_formats.py.
_D = "｜DSML｜"
XMLISH = {
    "qwen3_coder_xml": ("<tool_call>\n<function=write_file>\n<parameter=content>\n", "\n</parameter>\n</function>\n</tool_call>", False),
    "seed_oss_xml": ("<seed:tool_call>\n<function=write_file>\n<parameter=content>", "</parameter>\n</function>\n</seed:tool_call>", False),
    "glm45_arg_kv": ("<tool_call>write_file\n<arg_key>content</arg_key>\n<arg_value>", "</arg_value>\n</tool_call>", False),
    "deepseek_v32_dsml": (
        f'<{_D}function_calls>\n<{_D}invoke name="write_file">\n<{_D}parameter name="content" string="true">',
        f"</{_D}parameter>\n</{_D}invoke>\n</{_D}function_calls>",
        False,
    ),
    "deepseek_v4_dsml": (
        f'<{_D}tool_calls>\n<{_D}invoke name="write_file">\n<{_D}parameter name="content" string="true">',
        f"</{_D}parameter>\n</{_D}invoke>\n</{_D}tool_calls>",
        False,
    ),
    "minimax_m2_invoke": (
        '<minimax:tool_call>\n<invoke name="write_file">\n<parameter name="content">',
        "</parameter>\n</invoke>\n</minimax:tool_call>",
        False,
    ),
    "minicpm5_function_param": ('<function name="write_file"><param name="content">', "</param></function>", False),
    "gemma4_call": ('<|tool_call>call:write_file{content:<|"|>', '<|"|>}<tool_call|>', False),
    "mfcs": ('<mfcs_tool><call_id>1</call_id><name>write_file</name><parameters>{"content": "', '"}</parameters></mfcs_tool>', True),
    "hermes": ('<tool_call>{"name": "write_file", "arguments": {"content": "', '"}}</tool_call>', True),
    "cohere_cofl_xml": (
        '<cofl:tool_calls><cofl:tool_call id="0" name="write_file"><cofl:value name="content" type="raw">',
        "</cofl:value></cofl:tool_call></cofl:tool_calls>",
        False,
    ),
    "kimi_k2": (
        '<|tool_calls_section_begin|><|tool_call_begin|>functions.write_file:0<|tool_call_argument_begin|>{"content": "',
        '"}<|tool_call_end|><|tool_calls_section_end|>',
        True,
    ),
}


def xmlish(fmt: str, value: str) -> str:
    head, tail, json_string = XMLISH[fmt]
    return head + (json.dumps(value)[1:-1] if json_string else value) + tail
