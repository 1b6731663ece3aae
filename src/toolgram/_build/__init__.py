"""Parse trees to call drafts: the rule vocabulary's meaning, typed by the schema."""
