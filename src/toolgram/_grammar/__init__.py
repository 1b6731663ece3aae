"""Grammar files to compiled formats: headers, the Lark build, the registry."""
