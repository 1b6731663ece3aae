"""Streaming: StreamParser, events' argument echo, ProseFilter, MFCS sessions."""
