"""Tools: the tool set, schema validation, prompts."""
