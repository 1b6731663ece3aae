"""One region under one grammar: the incremental LALR driver."""
