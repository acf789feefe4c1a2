"""SpotCheck sentences, the exact conditions that make each true, and training captions.

Every sentence of ``sentence_sets/spotcheck.txt`` comes from :func:`spotcheck_sentences`
with a condition dict ``{(layer, attribute): value}``; Γ(image, sentence) = 1
exactly when all its conditions hold for the image's attributes.
"""

from __future__ import annotations

import numpy as np

from ._world import ATTRIBUTES

OBJECT_NAMES = {"square": "square", "rectangle": "rectangle", "circle": "circle", "text": "text"}
VALUE_WORDS = {"size": {"small": "small", "normal": "large"},
               "color": {"blue": "blue", "orange": "orange"},
               "texture": {"solid": "solid", "stripes": "striped"}}
#: Text's size option makes it larger (official generator), so its default is the small one.
TEXT_SIZE_WORDS = {"normal": "small", "large": "large"}


def value_words(layer, attr):
    """{value: word} for one attribute of one layer."""
    return TEXT_SIZE_WORDS if (layer, attr) == ("text", "size") else VALUE_WORDS[attr]


def _obj(layer, *words):
    noun = "some text" if layer == "text" and not words else ("text" if layer == "text" else f"a {layer}")
    if layer == "text" and words:
        noun = f"{' '.join(words)} text"
    elif words:
        first = " ".join(words)
        noun = f"{'an' if first[0] in 'aeiou' else 'a'} {first} {layer}"
    return noun


def spotcheck_sentences():
    """List of (sentence, conditions, single_attribute) for the spotcheck set.

    ``single_attribute`` marks sentences about one attribute value (the quality gate's set).
    """
    out = []
    for layer in OBJECT_NAMES:
        present = {(layer, "presence"): "true"}
        out.append((f"An image with {_obj(layer)}", present, True))
        for attr in VALUE_WORDS:
            for value, word in value_words(layer, attr).items():
                out.append((f"An image with {_obj(layer, word)}", {**present, (layer, attr): value}, True))
        for cv, cw in VALUE_WORDS["color"].items():
            for tv, tw in VALUE_WORDS["texture"].items():
                out.append((f"An image with {_obj(layer, cw, tw)}",
                            {**present, (layer, "color"): cv, (layer, "texture"): tv}, False))
            for sv, sw in value_words(layer, "size").items():
                out.append((f"An image with {_obj(layer, sw, cw)}",
                            {**present, (layer, "color"): cv, (layer, "size"): sv}, False))
        for sv, sw in value_words(layer, "size").items():
            for tv, tw in VALUE_WORDS["texture"].items():
                out.append((f"An image with {_obj(layer, sw, tw)}",
                            {**present, (layer, "size"): sv, (layer, "texture"): tv}, False))
    sq = {("square", "presence"): "true"}
    out += [("An image with two squares", {**sq, ("square", "number"): "2"}, True),
            ("An image with a single square", {**sq, ("square", "number"): "1"}, True),
            ("An image where the square is above the center", {("background", "position"): "above"}, True),
            ("An image where the square is below the center", {("background", "position"): "below"}, True),
            ("An image on a grey background", {("background", "color"): "grey"}, True),
            ("An image on a white background", {("background", "color"): "white"}, True),
            ("An image on a noisy background", {("background", "texture"): "noise"}, True),
            ("An image on a clean background", {("background", "texture"): "solid"}, True)]
    for cv, cw in (("grey", "grey"), ("white", "white")):
        for tv, tw in (("noise", "noisy"), ("solid", "clean")):
            out.append((f"An image on a {cw} {tw} background",
                        {("background", "color"): cv, ("background", "texture"): tv}, False))
    layers = list(OBJECT_NAMES)
    for i, a in enumerate(layers):
        for b in layers[i + 1:]:
            out.append((f"An image with {_obj(a)} and {_obj(b)}",
                        {(a, "presence"): "true", (b, "presence"): "true"}, False))
    for layer in ("rectangle", "circle", "text"):
        out.append((f"An image with {_obj('square')} but no {layer}",
                    {("square", "presence"): "true", (layer, "presence"): "false"}, False))
    return out


def relevance_matrix(image_attrs, conditions):
    """Γ of shape (n_images, n_sentences) from attribute dicts and sentence conditions."""
    rel = np.zeros((len(image_attrs), len(conditions)), dtype=bool)
    for j, cond in enumerate(conditions):
        for i, attrs in enumerate(image_attrs):
            rel[i, j] = all(attrs.get(k) == v for k, v in cond.items())
    return rel


