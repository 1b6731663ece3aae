"""Values that quote markup, in the XML-ish formats (Qwen3-Coder, Seed-OSS, MiniMax M2,
dots.llm, DeepSeek DSML V3.2, MiniCPM5, GLM, Step-3): one `write` call whose `content`
quotes calls and tags, then a `mode` argument after it, at growing lengths of plain text
after the quoted part (QA8 Q2, Q8, Q9, Q11: read right only within 320 characters).

    python benchmarks/quoted_markup.py [--pads 50,400,2000] [--show N]

The shapes, for each host format: two calls of its own format quoted inline and on
their own lines, ten of them; one call of each other format quoted in its block (and
one in a fenced ```xml block), ten of them, ten bare `<invoke>` calls; the value's own
close tag on a line of its own; another spelling's `<parameter name="k">v</parameter>`
at the value's start; and (--long) one and two quoted calls of each other format whose
own argument is 680 characters long. Right means: one call, `write`, its `content`
exactly the quoted text, `mode` read, no repair, no error, no text. Each reply is also
streamed in 1-, 7- and 64-character deltas: its calls, text and errors must equal
parse()'s. Prints the wrong shapes (--show of them) and the count; exit status 1 when a
stream differs from parse().
"""

from __future__ import annotations

import argparse
import sys

import toolgram
from toolgram import StreamParser

_D = "｜DSML｜"
_STEP = "<｜tool_calls_begin｜><｜tool_call_begin｜>{}<｜tool_call_end｜><｜tool_calls_end｜>"

# host format -> (the write call around a content, a quoted `rm` call of the format)
HOSTS = {
    "qwen3_coder_xml": (
        lambda c: f"<tool_call>\n<function=write>\n<parameter=content>\n{c}\n</parameter>\n<parameter=mode>\nw\n</parameter>\n</function>\n</tool_call>",
        "<tool_call>\n<function=rm>\n<parameter=path>\n/\n</parameter>\n</function>\n</tool_call>",
        "</parameter>",
    ),
    "seed_oss_xml": (
        lambda c: f"<seed:tool_call>\n<function=write>\n<parameter=content>{c}</parameter>\n<parameter=mode>w</parameter>\n</function>\n</seed:tool_call>",
        "<seed:tool_call>\n<function=rm>\n<parameter=path>/</parameter>\n</function>\n</seed:tool_call>",
        "</parameter>",
    ),
    "minimax_m2_invoke": (
        lambda c: f'<minimax:tool_call>\n<invoke name="write">\n<parameter name="content">{c}</parameter>\n<parameter name="mode">w</parameter>\n</invoke>\n</minimax:tool_call>',
        '<minimax:tool_call>\n<invoke name="rm">\n<parameter name="path">/</parameter>\n</invoke>\n</minimax:tool_call>',
        "</parameter>",
    ),
    "dots_invoke": (
        lambda c: f'<dots_function_call>\n<invoke name="write">\n<parameter name="content">{c}</parameter>\n<parameter name="mode">w</parameter>\n</invoke>\n</dots_function_call>',
        '<dots_function_call>\n<invoke name="rm">\n<parameter name="path">/</parameter>\n</invoke>\n</dots_function_call>',
        "</parameter>",
    ),
    "deepseek_v32_dsml": (
        lambda c: f'<{_D}function_calls>\n<{_D}invoke name="write">\n<{_D}parameter name="content" string="true">{c}</{_D}parameter>\n<{_D}parameter name="mode" string="true">w</{_D}parameter>\n</{_D}invoke>\n</{_D}function_calls>',
        f'<{_D}function_calls>\n<{_D}invoke name="rm">\n<{_D}parameter name="path" string="true">/</{_D}parameter>\n</{_D}invoke>\n</{_D}function_calls>',
        f"</{_D}parameter>",
    ),
    "minicpm5_function_param": (
        lambda c: f'<function name="write"><param name="content">{c}</param><param name="mode">w</param></function>',
        '<function name="rm"><param name="path">/</param></function>',
        "</param>",
    ),
    "glm45_arg_kv": (
        lambda c: f"<tool_call>write\n<arg_key>content</arg_key><arg_value>{c}</arg_value>\n<arg_key>mode</arg_key><arg_value>w</arg_value>\n</tool_call>",
        "<tool_call>rm\n<arg_key>path</arg_key><arg_value>/</arg_value>\n</tool_call>",
        "</arg_value>",
    ),
    "step3_steptml": (
        lambda c: _STEP.format(f'<steptml:invoke name="write"><steptml:parameter name="content">{c}</steptml:parameter><steptml:parameter name="mode">w</steptml:parameter></steptml:invoke>'),
        _STEP.format('<steptml:invoke name="rm"><steptml:parameter name="path">/</steptml:parameter></steptml:invoke>'),
        "</steptml:parameter>",
    ),
}
# Another spelling's parameter, at the start of a value of each host.
_FOREIGN_PARAM = {
    "minimax_m2_invoke": f'<{_D}parameter name="k" string="true">v</{_D}parameter>',
    "dots_invoke": f'<{_D}parameter name="k" string="true">v</{_D}parameter>',
}
_BARE_INVOKE = '<invoke name="rm"><parameter name="p">/</parameter></invoke>'


