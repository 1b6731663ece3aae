"""The user's and maintainer's tools: explain, check, cases, the formats table, the CLI."""
