"""Recovery: lenient JSON, loose (Gemma-style) arguments."""