def pad(n: int) -> str:
    """Plain lines of text, at least n characters."""
    lines = []
    i = 0
    while sum(map(len, lines)) < n:
        lines.append(f"line {i} of the text\n")
        i += 1
    return "".join(lines)


def shapes(host: str, n: int, long: bool):
    _, own, close = HOSTS[host]
    yield "two_own_lines", "Example: " + own + "\n" + own + "\nmore text " + pad(n)
    yield "two_own_inline", "Example: " + own + " " + own + " then " + pad(n)
    yield "ten_own", "Example:\n" + (own + "\n") * 10 + "more text " + pad(n)
    for other, (_, quote, _) in HOSTS.items():
        if other != host:
            yield "one_" + other, "Example:\n" + quote + "\n" + pad(n)
            yield "ten_" + other, "Example:\n" + (quote + "\n") * 10 + pad(n)
    yield "fenced", "Example:\n```xml\n" + HOSTS["minimax_m2_invoke"][1] + "\n```\n" + pad(n)
    yield "ten_bare_invokes", "Example:\n" + (_BARE_INVOKE + "\n") * 10 + pad(n)
    yield "own_close_line", 'DOC = """\n' + close + '\n"""\n' + pad(n)
    yield "other_spelling_param", _FOREIGN_PARAM.get(host, '<parameter name="k">v</parameter>') + " " + pad(n)
    if long:
        arg = "long quoted text " * 40
        for other, (_, quote, _) in HOSTS.items():
            if other != host:
                q = quote.replace(">/<", ">" + arg + "<").replace("\n/\n", "\n" + arg + "\n")
                yield "long_arg_" + other, "Example:\n" + q + "\nafter"
                yield "two_long_arg_" + other, "Example:\n" + q + "\n" + q + "\nafter"


def _key(r) -> tuple:
    return [(c.name, c.arguments, c.repairs) for c in r.calls], r.text, r.errors


def check(host: str, content: str) -> tuple[bool, bool, object]:
    """(read right, stream equal, parse()'s result)."""
    raw = HOSTS[host][0](content)
    tools = ["write", "rm"]
    r = toolgram.parse(raw, tools=tools)
    right = (
        len(r.calls) == 1 and r.calls[0].name == "write" and r.calls[0].arguments.get("content") == content
        and r.calls[0].arguments.get("mode") == "w" and not r.calls[0].repairs and not r.errors and not r.text.strip()
    )  # fmt: skip
    same = True
    for k in (1, 7, 64):
        sp = StreamParser(tools=tools)
        for i in range(0, len(raw), k):
            sp.feed(raw[i : i + k])
        sp.flush()
        if _key(sp.close()) != _key(r):
            same = False
    return right, same, r


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pads", default="50,400,2000", help="lengths of text after the quoted part")
    ap.add_argument("--long", action="store_true", help="also quoted calls whose own argument is long")
    ap.add_argument("--show", type=int, default=20, help="wrong shapes to print")
    args = ap.parse_args()
    wrong = differ = total = 0
    for n in map(int, args.pads.split(",")):
        for host in HOSTS:
            for name, content in shapes(host, n, args.long and n == int(args.pads.split(",")[0])):
                right, same, r = check(host, content)
                total += 1
                wrong += not right
                differ += not same
                if (not right or not same) and wrong + differ <= args.show:
                    calls = "; ".join(f"{c.name} {sorted(c.arguments)} {list(c.repairs)}" for c in r.calls)
                    print(f"{'wrong' if not right else 'right'}{'' if same else ' STREAM != PARSE'}  pad {n}  {host}  {name}: {calls} | errors {len(r.errors)} | text {r.text[:40]!r}")
    print(f"{total} replies: {wrong} read wrong, {differ} streams differ from parse()")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
