"""Prose and regions: marker search, the scanner's modes, the fast paths."""
