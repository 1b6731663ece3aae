"""Checking a call's arguments against its tool's JSON Schema, in words a model can act on."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from .._guard import passes_through
from .tools import normalize_tools

# One retry should fix everything, so every error is reported, best first, but a model
# fed forty lines of errors fixes none of them: cap the list.
MAX_ERRORS = 5
# jsonschema quotes the offending value in full; a 50 KB argument must not become a
# 50 KB error message.
MAX_PHRASE = 300

_validators: dict[str, Any] = {}
_CACHE_SIZE = 256


def require_jsonschema() -> None:
    """parse(validate=True) and StreamParser(validate=True) ask for checks that only
    jsonschema can make: without it they raise (a configuration error), rather than
    let every call through unchecked."""
    try:
        import jsonschema  # noqa: F401
    except ImportError:
        raise ImportError(
            "validate=True checks arguments with the jsonschema package, which is not installed: "
            "pip install 'toolgram[validate]'"
        ) from None


def validate(call: Any, tools: Any) -> list[str]:
    """Check `call.arguments` against the JSON Schema of the tool it names.

    Returns a list of messages, empty when the arguments are valid. At most one message
    per call, worded for the model, for example::

        Arguments for "add_to_cart" are invalid: 'qty' is a required property.

    Every error jsonschema finds is in that one message (so one retry can fix them all),
    shallowest first, descending into anyOf/oneOf like `best_match`, joined with "; ",
    nested ones prefixed with their path (`items[0].qty: ...`), at most `MAX_ERRORS` of
    them; jsonschema's own wording is kept.

    `call` is a ToolCall, or anything with `name` and `arguments` (attributes or keys,
    including an OpenAI `tool_calls` entry whose arguments are JSON text). `tools` is
    anything `normalize_tools` takes.

    Nothing is checked, and [] is returned, when: the `jsonschema` package is not
    installed (it is optional: `pip install toolgram[validate]`); `tools` is None; the tool
    is not in `tools` (naming an unknown tool is the parser's error to report, not this
    one's); the tool has no schema. JSON Schema `format` is not asserted (it is an
    annotation by default, and whether it is checked would depend on which optional
    packages are installed).

    Never raises. A schema that is not valid JSON Schema (or has a `$ref` that cannot be
    resolved; remote references are never fetched by jsonschema >= 4.18) gives one message
    saying so, since skipping it silently would let every call through unchecked and hide
    the mistake: `Tool "x" has an invalid JSON Schema, so its arguments were not checked: ...`.
    """
    try:
        name, arguments = _name_and_arguments(call)
        if name is None:
            return []
        toolset = normalize_tools(tools)
        schema = toolset.schema(name) if toolset is not None else None
        if schema is None:
            return []
        return _check(name, arguments, schema)
    except Exception as exc:  # never raise: parse(validate=True) must not fail
        if passes_through(exc):
            raise
        return [f'Arguments for "{_call_name(call)}" could not be checked: {type(exc).__name__}.']


def _call_name(call: Any) -> str:
    try:
        name, _ = _name_and_arguments(call)
    except Exception as exc:
        if passes_through(exc):
            raise
        name = None
    return name or "?"


def _name_and_arguments(call: Any) -> tuple[str | None, Any]:
    if isinstance(call, Mapping):
        fn = call.get("function")
        if isinstance(fn, Mapping):  # OpenAI tool_calls entry
            call = fn
        name, arguments = call.get("name"), call.get("arguments", call.get("parameters", {}))
    else:
        name, arguments = getattr(call, "name", None), getattr(call, "arguments", {})
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except ValueError:
            pass  # left as a string: the schema's "type": "object" will say what is wrong
    return (name if isinstance(name, str) else None), arguments


def _check(name: str, arguments: Any, schema: Mapping[str, Any]) -> list[str]:
    try:
        # Imported here: jsonschema is an optional dependency, and importing it costs
        # tens of milliseconds that parse() without validate=True should not pay.
        from jsonschema import exceptions as js_exceptions
    except ImportError:
        return []
    try:
        validator = _validator(schema)
    except js_exceptions.SchemaError as exc:
        return [f'Tool "{name}" has an invalid JSON Schema, so its arguments were not checked: {_shorten(exc.message)}.']
    try:
        errors = list(validator.iter_errors(arguments))
    except Exception as exc:  # an unresolvable $ref, runaway recursion
        if passes_through(exc):
            raise
        reason = _shorten(str(exc).strip() or type(exc).__name__)
        return [f'Tool "{name}" has a JSON Schema that could not be applied, so its arguments were not checked: {reason}.']
    if not errors:
        return []
    phrases: list[str] = []
    for error in _ranked(errors, js_exceptions):
        phrase = _phrase(error)
        if phrase not in phrases:
            phrases.append(phrase)
    shown = phrases[:MAX_ERRORS]
    text = "; ".join(shown)
    if len(phrases) > MAX_ERRORS:
        text += f"; and {len(phrases) - MAX_ERRORS} more"
    return [f'Arguments for "{name}" are invalid: {text}.']


def _validator(schema: Mapping[str, Any]) -> Any:
    from jsonschema import validators

    try:
        key = json.dumps(schema, sort_keys=True, default=repr)
    except Exception as exc:  # not JSON-like, or nested too deeply to key: don't cache
        if passes_through(exc):
            raise
        key = None
    if key is not None and key in _validators:
        return _validators[key]
    # The schema's own "$schema" picks the draft; without one, the newest draft.
    cls = validators.validator_for(schema, default=validators.Draft202012Validator)
    cls.check_schema(schema)
    validator = cls(schema)
    if key is not None:
        if len(_validators) >= _CACHE_SIZE:
            _validators.clear()
        _validators[key] = validator
    return validator


def _ranked(errors: list[Any], js_exceptions: Any) -> list[Any]:
    """Shallowest first (the same preference as jsonschema's `relevance`: an error higher
    up means more is wrong), anyOf/oneOf after plain keywords at the same depth, otherwise
    in the order jsonschema found them; an anyOf/oneOf error is replaced by its best
    sub-error when one stands out, as `best_match` does."""
    ordered = sorted(errors, key=lambda e: (len(e.path), e.validator in ("anyOf", "oneOf")))
    return [js_exceptions.best_match([e]) or e for e in ordered]


def _phrase(error: Any) -> str:
    message = _shorten(str(error.message)).rstrip(".")
    if error.context:
        # anyOf/oneOf with no single best branch: "not valid under any of the given
        # schemas" alone gives the model nothing to fix, so say what each branch wanted.
        subs: list[str] = []
        for sub in error.context:
            text = _shorten(str(sub.message)).rstrip(".")
            if text not in subs:
                subs.append(text)
        message += " (" + "; ".join(subs[:3]) + ("; ..." if len(subs) > 3 else "") + ")"
    path = _path(error.absolute_path)
    return f"{path}: {message}" if path else message


def _path(parts: Any) -> str:
    out = ""
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


def _shorten(text: str) -> str:
    if len(text) <= MAX_PHRASE:
        return text
    # Keep both ends: jsonschema puts the value first and the rule ("is not of type ...") last.
    head = MAX_PHRASE * 2 // 3
    tail = MAX_PHRASE - head - 5
    return f"{text[:head]} ... {text[-tail:]}"
