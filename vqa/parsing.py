"""Reading a free-text VQA answer as yes / no."""

from __future__ import annotations

import re

_YES = {"yes", "yeah", "yep", "true", "correct", "y"}
_NO = {"no", "nope", "false", "incorrect", "n", "not"}


def parse_answer(text):
    """True for yes, False for no, None when the answer is neither.

    Case, punctuation and trailing words are ignored: "Yes, it is." -> True,
    "NO." -> False, "maybe" -> None.
    """
    if text is None:
        return None
    words = re.findall(r"[a-z]+", str(text).lower())
    if not words:
        return None
    if words[0] in _YES:
        return True
    if words[0] in _NO:
        return False
    return None
