"""Training captions of the SpotCheck encoder (``scripts/train_spotcheck_encoder.py``).

Two kinds, for the two stages of training:

- [`sample_caption`][lbee.spotcheck.sample_caption]: a random subset (1–3) of an image's true *positive*
  facts in varied wording — the image tower's captions (stage 1);
- `sample_caption_conditions` + `caption_from_conditions`: a
  random true condition dict that may state absences ("a square but no
  circle", "an image without text"), and `hard_negative_conditions`,
  the dicts that differ from it in one fact and are false for the image —
  the text head's captions (stage 2), worded in varied wording or by the
  SpotCheck grammar.
"""

from __future__ import annotations

from ._world import ATTRIBUTES

_OBJECTS = ("square", "rectangle", "circle", "text")
_NOUNS = {
    "square": ["square", "square", "box"],
    "rectangle": ["rectangle", "rectangle", "bar"],
    "circle": ["circle", "circle", "disc", "round shape"],
    "text": ["text", "text", "letters", "writing"],
}
_WORDS = {
    ("size", "small"): ["small", "tiny", "little"],
    ("size", "normal"): ["large", "big", "normal-sized"],
    ("color", "blue"): ["blue"],
    ("color", "orange"): ["orange"],
    ("texture", "stripes"): ["striped", "stripy", "vertically striped"],
    ("texture", "solid"): ["solid", "plain", "filled"],
}
_LEADS = [
    "An image with",
    "A picture with",
    "An image showing",
    "A synthetic image with",
    "There is",
    "A render of",
    "An image containing",
]


def _word_key(layer, attr, value):
    if (layer, attr) == ("text", "size"):  # text: 'normal' is the small one, 'large' the large one
        return "small" if value == "normal" else "normal"
    return value


def _object_phrase(layer, attrs, rng):
    keys = [k for k in ("size", "color", "texture")]
    chosen = [k for k in keys if rng.random() < 0.45]
    words = [str(rng.choice(_WORDS[(k, _word_key(layer, k, attrs[(layer, k)]))])) for k in chosen]
    noun = str(rng.choice(_NOUNS[layer]))
    if layer == "square" and rng.random() < 0.5:
        if attrs[("square", "number")] == "2":
            return " ".join(["two"] + words + [noun + ("es" if noun == "box" else "s")])
        return " ".join([str(rng.choice(["a single", "one", "only one"]))] + words + [noun])
    phrase = " ".join(words + [noun])
    if layer == "text" and noun in ("text", "writing"):
        return phrase
    return ("an " if phrase[0] in "aeiou" else "a ") + phrase


def _background_phrase(attrs, rng):
    color = attrs[("background", "color")]
    tex = attrs[("background", "texture")]
    parts = []
    if rng.random() < 0.6:
        parts.append(str(rng.choice([color, "gray"] if color == "grey" else [color])))
    if rng.random() < 0.6 or not parts:
        parts.append(
            str(
                rng.choice(["noisy", "speckled", "salt-and-pepper"] if tex == "noise" else ["clean", "plain", "smooth"])
            )
        )
    return f"on a {' '.join(parts)} background"


def sample_caption(attrs, rng):
    """One caption stating a random subset (1–3) of the image's true facts."""
    present = [l_ for l_ in _OBJECTS if attrs.get((l_, "presence")) == "true"]
    facts = [("obj", l_) for l_ in present] + [("bg", None)]
    if attrs.get(("background", "position")) in ("above", "below"):
        facts.append(("pos", None))
    if attrs.get(("square", "number")) == "2" and "square" in present:
        facts.append(("two", None))
    k = int(rng.integers(1, min(3, len(facts)) + 1))
    picked = [facts[i] for i in sorted(rng.choice(len(facts), size=k, replace=False))]
    objs = [_object_phrase(l_, attrs, rng) for kind, l_ in picked if kind == "obj"]
    tail = []
    for kind, _ in picked:
        if kind == "bg":
            tail.append(_background_phrase(attrs, rng))
        elif kind == "pos":
            where = attrs[("background", "position")]
            tail.append(
                str(rng.choice([f"where the square is {where} the center", f"with the square {where} the middle line"]))
            )
        elif kind == "two":
            objs.append("two squares")
    lead = str(rng.choice(_LEADS))
    body = " and ".join(objs)
    if not body:
        return ("An image " + " ".join(tail)).strip()
    return f"{lead} {body} {' '.join(tail)}".strip()


