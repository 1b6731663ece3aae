"""Every repair a call can record, with one line on what the model did: the only
list of repair names. docs/repairs.md's table is generated from it
(`python -m toolgram._audit.catalog --write-readme`), and tests/test_catalogues.py
checks that each repair name the code can record is here and each one here is
recorded somewhere. Rows that share their explanation name several repairs.
"""

from __future__ import annotations

# (names, what the model did: Markdown, one table cell)
REPAIRS: tuple[tuple[tuple[str, ...], str], ...] = (
    (('closed_tag',),
     'left a call open: it runs to the next call or the end, and the missing markers are supplied (a misspelled `</parmeter>` before the next parameter is dropped as markup; a value\'s close left out, then the call\'s close and prose on its line, `Oslo</tool_call> Done.`: the value ends at that close, the prose is text). Alone, it closed only tags around complete values; a value the end of the reply cut is `cut_value` too'),
    (('quoted_key',),
     'wrote an XML-ish parameter\'s name in quotes or as an attribute (`<parameter="city">`, `<parameter name="city">` in Qwen\'s `<function=…>` block), or the function\'s own (`<function="get_weather">`, `<function name="get_weather">`)'),
    (('opened_tag',),
     "left out an open tag (GLM's `<arg_value>`: the value follows `</arg_key>` directly; DeepSeek V3.1's `<｜tool▁call▁begin｜>` before a later call in the section: `<｜tool▁call▁end｜> and write_file<｜tool▁sep｜>{…}`)"),
    (('dropped_partial_argument',),
     'was cut off before an argument\'s value began (`<parameter name="`, `<arg_key>d`, GLM\'s `<arg_key>unit</arg_key>` or with its value\'s open tag cut short, `<arg_key>unit</arg_key><arg_valu`, Kimi K3\'s `<|open|>argument key="days" type="number"` with or without its `<|sep|>`, or a part of it, `f(a=1, b=`; with `cut_value`), wrote a key whose value never began before the next key or the call\'s close (GLM\'s `<arg_key>title</arg_key><arg_key>date</arg_key>`), or wrote an argument with neither key nor value: the call is kept without it, not with an empty value'),
    (('closed_bracket',),
     'wrote the end marker before closing its brackets (`[f(a=1)<\\|tool_call_end\\|>`)'),
    (('closed_json',),
     'stopped mid-JSON: open strings and brackets are closed, a dangling key or comma dropped, a partial literal completed; also where the JSON stops unfinished right before a marker (a brace left out before the call\'s end marker or the next call: `{"city": "Paris"<\\|tool_call_end\\|>`). Where the reply ended there, alone it closed only brackets around complete values (`{"city": "Paris"`); what the end cut short is `cut_value` too'),
    (('cut_value',),
     'was cut off by the end of the reply (the token limit, or `max_chars`) inside a value, or before one began: a string left open (`{"city": "Par`), a number or a word running to the very end (`12` may have been `1250`), a key or a parameter with no value (dropped: `dropped_partial_argument`), an XML-ish value whose close tag never came (Qwen\'s `<parameter=command>rm -rf /`), a `,` or an opening bracket with nothing after it (or a Gemma string whose opening `<\\|"\\|>` the end cut, `content:<\\|"`: an empty string, not that piece of markup, or a close the end cut as it was being written (`Day one.</param` of `</parameter>`, `<\\|close\\|>argument<\\|se`, Gemma\'s `<\\|"`, with the closes written whole before it, `Day one.</arg_value></tool_ca`), which is markup, not the value\'s text (unless it closes a tag the value itself opened, `Use <parameter=x>y</param`): the value is framed as closed there, and is still `cut_value`, as that piece may have been its own (`<p>hi</p`)), or a call whose arguments never began (`get_weather(`, gpt-oss cut before or right after `<\\|message\\|>`: `{}`). What was written is kept, but it is likely not what the model meant; with `truncated="error"` the call is an error that asks for it again ([below](#calls-the-end-of-the-reply-cut))'),
    (('missing_bracket',),
     'left a bracket open inside the JSON: a list\'s next object starts (`[{"name": "a", "arguments": {…}, {"name": "b", …}]`), or a bracket further out closes (`[{"name": "a", "arguments": {…}]`)'),
    (('trailing_comma', 'single_quotes', 'python_literals', 'unquoted_keys', 'missing_comma', 'extra_bracket', 'comments'),
     'one lenient pass over JSON that `json.loads` refused (`comments`: `// …` and `/* … */` outside strings). `missing_comma` also where a list of Python calls has no comma between two calls (a line break, a space or a `;`: `[f(a=1)\\ng(b=2)]`): both are read, the first records it. Gemma 4 arguments record `trailing_comma` and `extra_bracket` the same way (`{tags:[1,2,]}`, `{i:1,}`; `call:f{i:1}}<tool_call|>`: the closer too many is dropped, not prose)'),
    (('parameters_key', 'arguments_key'),
     'used `parameters` where the format says `arguments` (`parameters_key`), or `arguments` where it says `parameters`, or another key: `args`, `input`, `params`, `kwargs`, `tool_input`, `argument`, `tool_args` (`arguments_key`)'),
    (('flat_arguments',),
     'wrote the arguments beside the name, with no arguments key (`{"name": "f", "city": "Paris"}`): every key but the call\'s own (`name`, `id`, `call_id`, `type`, `function`, …) is an argument. A key the offered tool\'s schema declares as a parameter is an argument even so (`{"name": "get_order", "id": "A-17"}` for a `get_order(id)`: not the call\'s id), and so is a `type` that names no kind of call (`"type": "admin"`, not `function` or `tool_call`), schema or not. In a fence or as the whole reply, where no call marker says it is a call, only for an offered name or an object that says `"type": "tool_call"`: `{"name": "Alice", "age": 30}` there is data, and stays prose'),
    (('dropped_key',),
     'wrote a key in a call object beside its arguments that is neither the call\'s own (`name`, `id`, `call_id`, `function`, `index`, a `type` that says it is a call) nor the arguments (`{"name": "f", "arguments": {"a": 1}, "extra": 1}`): no part of the call, it is dropped, and said so; an empty one (`null`, `""`) says nothing and records nothing. With no arguments key, such keys are the arguments (`flat_arguments`)'),
    (('non_finite_number',),
     'wrote `NaN`, `Infinity` or a number too large for a float (`1e999`), which JSON cannot hold: it becomes `null`, so arguments are always JSON'),
    (('several_objects',),
     "wrote several call objects one after another, not in a list (`{…}\\n{…}` in a fence, Llama 3's `{…}; {…}`): each is a call, and a remark after them before the close tag (`{…}\\n{…} and that is all</tool_call>`) is prose"),
    (('string_arguments',),
     'encoded the arguments object as a JSON string. The string ends where the model stopped writing the arguments: a value cut short inside it (`"arguments": "{\\"ticker\\": \\"AA"`) is `cut_value` too, a brace left out only `closed_json`'),
    (('repeated_marker',),
     'wrote the call\'s opener twice before it (`<tool_call>\\n<tool_call>{…}`, `<\\|tool_call_start\\|><\\|tool_call_start\\|>[…]`, a section\'s begin twice): the first is markup, dropped, never prose. A closer written again right after its call (`</tool_call></tool_call>`, blanks between) is markup too, never prose; the call records no repair for it, as a stream has sent the call when it comes. So is an inner closer written twice (`</function>` or `</invoke>` twice in its block, a value\'s close twice on two lines, `1</parameter>\\n</parameter>`, the first ending an inline value or starting its line): the call is whole, no error ([formats](formats.md#markers-inside-values))'),
    (('stray_text',),
     "wrote text inside a call outside any argument's value, with the call going on after it (Cohere cofl's `Paris</cofl:value> or Lyon</cofl:tool_call>`, `</cofl:value>.\\n<cofl:value name=\"unit\" …>`): it is no value's text and no prose, so it is dropped; the values around it are read as written. Text after a value's close with no value or close of the call after it is prose after a call whose closes were left out (`closed_tag`)"),
    (('cut_by_max_chars',),
     '(not the model) the call ran past `max_chars` and was repaired as a cut-off call: its arguments are likely incomplete (a long `write_file` content); raise `max_chars` or pass `None` before acting on it'),
    (('escaped_underscores',),
     'wrote a name Markdown-escaped, as chat models do (`get\\_weather`, in a JSON call\'s `"name"` too): read as `get_weather`. In a JSON string value (`"file": "my\\_notes.md"`), where `\\_` is no escape, the backslash is kept as written'),
    (('invalid_escape',),
     'wrote a backslash in a JSON string that starts no JSON escape (`"C:\\apps\\data"`, `"\\d+"`, `\\x41`, `\\U0001F642`): the backslash is the model\'s own, kept with the character after it (`C:\\apps` is not a bell and `pps`); `\\\'` is read as the quote. A Python value\'s strings, and \'single-quoted\' ones, read Python\'s escapes (`\\N{DEGREE SIGN}` too); line breaks and tabs written raw in a string are what the model wrote, and read so, with no repair'),
    (('name_outside_json',),
     'wrote the name before the arguments\' object, not in it (`<tool_call>get_weather\\n{"city": "Paris"}</tool_call>`; not in a fence, whose first word is its language)'),
    (('pythonic_payload',),
     'wrote Python-style calls between a JSON format\'s markers (`<tool_call>get_weather(city="Paris")</tool_call>`, or a list of them): read as the pythonic formats read them'),
    (('fenced_payload',),
     "wrapped the JSON between the call's markers in a markdown fence (`<tool_call>```json {…} ```</tool_call>`)"),
    (('unquoted_string',),
     'wrote a bare word or an expression as a Python argument value (`unit=celsius`, `element=QName("a", "b")`): kept as its text (Python\'s own literals are read as Python reads them, with no repair: `"""…"""` and `\'\'\'…\'\'\'`, raw `r"\\d+"`, `"x" "y"` joined, `1_000`, floats JSON refuses: `.5` is 0.5, `5.` is 5.0, in a list too); text whose brackets do not pair (`city="Par"is")]`, a stray quote that ran over the call\'s closing brackets) is an error instead'),
    (('apostrophe',),
     "wrote an apostrophe inside a single-quoted string (`text='It's fresh'`): a quote with a letter or digit right after it does not end the string"),
    (('mismatched_quote',),
     'closed a quoted value with the other quote (`city=\'Paris")`, `city="Paris\', unit="c"`; in JSON, `{"city": \'Paris", "unit": "c"}`): where that quote, the first of its kind in the string (not escaped, not an apostrophe), is followed by what ends the value (in a Python call, `)` then the next call, the list\'s `]`, a marker, the line\'s end or the end of the reply, or `,` and the next keyword; in JSON, `,` and the next key, or a closer), it closes the string, unless the string as written reads as a whole value (`text=\'x"), g(y=1)\'`; in JSON, its own quote followed by `,`, a closer or the next key after a missing comma, `"a\', \'b\': \'c" "n": 1`), or is a "JSON string" whose own quote never closes (the text ends inside it, `{"a": "it\'}`: `closed_json`; but where the value\'s brackets close after that quote and prose follows them, the value ends there, in a payload with no end marker too: `[TOOL_CALLS]f[ARGS]{"a": "x\'} Then it\'s fine.` reads as `<tool_call>{…"x\'}}</tool_call> Then it\'s fine.` does). Read on past it, the next argument or call was swallowed into the value'),
    (('stray_quote',),
     'wrote a quote too many right after a quoted Python argument value\'s close, before what ends the value and its call (`text=\'hi\' ")`, `text="hi"")]`, as for `mismatched_quote`): the quote is read past. Python would read a string that never closes, the call\'s closing brackets and the format\'s end marker in it. A stray quote inside a value (`city="Par"is"`) stays an error (`unescaped_quotes`)'),
    (('unescaped_quotes',),
     'wrote a quoted Python argument value with its own quote inside it, unescaped (`command=\'grep -rn \'TODO\' src/\'`, `command="echo "hi" there"`): the value ends at the first such quote followed by `)` or by `,` and a keyword (`, timeout=`), and is read whole when the quotes inside it pair up as quoted words (`\'TODO\'`, `"hi"`). A string whose opening quote is still open where the value ends, its own quotes inside it pairing up after that one (a call quoted in the value, its close left out: `city="Paris <tool_call>{"name": "s"}</tool_call>` then the next line), is its text after that quote, as a string the end cut (`closed_json` too; a stream has sent that text as it came). A quote that nothing pairs (`city="Par"is"`, or cut after the comma that follows it: `city="Par"is",`) is a stray one: the call cannot be read, and the error names the argument (bare calls that are the whole reply stay prose, as anything they cannot read, but for the error: told, up to the end of its line, where tools are given and an offered tool is called there, `f(a="x"y"); g(b=2)` with `f` offered, and so in either order, `g(b=2); f(a="x"y")`, where no offered name is written elsewhere, issue 19; without tools they stay silent prose); it is never a call without that argument. Gemma 4 and FunctionGemma strings the same: their quote token (FunctionGemma\'s `<escape>`) inside a delimited string, where no `,` and a key, closer or end follows it, is the string\'s text when a later one is so followed (`query:<escape>the <escape>best<escape> pizza<escape>,limit:5`); where none is, the error names the argument'),
)

NAMES = frozenset(name for names, _ in REPAIRS for name in names)

START = "<!-- repairs:start -->"
END = "<!-- repairs:end -->"


def repairs_table() -> str:
    """docs/repairs.md's table, ending with a newline."""
    rows = ["| repair | what the model did |", "|---|---|"]
    rows += ["| " + ", ".join(f"`{n}`" for n in names) + f" | {what} |" for names, what in REPAIRS]
    return "\n".join(rows) + "\n"
