"""SpotCheck's semantic features, datasets and blindspots (SpotCheck app. A.1–A.3).

An image is described by a dict ``{(layer, attribute): value}``; every value is
a string. A dataset marks which attributes are *rollable*; a blindspot is a
list of (layer, attribute, value) triplets, and an image belongs to it when
every triplet holds for the image.
"""

from __future__ import annotations

from dataclasses import dataclass, field

OBJECT_LAYERS = ("square", "rectangle", "circle", "text")
OPTIONAL_OBJECTS = ("rectangle", "circle", "text")

#: (layer, attribute) -> (default value, alternative value)   (Table 5)
ATTRIBUTES = {("background", "color"): ("white", "grey"), ("background", "texture"): ("solid", "noise")}
for _layer in OBJECT_LAYERS:
    ATTRIBUTES[(_layer, "presence")] = ("false", "true")
    ATTRIBUTES[(_layer, "size")] = ("normal", "small")
    ATTRIBUTES[(_layer, "color")] = ("blue", "orange")
    ATTRIBUTES[(_layer, "texture")] = ("solid", "stripes")
ATTRIBUTES[("square", "number")] = ("1", "2")
# The official size option makes text larger (font 25 -> 50) and the other shapes smaller.
ATTRIBUTES[("text", "size")] = ("normal", "large")

#: MetaAttribute (Table 6): square above / below the horizontal centre line, or no square.
META = ("background", "position")
META_VALUES = ("above", "below")


class UnsatisfiableError(ValueError):
    """The generator settings admit no valid dataset or blindspot set."""


@dataclass
class DatasetDefinition:
    """Which layers exist and which attributes are rollable.

    Attributes
    ----------
    layers : list of str
    rollable : list of (str, str)
    """

    layers: list
    rollable: list

    def to_dict(self):
        return {"layers": list(self.layers), "rollable": [list(a) for a in self.rollable]}

    @classmethod
    def from_dict(cls, d):
        return cls(list(d["layers"]), [tuple(a) for a in d["rollable"]])

    def sample_attributes(self, rng, fixed=None):
        """One image's attribute dict (non-rollable attributes keep their default).

        ``fixed`` pins some attributes (used to draw images inside a blindspot).
        """
        attrs = {}
        fixed = fixed or {}
        for key, (default, alt) in ATTRIBUTES.items():
            if key in fixed:
                attrs[key] = fixed[key]
            elif key[0] != "background" and key[0] not in self.layers:
                attrs[key] = default
            elif key in self.rollable:
                attrs[key] = alt if rng.random() < 0.5 else default
            else:
                attrs[key] = default
        return attrs


@dataclass
class Blindspot:
    """A conjunction of (layer, attribute, value) triplets."""

    triplets: list = field(default_factory=list)

    def to_dict(self):
        return [list(t) for t in self.triplets]

    @classmethod
    def from_dict(cls, d):
        return cls([tuple(t) for t in d])

    def as_dict(self):
        return {(layer, attr): value for layer, attr, value in self.triplets}

    def contains(self, attrs):
        """Whether an image (its full attribute dict, MetaAttribute included) belongs here."""
        return all(attrs.get((layer, attr)) == value for layer, attr, value in self.triplets)

    def sentence(self):
        """The blindspot as the world's grammar says it (the words of lbee's own sentences), else `describe`'s.

        E.g. 'An image with two squares but no circle or text, where the square is below the center'.
        """
        from ..grammar import load_grammar

        try:
            return load_grammar("spotcheck").render(self.as_dict())
        except (KeyError, ValueError):
            return self.describe()

    def describe(self):
        """Plain words, e.g. 'circle present, circle orange, background grey'."""
        parts = []
        for layer, attr, value in self.triplets:
            if attr == "presence":
                parts.append(f"{layer} {'present' if value == 'true' else 'absent'}")
            elif attr == "number":
                parts.append(f"{value} square{'s' if value == '2' else ''}")
            elif attr == "position":
                parts.append(f"square {value} the centre")
            else:
                parts.append(f"{layer} {value}")
        return ", ".join(parts)