# ---- captions that state absences, with the dicts of their conditions (stage 2)
#: leads of a caption that states only absences ("An image with no circle", "A render without a rectangle")
_ABSENT_LEADS = [
    ("An image with", "no"),
    ("A picture with", "no"),
    ("An image containing", "no"),
    ("There is", "no"),
    ("An image", "without"),
    ("A render", "without"),
    ("A picture", "without"),
    ("A synthetic image", "without"),
]
#: joins between the stated objects and the absences ("a square but no circle")
_ABSENT_JOINS = [("but", "no"), ("and", "no"), ("with", "no"), ("", "without"), ("but", "without")]
_POSITION = ("background", "position")
_NUMBER = ("square", "number")
#: (layer, attribute) -> the two values a caption condition can take (the MetaAttribute included)
CAPTION_VALUES = {**ATTRIBUTES, _POSITION: ("above", "below")}


def _stated_object_phrase(layer, conds, rng):
    """Noun phrase of one present object stating exactly its conditions in ``conds``."""
    words = [
        str(rng.choice(_WORDS[(k, _word_key(layer, k, conds[(layer, k)]))]))
        for k in ("size", "color", "texture")
        if (layer, k) in conds
    ]
    noun = str(rng.choice(_NOUNS[layer]))
    if layer == "square" and _NUMBER in conds:
        if conds[_NUMBER] == "2":
            return " ".join(["two"] + words + [noun + ("es" if noun == "box" else "s")])
        return " ".join([str(rng.choice(["a single", "one", "only one"]))] + words + [noun])
    phrase = " ".join(words + [noun])
    if layer == "text":  # a mass noun or a plural: no article
        return phrase
    return ("an " if phrase[0] in "aeiou" else "a ") + phrase


def _absent_noun(layer, rng, without):
    noun = str(rng.choice(_NOUNS[layer]))
    if not without or layer == "text":
        return noun
    return ("an " if noun[0] in "aeiou" else "a ") + noun


def _absence_phrase(layers, rng, word):
    """'no circle', 'no circle or text', 'no circle and no text', 'without a circle or text'."""
    without = word == "without"
    nouns = [_absent_noun(l_, rng, without) for l_ in layers]
    if len(nouns) == 1:
        return f"{word} {nouns[0]}"
    if not without and rng.random() < 0.5:
        return " and ".join(f"no {n}" for n in nouns)
    return f"{word} {', '.join(nouns[:-1])} or {nouns[-1]}"


def _stated_background_phrase(conds, rng):
    parts = []
    if ("background", "color") in conds:
        color = conds[("background", "color")]
        parts.append(str(rng.choice([color, "gray"] if color == "grey" else [color])))
    if ("background", "texture") in conds:
        parts.append(
            str(
                rng.choice(
                    ["noisy", "speckled", "salt-and-pepper"]
                    if conds[("background", "texture")] == "noise"
                    else ["clean", "plain", "smooth"]
                )
            )
        )
    return f"on a {' '.join(parts)} background"


def caption_from_conditions(conds, rng):
    """A sentence stating exactly the conditions ``{(layer, attribute): value}``, in varied wording.

    Objects with ``presence`` 'true' are named with the attributes the dict gives them
    ("a small blue circle", "two squares"), objects with ``presence`` 'false' are said
    absent ("but no circle", "without text"), then the background and the square's position.
    """
    present = [l_ for l_ in _OBJECTS if conds.get((l_, "presence")) == "true"]
    absent = [l_ for l_ in _OBJECTS if conds.get((l_, "presence")) == "false"]
    rng.shuffle(absent)
    objs = [_stated_object_phrase(l_, conds, rng) for l_ in present]
    tail = []
    if ("background", "color") in conds or ("background", "texture") in conds:
        tail.append(_stated_background_phrase(conds, rng))
    if _POSITION in conds:
        where = conds[_POSITION]
        tail.append(
            str(rng.choice([f"where the square is {where} the center", f"with the square {where} the middle line"]))
        )
    tail = " ".join(tail)
    if objs:
        head = f"{rng.choice(_LEADS)} {' and '.join(objs)}"
        if absent:
            join, word = _ABSENT_JOINS[int(rng.integers(len(_ABSENT_JOINS)))]
            head = f"{head} {join + ' ' if join else ''}{_absence_phrase(absent, rng, word)}"
            if tail and rng.random() < 0.5:
                head += ","
    elif absent:
        lead, word = _ABSENT_LEADS[int(rng.integers(len(_ABSENT_LEADS)))]
        head = f"{lead} {_absence_phrase(absent, rng, word)}"
        if tail and rng.random() < 0.5:
            head += ","
    else:
        head = "An image"
    return f"{head} {tail}".strip()


