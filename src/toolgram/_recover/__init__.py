"""Recovery: the lenient JSON reader (repair.py) and the catalogue of repair names (catalog.py)."""
