"""Counterfactual verification of an analysis's statements on fresh renders of its SpotCheck world (beyond the papers).

`lbee.spotcheck.counterfactual_check` runs a world's model on new images where one statement holds and
where exactly one of its conditions differs. Here it is applied to an analysis (`ECAnalysis`):

- `hypothesis_checks`: each hypothesis of one describer, by its first sentence (``lbee demo``);
- `blindspot_counterfactuals`: for each describer, the first sentence of the hypothesis covering each true
  blindspot (the one the description score reads), summarised as the bench's counterfactual columns: the model's
  accuracy on fresh renders where that sentence holds (low: the sentence is the failure) and the share of its
  conditions the failure needs (changing one brings the accuracy to
  `lbee.spotcheck.NEEDED_ACCURACY` or above). Both stand beside the description score, never instead of it.
"""

from __future__ import annotations

import numpy as np

from ..spotcheck import N_COUNTERFACTUAL, counterfactual_check

#: Renders per statement and per variant in ``lbee demo`` (fewer than the bench's: the demo stays under a minute).
DEMO_COUNTERFACTUAL = 100


class _Checks:
    """Checks of one world, by statement: a sentence several describers or hypotheses share is rendered once."""

    def __init__(self, ec, n_images, random_state):
        self.ec, self.n_images, self.random_state, self._done = ec, n_images, random_state, {}

    def __call__(self, text, conditions):
        if not conditions:  # a sentence without conditions over the world's attributes cannot be rendered
            return None
        key = tuple(sorted(conditions.items()))
        if key not in self._done:
            self._done[key] = counterfactual_check(
                self.ec, conditions, statement=text, n_images=self.n_images, random_state=self.random_state
            )
        return self._done[key]


def hypothesis_checks(ec, analysis, *, method="compose", n_images=N_COUNTERFACTUAL, random_state=0):
    """The counterfactual check of each hypothesis of ``method``, by its first sentence.

    Parameters
    ----------
    ec : ExperimentalConfiguration
        The world ``analysis`` was made on.
    analysis : ECAnalysis
    method : str, default='compose'
    n_images : int, default=200
    random_state : int, default=0

    Returns
    -------
    list of CounterfactualCheck or None
        One per hard cluster of ``method``, in its order; None where the hypothesis has no sentence or its
        sentence has no conditions.
    """
    exp = analysis.result.explanations.get(method)
    if exp is None:
        raise ValueError(
            f"hypothesis_checks: `method` {method!r} is not among the analysis's describers "
            f"{list(analysis.result.explanations)}."
        )
    check = _Checks(ec, n_images, random_state)
    conds = analysis.sentence_conditions or []
    out = []
    for c in exp.hard_clusters:
        s = int(c.sentences[0]) if len(c.sentences) else None
        out.append(None if s is None or s >= len(conds) else check(exp.sentence_texts[s], conds[s]))
    return out


def blindspot_counterfactuals(ec, analysis, *, n_images=N_COUNTERFACTUAL, random_state=0):
    """Per describer, the counterfactual check of the first sentence that describes each covered true blindspot.

    The sentence is the one the description score reads (``analysis.description_details``: the top sentence of
    the hypothesis covering the blindspot). Each blindspot's details gain ``"counterfactual"`` (the check, as a
    dict; None when the blindspot is not covered or its sentence has no conditions).

    Returns
    -------
    dict
        ``{method: {"accuracy": float, "needed": float}}``: the mean over the covered blindspots of the
        model's accuracy where the sentence holds, and, over those where the model fails there, of the share
        of its conditions the failure needs (NaN when there is none).
    """
    check = _Checks(ec, n_images, random_state)
    conds = analysis.sentence_conditions or []
    texts = analysis.result.sentences
    out = {}
    for method, details in analysis.description_details.items():
        accuracy, needed = [], []
        for d in details:
            s = d["sentences"][0] if d.get("covered") and d.get("sentences") else None
            result = None if s is None or s >= len(conds) else check(texts[s], conds[s])
            d["counterfactual"] = None if result is None else result.to_dict()
            if result is not None:
                accuracy.append(result.holds.accuracy)
                if result.fails and result.variants:  # which conditions a failure needs; none where none is
                    needed.append(float(np.mean(result.needed())))
        out[method] = {
            "accuracy": float(np.nanmean(accuracy)) if np.isfinite(accuracy).any() else float("nan"),
            "needed": float(np.mean(needed)) if needed else float("nan"),
        }
    return out