def sample_caption_conditions(attrs, rng, *, p_absence=0.5, p_absence_only=0.3):
    """A random true condition dict for one image: 1–3 of its positive facts, sometimes absences.

    The positive facts (objects with some of their size / colour / texture, the
    number of squares, the background, the square's position) are drawn as the
    original captions; then, with probability ``p_absence``, one or two objects
    absent from the image are added as ``presence`` 'false' (alone, without the
    positive facts, with probability ``p_absence_only``).
    """
    present = [l_ for l_ in _OBJECTS if attrs.get((l_, "presence")) == "true"]
    facts = [("obj", l_) for l_ in present] + [("bg", None)]
    if attrs.get(_POSITION) in ("above", "below"):
        facts.append(("pos", None))
    if attrs.get(_NUMBER) == "2" and "square" in present:
        facts.append(("two", None))
    k = int(rng.integers(1, min(3, len(facts)) + 1))
    picked = [facts[i] for i in sorted(rng.choice(len(facts), size=k, replace=False))]
    conds = {}
    for kind, layer in picked:
        if kind == "obj":
            conds[(layer, "presence")] = "true"
            for a in ("size", "color", "texture"):
                if rng.random() < 0.45:
                    conds[(layer, a)] = attrs[(layer, a)]
            if layer == "square" and rng.random() < 0.5:
                conds[_NUMBER] = attrs[_NUMBER]
        elif kind == "bg":
            if rng.random() < 0.6:
                conds[("background", "color")] = attrs[("background", "color")]
            if rng.random() < 0.6 or ("background", "color") not in conds:
                conds[("background", "texture")] = attrs[("background", "texture")]
        elif kind == "pos":
            conds[_POSITION] = attrs[_POSITION]
        else:  # two squares
            conds[("square", "presence")] = "true"
            conds[_NUMBER] = "2"
    absent = [l_ for l_ in _OBJECTS if attrs.get((l_, "presence")) == "false"]
    if absent and rng.random() < p_absence:
        if rng.random() < p_absence_only:
            conds = {}
        n = int(rng.integers(1, min(2, len(absent)) + 1))
        for l_ in rng.choice(absent, size=n, replace=False):
            conds[(str(l_), "presence")] = "false"
    return conds


def _without_object(conds, layer):
    """``conds`` with every condition about ``layer`` dropped (its number and position too)."""
    drop = {_NUMBER, _POSITION} if layer == "square" else set()
    return {k: v for k, v in conds.items() if k[0] != layer and k not in drop}


def hard_negative_conditions(conds, attrs):
    """Condition dicts that differ from the true ``conds`` in one fact and are false for ``attrs``.

    Returns two lists: presence flips (a stated object said absent, a stated absence
    said present, an unmentioned object added with the wrong presence) and attribute
    flips (a stated size / colour / texture / number / background / position
    flipped, or an unmentioned one of a stated object added with the wrong value).
    """
    presence, attribute = [], []
    for layer in _OBJECTS:
        stated = conds.get((layer, "presence"))
        truth = attrs.get((layer, "presence"))
        if stated == "true" or (stated is None and truth == "true"):
            presence.append({**_without_object(conds, layer), (layer, "presence"): "false"})
        elif stated == "false" or (stated is None and truth == "false"):
            presence.append({**conds, (layer, "presence"): "true"})
    for key, value in conds.items():
        if key[1] == "presence":
            continue
        a, b = CAPTION_VALUES[key]
        attribute.append({**conds, key: b if value == a else a})
    for key in CAPTION_VALUES:
        layer = key[0]
        if key in conds or key[1] == "presence" or key == _POSITION:
            continue
        if layer != "background" and conds.get((layer, "presence")) != "true":
            continue
        if key == _NUMBER:
            continue
        a, b = CAPTION_VALUES[key]
        attribute.append({**conds, key: b if attrs[key] == a else a})

    def false(c):
        return not all(attrs.get(k) == v for k, v in c.items())

    return [c for c in presence if false(c)], [c for c in attribute if false(c)]