def sample_dataset(rng, *, n_other_layers=None, n_rollable=None):
    """A random dataset definition (app. A.2): Background + Square + 1–3 other object layers, 6–8 rollable."""
    k = int(rng.integers(1, 4)) if n_other_layers is None else int(n_other_layers)
    if not 0 <= k <= 3:
        raise UnsatisfiableError(f"`n_other_layers` must be in 0..3; received {k}.")
    others = [str(x) for x in rng.choice(OPTIONAL_OBJECTS, size=k, replace=False)]
    layers = ["background", "square"] + sorted(others, key=OBJECT_LAYERS.index)
    n_roll = int(rng.integers(6, 9)) if n_rollable is None else int(n_rollable)
    candidates = [a for a in ATTRIBUTES if a[0] in layers]
    rollable = [(layer, "presence") for layer in layers if layer != "background"]
    if n_roll > len(candidates) or n_roll < len(rollable):
        raise UnsatisfiableError(
            f"`n_rollable`={n_roll} is impossible with layers {layers}: between {len(rollable)} (every object's "
            f"presence) and {len(candidates)} attributes can be rollable."
        )
    while len(rollable) < n_roll:
        open_layers = sorted({a[0] for a in candidates if a not in rollable}, key=layers.index)
        layer = open_layers[int(rng.integers(len(open_layers)))]
        choices = [a for a in candidates if a[0] == layer and a not in rollable]
        rollable.append(choices[int(rng.integers(len(choices)))])
    return DatasetDefinition(layers, rollable)


def _sample_blindspot(rng, dataset, n_triplets):
    """One blindspot of exactly ``n_triplets`` triplets, or None when the draw is infeasible.

    As the official generator (njohnson99/spotcheck ``data_utils.py``) every
    blindspot contains ("square", "presence", "true"): a blindspot is a set of
    *positive* images the model calls negative (SpotCheck §3, app. A.3). That
    triplet counts towards the 5–7.
    """
    rollable = list(dataset.rollable) + [META]
    order = ["background", *OBJECT_LAYERS]
    if n_triplets > len(rollable):
        raise UnsatisfiableError(
            f"A blindspot of {n_triplets} triplets needs more rollable attributes than "
            f"the dataset's {len(dataset.rollable)} (+1 MetaAttribute)."
        )
    chosen = {("square", "presence"): "true"}
    while len(chosen) < n_triplets:
        options = [a for a in rollable if a not in chosen]
        open_layers = sorted({a[0] for a in options}, key=order.index)
        if not open_layers:
            return None  # this draw ran out of compatible attributes; the caller draws again
        layer = open_layers[int(rng.integers(len(open_layers)))]
        if layer != "background" and (layer, "presence") not in chosen:
            attr = (layer, "presence")
        else:
            opts = [a for a in options if a[0] == layer]
            attr = opts[int(rng.integers(len(opts)))]
            if layer != "background" and chosen[(layer, "presence")] == "false":
                return None  # feasibility: attributes of an absent object describe nothing
        values = META_VALUES if attr == META else ATTRIBUTES[attr]
        chosen[attr] = values[int(rng.integers(2))]
    return Blindspot([(l_, a_, v) for (l_, a_), v in chosen.items()])


def _unambiguous(a, b):
    """Ambiguity constraint: at least two shared attributes with different values."""
    da = {(l_, at): v for l_, at, v in a.triplets}
    db = {(l_, at): v for l_, at, v in b.triplets}
    return sum(1 for key in set(da) & set(db) if da[key] != db[key]) >= 2


def sample_blindspots(rng, dataset, *, n_blindspots=None, max_tries=2000):
    """1–3 random blindspots of 5–7 triplets each, satisfying both constraints (app. A.3).

    Every blindspot pins "square present" (the official definition; see
    `_sample_blindspot`), so it is a set of positive images.
    """
    n = int(rng.integers(1, 4)) if n_blindspots is None else int(n_blindspots)
    if n < 1:
        raise UnsatisfiableError(f"`n_blindspots` must be >= 1; received {n}.")
    most = min(7, len(dataset.rollable) + 1)
    if most < 5:
        raise UnsatisfiableError(
            f"Blindspots need 5-7 triplets but the dataset has only {len(dataset.rollable)} "
            "rollable attributes (+1 MetaAttribute); use a dataset with more rollable attributes."
        )
    found = []
    for _ in range(max_tries):
        bs = _sample_blindspot(rng, dataset, int(rng.integers(5, most + 1)))
        if bs is not None and all(_unambiguous(bs, other) for other in found):
            found.append(bs)
            if len(found) == n:
                return found
    raise UnsatisfiableError(
        f"Could not place {n} blindspot(s) satisfying the feasibility and ambiguity constraints over "
        f"{len(dataset.rollable)} rollable attributes after {max_tries} tries; use fewer blindspots or a dataset "
        "with more rollable attributes."
    )
