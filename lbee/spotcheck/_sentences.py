"""SpotCheck sentences and the exact conditions that make each true.

Every sentence of ``sentence_sets/spotcheck.txt`` comes from [`spotcheck_sentences`][lbee.spotcheck.spotcheck_sentences]
with a condition dict ``{(layer, attribute): value}``; Γ(image, sentence) = 1
exactly when all its conditions hold for the image's attributes.
"""

from __future__ import annotations

import numpy as np

OBJECT_NAMES = {"square": "square", "rectangle": "rectangle", "circle": "circle", "text": "text"}
VALUE_WORDS = {
    "size": {"small": "small", "normal": "large"},
    "color": {"blue": "blue", "orange": "orange"},
    "texture": {"solid": "solid", "stripes": "striped"},
}
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
                out.append(
                    (
                        f"An image with {_obj(layer, cw, tw)}",
                        {**present, (layer, "color"): cv, (layer, "texture"): tv},
                        False,
                    )
                )
            for sv, sw in value_words(layer, "size").items():
                out.append(
                    (
                        f"An image with {_obj(layer, sw, cw)}",
                        {**present, (layer, "color"): cv, (layer, "size"): sv},
                        False,
                    )
                )
        for sv, sw in value_words(layer, "size").items():
            for tv, tw in VALUE_WORDS["texture"].items():
                out.append(
                    (
                        f"An image with {_obj(layer, sw, tw)}",
                        {**present, (layer, "size"): sv, (layer, "texture"): tv},
                        False,
                    )
                )
    sq = {("square", "presence"): "true"}
    out += [
        ("An image with two squares", {**sq, ("square", "number"): "2"}, True),
        ("An image with a single square", {**sq, ("square", "number"): "1"}, True),
        ("An image where the square is above the center", {("background", "position"): "above"}, True),
        ("An image where the square is below the center", {("background", "position"): "below"}, True),
        ("An image on a grey background", {("background", "color"): "grey"}, True),
        ("An image on a white background", {("background", "color"): "white"}, True),
        ("An image on a noisy background", {("background", "texture"): "noise"}, True),
        ("An image on a clean background", {("background", "texture"): "solid"}, True),
    ]
    for cv, cw in (("grey", "grey"), ("white", "white")):
        for tv, tw in (("noise", "noisy"), ("solid", "clean")):
            out.append(
                (
                    f"An image on a {cw} {tw} background",
                    {("background", "color"): cv, ("background", "texture"): tv},
                    False,
                )
            )
    layers = list(OBJECT_NAMES)
    for i, a in enumerate(layers):
        for b in layers[i + 1 :]:
            out.append(
                (f"An image with {_obj(a)} and {_obj(b)}", {(a, "presence"): "true", (b, "presence"): "true"}, False)
            )
    for layer in ("rectangle", "circle", "text"):
        out.append(
            (
                f"An image with {_obj('square')} but no {layer}",
                {("square", "presence"): "true", (layer, "presence"): "false"},
                False,
            )
        )
    return out


def relevance_matrix(image_attrs, conditions):
    """Γ of shape (n_images, n_sentences) from attribute dicts and sentence conditions."""
    rel = np.zeros((len(image_attrs), len(conditions)), dtype=bool)
    for j, cond in enumerate(conditions):
        for i, attrs in enumerate(image_attrs):
            rel[i, j] = all(attrs.get(k) == v for k, v in cond.items())
    return rel
