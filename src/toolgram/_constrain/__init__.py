"""Constrained decoding: the grammar that reads a format, turned into one a sampler enforces
(toolgram.constrain), and the calls written as the format's template writes them
(toolgram.prompts.render_call). Both come from the format's canonical form, declared in its
grammar file's header (grammars/README.md, "The canonical form")."""
