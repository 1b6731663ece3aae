"""The public API is what __all__ says, and every name in it is importable."""

import toolgram

PROMISED = {
    "parse", "ParseResult", "ToolCall", "StreamParser", "ProseFilter", "MfcsSession",
    "Text", "Reasoning", "CallStart", "ArgumentsDelta", "CallDone", "Error",
    "validate", "render_prompt", "render_results", "example_call", "register_prompt",
    "normalize_tools", "GrammarError", "formats_table",
}


def test_all_names_exist():
    for name in toolgram.__all__:
        assert hasattr(toolgram, name), name


def test_promised_names_are_public():
    assert PROMISED <= set(toolgram.__all__)
