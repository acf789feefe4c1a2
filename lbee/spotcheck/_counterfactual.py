"""Counterfactual verification of a failure statement in a SpotCheck world: fresh renders, the model's accuracy.

A statement such as "An image with two squares but no circle, where the square is below the center" is a
conjunction of the world's attribute conditions (`lbee.grammar`: ``{(subject, attribute): value}``). In
the SpotCheck world, truth can be produced on demand: `counterfactual_check` renders new images for which
the statement holds (every attribute it leaves open drawn as the world draws it), and, for each of its conditions,
images that differ from it in exactly that one ("a circle" instead of "no circle"). The world's model runs on
them; its accuracy on each tells whether the statement *is* the failure (low where it holds) and which of its
conditions the failure needs (high again once that condition is changed)::

    holds: accuracy 0.01 on 200 new images; without 'no circle' (a circle): 0.96; ...

This is the world's own ground truth for a hypothesis, beside the description score (which compares the words
with the planted blindspot), never instead of it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ._world import ATTRIBUTES, META

#: Fresh renders for the statement and for each of its one-condition variants (``lbee demo``, the bench).
N_COUNTERFACTUAL = 200
#: A condition is *needed* by the failure when the model's accuracy, that condition changed, is at least this
#: (the failure is gone: the model is right on most images again). The same 0.5 as the blindspot gate's
#: ``min_neighbour`` (`lbee.spotcheck.DEFAULT_GATE`), which asks it of every planted blindspot's neighbours.
NEEDED_ACCURACY = 0.5
#: The level below which an attribute the statement leaves open is said to part its accuracy (Fisher's exact test).
NARROWER_ALPHA = 0.001
#: The grammar that names the world's attributes (its conditions are the world's keys).
WORLD_GRAMMAR = "spotcheck"


@dataclass(frozen=True)
class RenderedCheck:
    """The model on fresh renders of one conjunction of conditions.

    Attributes
    ----------
    conditions : dict
        ``{(subject, attribute): value}`` every render satisfies (presuppositions included).
    n : int
        Images rendered (0 when the conditions cannot be drawn).
    accuracy : float
        The model's accuracy on them against the true label (a square present); NaN when ``n`` is 0.
    in_world : bool
        Whether the world's own images ever meet these conditions (False: the world never varies an attribute
        they set, e.g. an orange circle where every circle is blue; the model never saw such images).
    changed : tuple or None
        For a one-condition variant, ``(phrase of the statement's condition, phrase of its replacement)``
        ("no circle", "a circle"); None for the statement itself.
    narrower : tuple or None
        For the statement itself: an attribute it leaves open that parts the model's accuracy on its renders
        (Fisher's exact test, p < `NARROWER_ALPHA`; below `NEEDED_ACCURACY` on one side), as
        ``((phrase, accuracy, n), (phrase, accuracy, n))``, the value with the lower accuracy first
        (("small text", 0.02, 48), ("large text", 0.70, 52)): the statement holds more widely than the
        failure, which needs that condition too. None otherwise.
    """

    conditions: dict
    n: int
    accuracy: float
    in_world: bool = True
    changed: tuple | None = None
    narrower: tuple | None = None

    def to_dict(self):
        return {
            "conditions": {f"{s}.{a}": v for (s, a), v in self.conditions.items()},
            "n": self.n,
            "accuracy": None if not np.isfinite(self.accuracy) else self.accuracy,
            "in_world": self.in_world,
            "changed": None if self.changed is None else list(self.changed),
            "narrower": None if self.narrower is None else [list(x) for x in self.narrower],
        }


@dataclass(frozen=True)
class CounterfactualCheck:
    """A statement checked on fresh renders: where it holds, and where exactly one of its conditions is changed.

    Attributes
    ----------
    statement : str
    conditions : dict
        The statement's own conditions ``{(subject, attribute): value}``.
    holds : RenderedCheck
    variants : tuple of RenderedCheck
        One per (condition, other value), in the grammar's order.
    """

    statement: str
    conditions: dict
    holds: RenderedCheck
    variants: tuple = field(default_factory=tuple)

    @property
    def fails(self):
        """Whether the model fails where the statement holds (accuracy below `NEEDED_ACCURACY`)."""
        return bool(np.isfinite(self.holds.accuracy) and self.holds.accuracy < NEEDED_ACCURACY)

    def needed(self):
        """Per variant, whether the failure needs its condition (changed, the accuracy is NEEDED_ACCURACY or more).

        All False when the statement is no failure (`fails`).
        """
        return [self.fails and bool(np.isfinite(v.accuracy) and v.accuracy >= NEEDED_ACCURACY) for v in self.variants]

    def lines(self):
        """Plain text, one line for the statement, one per variant (a condition the failure does not need: said)."""
        out = [f"holds: accuracy {_acc(self.holds)} on {self.holds.n} new images"]
        if self.holds.narrower is not None:
            (lw, la, ln), (hw, ha, hn) = self.holds.narrower
            out.append(
                f"  with '{lw}': {la:.2f} on {ln} of them, with '{hw}': {ha:.2f} on {hn}: the failure needs '{lw}' too"
            )
        for v, needed in zip(self.variants, self.needed()):
            seen = "" if v.in_world else ", never in this world"
            note = "  (the failure stays: not needed)" if self.fails and not needed and v.n else ""
            out.append(f"without '{v.changed[0]}' ({v.changed[1]}{seen}): {_acc(v)}{note}")
        return out

    def summary(self):
        """``"holds: accuracy 0.01 on 200 new images; without 'no circle' (a circle): 0.96; ..."``."""
        return "; ".join(self.lines())

    def to_dict(self):
        return {
            "statement": self.statement,
            "conditions": {f"{s}.{a}": v for (s, a), v in self.conditions.items()},
            "holds": self.holds.to_dict(),
            "variants": [v.to_dict() for v in self.variants],
            "needed": self.needed(),
        }


def _acc(check):
    return f"{check.accuracy:.2f}" if np.isfinite(check.accuracy) else "n/a (cannot be drawn)"


def phrase(grammar, key, value):
    """`lbee.grammar.Grammar.phrase`: one literal in the grammar's words ("no circle")."""
    return grammar.phrase(key, value)


def one_condition_variants(conditions, grammar):
    """Each conjunction that differs from ``conditions`` in exactly one of its conditions.

    A condition's value is replaced by each other value of its attribute. Conditions that the replacement
    contradicts are dropped with it: a subject made absent keeps none of its attributes ("no circle" instead of
    "a striped circle"), and a clause loses what it needs ("no square" drops "where the square is above the
    center").

    Parameters
    ----------
    conditions : dict
        ``{(subject, attribute): value}``, the statement's own conditions.
    grammar : lbee.grammar.Grammar

    Returns
    -------
    list of ((str, str), str, dict)
        ``(key, new value, the variant's conditions)``, in the grammar's key order.
    """
    values = dict(grammar.keys())
    out = []
    for key in [k for k in values if k in conditions]:
        for other in values[key]:
            if other == conditions[key]:
                continue
            variant = {key: other}
            for k, v in conditions.items():
                if k != key and grammar.contradiction(grammar.implied({**variant, k: v})) is None:
                    variant[k] = v
            out.append((key, other, variant))
    return out


def _in_world(dataset, conditions):
    """Whether the world's sampling ever meets ``conditions`` (every set attribute rollable or at its constant)."""
    return all(k == META or k in dataset.rollable or ATTRIBUTES[k][0] == v for k, v in conditions.items())


def _render_satisfying(ec, conditions, n, rng):
    """``n`` renders meeting ``conditions``, every other attribute drawn as the world draws it.

    Returns
    -------
    images : ndarray of uint8, shape (n, S, S, 3)
    labels : ndarray of int, shape (n,)
        The true label (a square present).
    attributes : list of dict
        Each render's attributes, the MetaAttribute included.
    """
    from ._render import render

    fixed = {k: v for k, v in conditions.items() if k != META}
    images = np.empty((n, ec.image_size, ec.image_size, 3), np.uint8)
    labels = np.empty(n, np.int64)
    attributes = []
    for i in range(n):
        images[i], attrs = render(
            ec.dataset.sample_attributes(rng, fixed), rng, ec.image_size, position=conditions.get(META)
        )
        labels[i] = attrs[("square", "presence")] == "true"
        attributes.append(attrs)
    return images, labels, attributes


def _narrower(conditions, attributes, correct, grammar):
    """The open attribute whose two values part the renders' accuracy most, when significantly (Fisher, p < ALPHA).

    Only attributes the renders are about count: a setting's, or one of an object the conditions make present;
    and only where the model fails on one side (accuracy below `NEEDED_ACCURACY`).
    Returns ``(phrase, accuracy, n)`` of the value with the lower accuracy, then of the other, or None.
    """
    from scipy.stats import fisher_exact

    values_of = dict(grammar.keys())
    best, best_gap = None, 0.0
    for key in [*ATTRIBUTES, META]:
        about = key[0] == "background" or key[1] == "presence" or conditions.get((key[0], "presence")) == "true"
        if key in conditions or not about:
            continue
        values = np.array([a.get(key) for a in attributes])
        groups = [values == v for v in values_of.get(key, ()) if np.any(values == v)]
        if len(groups) != 2:
            continue  # the attribute is constant in this world (or here)
        table = [[int(correct[g].sum()), int((~correct[g]).sum())] for g in groups]
        low = min(correct[g].mean() for g in groups)
        gap = abs(correct[groups[0]].mean() - correct[groups[1]].mean())
        # one side is a failure (not merely a few more errors on a statement the model gets right)
        if low < NEEDED_ACCURACY and fisher_exact(table).pvalue < NARROWER_ALPHA and gap > best_gap:
            parts = [(phrase(grammar, key, values[g][0]), float(correct[g].mean()), int(g.sum())) for g in groups]
            best, best_gap = tuple(sorted(parts, key=lambda x: x[1])), gap
    return best


def _check(ec, conditions, n, seed, changed=None, grammar=None):
    from ._classifier import predict

    rng = np.random.default_rng(seed)
    in_world = _in_world(ec.dataset, conditions)
    try:
        images, labels, attributes = _render_satisfying(ec, conditions, n, rng)
    except ValueError:  # the objects do not fit the image: reported, not raised
        return RenderedCheck(dict(conditions), 0, float("nan"), in_world, changed)
    probs, _ = predict(ec.model, images)
    correct = probs.argmax(1) == labels
    narrower = None if grammar is None else _narrower(conditions, attributes, correct, grammar)
    return RenderedCheck(dict(conditions), n, float(np.mean(correct)), in_world, changed, narrower)


def counterfactual_check(ec, conditions, *, statement=None, n_images=N_COUNTERFACTUAL, random_state=0, grammar=None):
    """Run a SpotCheck world's model on fresh renders where a statement holds, and where one condition differs.

    Parameters
    ----------
    ec : ExperimentalConfiguration
        The world (its dataset definition, image size and trained model).
    conditions : dict
        The statement's conditions ``{(subject, attribute): value}`` over the world's attributes (a SpotCheck
        grammar sentence's, or 'compose''s literals). Their presuppositions are added (``"two squares"`` needs a
        square).
    statement : str, optional
        The statement's words; default: the grammar's sentence for ``conditions``.
    n_images : int, default=200
        Renders for the statement and for each variant.
    random_state : int, default=0
        Seeds the renders: the same state gives the same images and accuracies.
    grammar : lbee.grammar.Grammar or str, optional
        The grammar of the world's attributes; default `WORLD_GRAMMAR`.

    Returns
    -------
    CounterfactualCheck

    Raises
    ------
    ValueError
        When ``conditions`` is empty, names an attribute the world does not have, contradicts itself, or the
        world has no model.
    """
    from ..grammar import load_grammar

    grammar = load_grammar(grammar if grammar is not None else WORLD_GRAMMAR)
    conditions = dict(conditions)
    if ec.model is None:
        raise ValueError("counterfactual_check: the world has no trained model (model.pt); train or load it first.")
    if not conditions:
        raise ValueError(
            "counterfactual_check: `conditions` is empty; a statement to check needs at least one condition."
        )
    unknown = [k for k in conditions if k not in ATTRIBUTES and k != META]
    if unknown:
        raise ValueError(
            f"counterfactual_check: `conditions` names {', '.join(f'{s}.{a}' for s, a in unknown)}, which the "
            f"SpotCheck world does not have; expected (layer, attribute) keys of lbee.spotcheck.ATTRIBUTES."
        )
    why = grammar.contradiction(grammar.implied(conditions))
    if why is not None:
        raise ValueError(f"counterfactual_check: `conditions` can never hold together: {why}.")
    if int(n_images) < 1:
        raise ValueError(f"counterfactual_check: `n_images` must be >= 1; received {n_images}.")
    n = int(n_images)
    holds = _check(ec, grammar.implied(conditions), n, [int(random_state), 0], grammar=grammar)
    variants = tuple(
        _check(
            ec,
            grammar.implied(variant),
            n,
            [int(random_state), i],
            changed=(phrase(grammar, key, conditions[key]), phrase(grammar, key, other)),
        )
        for i, (key, other, variant) in enumerate(one_condition_variants(conditions, grammar), start=1)
    )
    return CounterfactualCheck(statement or grammar.render(conditions), conditions, holds, variants)
