"""How a grammar's words name its subjects: whether a clause says a subject's noun, and the index key of a noun.

A clause such as "where the square is partly hidden" names the square: the presence it implies goes unsaid
(`lbee.grammar.Grammar.render`). Both sides are compared as `said_alike` compares two words (NFKC-normalised,
case-folded: "café" with a combining accent is "café", "ﬁsh" is "fish", "STRASSE" is "straße"). `_says` decides
by a pattern; `_word_key` lets the grammar find the few subjects a clause may name without trying every one.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache


def said_alike(words):
    """The form in which two words are compared: NFKC-normalised and case-folded.

    "café" written with a combining accent (NFD) and precomposed (NFC) look the same, and so do "ﬁne" and
    "fine" once a tokenizer normalises them: two values said so would give sentences that cannot be told apart.
    """
    return unicodedata.normalize("NFKC", words).casefold()


def _alike(words):
    """``words`` as `said_alike` compares them, then NFKC again (a folded "İ" is "i" and a combining dot)."""
    return unicodedata.normalize("NFKC", said_alike(words))


@lru_cache(maxsize=65_536)
def _pattern(noun, definite):
    """The compiled pattern of a (normalised) noun: kept, since a grammar tries one noun against many clauses."""
    # a word ends where no word character follows (not at a `\b`: a noun may end in a combining mark, "बिल्ली")
    before = r"(?<!\w)(?:the|where an?|where)\s+(?:\w+\s+)?" if definite else r"(?<!\w)"
    return re.compile(rf"{before}{re.escape(noun)}(?:s|es)?(?!\w)")


def _says(subject, words, noun=None, *, definite=False):
    """Whether ``words`` name ``subject`` (its noun, or its plural; or the last word of ``noun``, a value's noun).

    ``definite``: only as the clause's own subject, "the <noun>" or "where a <noun>" (a word may stand between: "the
    red square"), not as an object ("behind another product").
    """
    names = {subject.noun} | ({noun.split()[-1]} if noun else set())
    text = _alike(words)
    return any(_pattern(_alike(n), definite).search(text) for n in names)


def _word_key(text):
    """The words of ``text`` as `_says` compares them, a tuple: an index key of nouns (`_may_say`).

    Each run of word characters is one item, and so is each other character that is not a space ("red-box" and
    "red.box" are two keys). A noun the pattern of `_says` finds in some words has the same key as a run of the
    words' own items (sweep 32bb: 2,000 non-ASCII nouns tried for every clause took minutes; sweep 32bd: 2,000
    nouns told apart only by their punctuation, one key, took as long).
    """
    return tuple(re.findall(r"\w+|[^\w\s]", _alike(text)))
