"""System prompts that ask a model for calls in a format, and tool results rendered
back in it.

    from toolgram.prompts import render_prompt, render_results, example_call, render_call

render_call writes calls in a format's canonical form (the form toolgram.constrain allows).
"""

from ._constrain.canonical import render_call
from ._tools.prompts import PROMPT_FORMATS, example_call, register_prompt, render_prompt, render_results

__all__ = ["PROMPT_FORMATS", "example_call", "register_prompt", "render_call", "render_prompt", "render_results"]
