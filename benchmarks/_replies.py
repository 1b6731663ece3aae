"""Deterministic Hermes-style replies of a given size: prose with calls between."""

from __future__ import annotations

import json
import random

WORDS = "the weather in tokyo is mild and the user wants a forecast for tomorrow so call the tool".split()


def hermes_reply(size: int, seed: int = 0) -> str:
    rng = random.Random(seed)
    parts: list[str] = []
    total = 0
    i = 0
    while total < size:
        prose = " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 30))) + ".\n"
        call = {
            "name": rng.choice(["get_weather", "search_web", "send_email"]),
            "arguments": {"city": rng.choice(["Tokyo", "Paris", "Lima"]), "days": rng.randint(1, 9), "n": i},
        }
        block = "<tool_call>\n" + json.dumps(call) + "\n</tool_call>\n"
        parts += [prose, block]
        total += len(prose) + len(block)
        i += 1
    return "".join(parts)