# ---- training captions: random partial subsets of an image's true facts (absences included), varied wording
_OBJECTS = ("square", "rectangle", "circle", "text")
_NOUNS = {"square": ["square", "square", "box"], "rectangle": ["rectangle", "rectangle", "bar"],
          "circle": ["circle", "circle", "disc", "round shape"], "text": ["text", "text", "letters", "writing"]}
_WORDS = {("size", "small"): ["small", "tiny", "little"], ("size", "normal"): ["large", "big", "normal-sized"],
          ("color", "blue"): ["blue"], ("color", "orange"): ["orange"],
          ("texture", "stripes"): ["striped", "stripy", "vertically striped"],
          ("texture", "solid"): ["solid", "plain", "filled"]}
_LEADS = ["An image with", "A picture with", "An image showing", "A synthetic image with", "There is",
          "A render of", "An image containing"]
#: leads of a caption that states only absences ("An image with no circle", "A render without a rectangle")
_ABSENT_LEADS = [("An image with", "no"), ("A picture with", "no"), ("An image containing", "no"),
                 ("There is", "no"), ("An image", "without"), ("A render", "without"), ("A picture", "without"),
                 ("A synthetic image", "without")]
#: joins between the stated objects and the absences ("a square but no circle")
_ABSENT_JOINS = [("but", "no"), ("and", "no"), ("with", "no"), ("", "without"), ("but", "without")]
_POSITION = ("background", "position")
_NUMBER = ("square", "number")
#: (layer, attribute) -> the two values a caption condition can take (the MetaAttribute included)
CAPTION_VALUES = {**ATTRIBUTES, _POSITION: ("above", "below")}


def _word_key(layer, attr, value):
    if (layer, attr) == ("text", "size"):  # text: 'normal' is the small one, 'large' the large one
        return "small" if value == "normal" else "normal"
    return value


def _object_phrase(layer, conds, rng):
    """Noun phrase of one present object stating exactly its conditions in ``conds``."""
    words = [str(rng.choice(_WORDS[(k, _word_key(layer, k, conds[(layer, k)]))]))
             for k in ("size", "color", "texture") if (layer, k) in conds]
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


def _background_phrase(conds, rng):
    parts = []
    if ("background", "color") in conds:
        color = conds[("background", "color")]
        parts.append(str(rng.choice([color, "gray"] if color == "grey" else [color])))
    if ("background", "texture") in conds:
        parts.append(str(rng.choice(["noisy", "speckled", "salt-and-pepper"]
                                    if conds[("background", "texture")] == "noise" else ["clean", "plain", "smooth"])))
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
    objs = [_object_phrase(l_, conds, rng) for l_ in present]
    tail = []
    if ("background", "color") in conds or ("background", "texture") in conds:
        tail.append(_background_phrase(conds, rng))
    if _POSITION in conds:
        where = conds[_POSITION]
        tail.append(str(rng.choice([f"where the square is {where} the center",
                                    f"with the square {where} the middle line"])))
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


def sample_caption(attrs, rng, *, hard_negatives=0, return_conditions=False):
    """One caption stating a random subset of the image's true facts, absences included.

    Parameters
    ----------
    attrs : dict
        The image's attributes, MetaAttribute included (as :func:`render` returns them).
    rng : numpy.random.Generator
    hard_negatives : int, default=0
        Also return this many captions that differ from the caption in one fact
        and are false for the image (half presence flips, half attribute flips when
        both exist).
    return_conditions : bool, default=False
        Also return the caption's condition dict (and the hard negatives').

    Returns
    -------
    caption : str
    negatives : list of str
        Only with ``hard_negatives``.
    conditions : dict or (dict, list of dict)
        Only with ``return_conditions``.
    """
    conds = sample_caption_conditions(attrs, rng)
    caption = caption_from_conditions(conds, rng)
    if not hard_negatives:
        return (caption, conds) if return_conditions else caption
    presence, attribute = hard_negative_conditions(conds, attrs)
    neg_conds, first = [], int(rng.integers(2))
    for i in range(hard_negatives):
        pool = presence if ((i + first) % 2 == 0 and presence) or not attribute else attribute
        neg_conds.append(pool[int(rng.integers(len(pool)))])
    negatives = [caption_from_conditions(c, rng) for c in neg_conds]
    return (caption, negatives, (conds, neg_conds)) if return_conditions else (caption, negatives)
