"""Attribute grammars: compositional sentence sets whose sentences carry their conditions.

>>> from lbee.grammar import load_grammar, generate
>>> g = load_grammar("spotcheck")
>>> g.render({("square", "size"): "normal", ("square", "color"): "blue", ("circle", "presence"): "false"})
'An image with a large blue square but no circle'
"""

from ._generate import count_conjunctions, embedded_atoms, generate
from ._grammar import (
    FALSE,
    PRESENCE,
    TRUE,
    Attribute,
    Grammar,
    Subject,
    format_conditions,
    grammar_yaml,
    parse_conditions,
)
from ._reader import (
    INVISIBLE,
    MAX_WORDS_CHARS,
    builtin_grammar_dir,
    line_break_in,
    list_grammars,
    load_grammar,
    parse_grammar,
    said_alike,
)

__all__ = [
    "FALSE",
    "INVISIBLE",
    "MAX_WORDS_CHARS",
    "PRESENCE",
    "TRUE",
    "Attribute",
    "Grammar",
    "Subject",
    "builtin_grammar_dir",
    "count_conjunctions",
    "embedded_atoms",
    "format_conditions",
    "generate",
    "grammar_yaml",
    "line_break_in",
    "list_grammars",
    "load_grammar",
    "parse_conditions",
    "parse_grammar",
    "said_alike",
]
