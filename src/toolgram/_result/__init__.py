"""What the user gets: ToolCall, ParseResult, Segment; OpenAI shapes."""
