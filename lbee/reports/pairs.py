"""A label → prediction pair as the report's browser and the service's group page show and filter it."""

from __future__ import annotations

import json


def pair_text(label, prediction):
    """``'cat → dog'``: a label → prediction as the browsers show and filter it (``?pair=``).

    A name that holds the separator (or starts with a quote) is written as a JSON string, so that two different
    pairs never read alike: ``('a', 'a → a')`` is ``a → "a → a"``, ``('a → a', 'a')`` is ``"a → a" → a``.
    """

    def quoted(name):
        name = str(name)
        return json.dumps(name, ensure_ascii=False) if " → " in name or name.startswith('"') else name

    return f"{quoted(label)} → {quoted(prediction)}"
