"""How a grammar's words name its subjects: whether a clause says a subject's noun, and the index key of a noun.

A clause such as "where the square is partly hidden" names the square: the presence it implies goes unsaid
(`lbee.grammar.Grammar.render`). `_says` decides by a case-blind pattern; `_word_key` lets the grammar find the
few subjects a clause may name without trying every one.
"""

from __future__ import annotations

import re


def _says(subject, words, noun=None, *, definite=False):
    """Whether ``words`` name ``subject`` (its noun, or its plural; or the last word of ``noun``, a value's noun).

    ``definite``: only as the clause's own subject, "the <noun>" or "where a <noun>" (a word may stand between: "the
    red square"), not as an object ("behind another product").
    """
    names = {subject.noun} | ({noun.split()[-1]} if noun else set())
    before = r"\b(?:the|where an?|where)\s+(?:\w+\s+)?" if definite else r"\b"
    return any(re.search(rf"{before}{re.escape(n)}(s|es)?\b", words, re.IGNORECASE) for n in names)


def _fold(char):
    """One character for each class that ``re.IGNORECASE`` takes for one another.

    "İ", "i" and "ı" are one class, "ſ" and "s" another, "ς" and "σ" a third; checked over every code point in
    tests/test_sweep32ay.py. The class of "ι" holds U+0345, a combining mark that is no letter: a pattern's word
    ends there, so the whole class is read as a space, never as a letter (sweep 32bc: "box\u0345" named no box).
    """
    folded = char.lower()[0].upper().lower()[0]
    return " " if folded == "ι" else folded


def _word_key(text):
    """The words of ``text`` as `_says` compares them, case folded, a tuple: an index key of nouns (`_may_say`).

    A noun the pattern of `_says` finds in some words has the same key as a run of the words' own (non-ASCII
    nouns were tried for every clause: 2,000 of them took minutes, sweep 32bb).
    """
    return tuple(re.findall(r"\w+", "".join(_FOLDED.get(c) or _FOLDED.setdefault(c, _fold(c)) for c in text)))


_FOLDED: dict[str, str] = {}  # _fold's answers (a grammar's words use few distinct characters)
