"""An MFCS reply loop: calls out as they complete, results in, result text back.

What MFCS's AiResponseParser promises, without its failures (see peers.md): every
block is reported, also two in one chunk; ids stay strings (`call_123`); two
calls that share an id each take a result; prose is kept; results are JSON.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..events import CallDone, Text
from .._result.model import ParseResult, ToolCall
from .._pipeline import DEFAULT_MAX_CHARS
from .._tools.prompts import render_results
from .parser import StreamParser

_PENDING = object()


class MfcsSession:
    """One assistant reply in an MFCS tool loop.

        session = MfcsSession(tools, on_call=run_tool, on_results=send_back)
        for chunk in reply_chunks:
            session.feed(chunk)          # on_call(call) fires as each block completes
        session.end()                    # the reply is over
        ...
        session.add_result(call.id, call.name, {"ok": True}, call.kind)
        # once the reply has ended and every call has a result: on_results(text)

    `results_text()` gives the same text: `<tool_result>`, `<agent_result>` and
    `<memory_result>` blocks with one JSON value per call, or None when the reply
    made no calls.
    """

    def __init__(
        self,
        tools: Any = None,
        *,
        on_call: Callable[[ToolCall], Any] | None = None,
        on_results: Callable[[str | None], Any] | None = None,
        formats: Any = ("mfcs",),
        max_chars: int = DEFAULT_MAX_CHARS,
    ) -> None:
        self._parser = StreamParser(tools, formats=list(formats) if formats else None, max_chars=max_chars)
        self._on_call = on_call
        self._on_results = on_results
        self.calls: list[ToolCall] = []
        self._values: list[Any] = []
        self._text: list[str] = []
        self._result: ParseResult | None = None
        self._fired = False

    # -- the reply ----------------------------------------------------------------
    def feed(self, chunk: str) -> list[ToolCall]:
        """Take the next piece of the reply; return (and report) the calls it completed.
        Raises RuntimeError once the reply has ended (end())."""
        if self._result is not None:
            # (Said here, of the session: the stream parser's own message names a
            # StreamParser and flush(), which the caller never called.)
            raise RuntimeError("MfcsSession.feed() after end(): the reply has ended; start a new MfcsSession for the next one")
        return self._take(self._parser.feed(chunk))

    def end(self) -> list[ToolCall]:
        """The reply is complete; return the calls completed by its end."""
        if self._result is not None:
            return []
        calls = self._take(self._parser.flush())
        self._result = self._parser.close()
        self._maybe_fire()
        return calls

    def process_chunk(self, chunk: str, is_last: bool = False) -> list[ToolCall]:
        """MFCS's processChunk(chunk, isLast)."""
        calls = self.feed(chunk)
        if is_last:
            calls += self.end()
        return calls

    @property
    def ended(self) -> bool:
        return self._result is not None

    @property
    def text(self) -> str:
        """The prose of the reply so far."""
        return "".join(self._text)

    @property
    def result(self) -> ParseResult | None:
        """The whole ParseResult, once the reply has ended."""
        return self._result

    # -- the results --------------------------------------------------------------
    def add_result(self, call_id: Any, name: str, result: Any, kind: str = "tool") -> ToolCall:
        """Record the result of a call; returns the call it was matched to.

        The match is the first call of that kind and id (compared as text) that has
        no result yet, so two calls sharing an id each take one. A call the model
        wrote without an id is matched by name. Raises KeyError when no such call
        is waiting for a result.
        """
        wanted = None if call_id is None else str(call_id)
        for i, call in enumerate(self.calls):
            if self._values[i] is not _PENDING or call.kind != kind:
                continue
            if (wanted is not None and call.id == wanted) or (call.id is None and call.name == name):
                self._values[i] = result
                self._maybe_fire()
                return call
        raise KeyError(f"no {kind} call with id {call_id!r} ({name}) is waiting for a result")

    @property
    def pending(self) -> list[ToolCall]:
        """Calls still waiting for a result."""
        return [c for c, v in zip(self.calls, self._values) if v is _PENDING]

    @property
    def ready(self) -> bool:
        """True once the reply has ended and every call has its result."""
        return self._result is not None and not self.pending

    def results_text(self) -> str | None:
        """The text to send back: None when the reply made no calls. Raises
        RuntimeError while the reply is still streaming or results are missing."""
        if self._result is None:
            raise RuntimeError("the reply has not ended: call end() first")
        if self.pending:
            names = ", ".join(f"{c.name} ({c.id})" for c in self.pending)
            raise RuntimeError(f"still waiting for results of: {names}")
        if not self.calls:
            return None
        return render_results(list(zip(self.calls, self._values)), "mfcs")

    # -- internals ---------------------------------------------------------------
    def _take(self, events) -> list[ToolCall]:
        done = []
        for event in events:
            if isinstance(event, Text):
                self._text.append(event.text)
            elif isinstance(event, CallDone):
                self.calls.append(event.call)
                self._values.append(_PENDING)
                done.append(event.call)
                if self._on_call is not None:
                    self._on_call(event.call)
        return done

    def _maybe_fire(self) -> None:
        if not self._fired and self.ready:
            self._fired = True
            if self._on_results is not None:
                self._on_results(self.results_text())
