"""The description score: how well a method's sentences name the true blindspots it found (beyond the papers)."""

from __future__ import annotations

import numpy as np

#: The class label's condition: every official blindspot pins it, so naming it says nothing.
CLASS_CONDITION = ("square", "presence")


def description_score(
    membership,
    hypotheses,
    top_sentences,
    relevance,
    conditions,
    blindspots,
    *,
    lambda_p=0.8,
    lambda_r=0.8,
    true_of=0.8,
    specific=0.3,
    slots=None,
):
    """How well the sentences of the group covering each true blindspot describe it (beyond the papers).

    For every true blindspot Ψ_m: if no hypothesis covers it (BR < λ_r), it
    scores 0. Otherwise take the covering group (BP ≥ λ_p) with the largest
    overlap and its top-K sentences. A sentence is *true* when it holds for
    ≥ ``true_of`` of Ψ_m's images and *specific* when it holds for ≤
    ``specific`` of the evaluated images outside Ψ_m. The blindspot's score is

        recall × truthfulness,

    recall = the fraction of Ψ_m's defining conditions other than the class
    label ("square present") that some true *and* specific sentence names, and
    truthfulness = the fraction of the top-K sentences that are true of Ψ_m.
    A group that leads with "An image with some text" (true of most images)
    names nothing; two blindspots given the same generic sentence both score 0.

    Parameters
    ----------
    membership : ndarray of bool, shape (n, M)
        Blindspot membership of the n images the method saw.
    hypotheses : list of ndarray of int
        Hypothesised blindspots (indices into the n images).
    top_sentences : callable
        ``top_sentences(i)`` -> list of sentence indices of hypothesis ``i``, best first.
    relevance : ndarray of shape (n, N)
        Exact Γ of the n images.
    conditions : list of dict
        Each sentence's conditions ``{(layer, attribute): value}``.
    blindspots : list of Blindspot
    slots : int, optional
        A variant, reported beside the score, never instead: truthfulness
        over ``max(slots, number of sentences)``, so a method that returns
        fewer than K sentences counts the missing ones as untrue.

    Returns
    -------
    score : float
        Mean over the true blindspots (NaN when there is none).
    details : list of dict
        Per blindspot: covered, group, sentences, recall, truthfulness, score.
    """
    from ..core.metrics import blindspot_precision, blindspot_recall

    rel = np.asarray(relevance, dtype=bool)
    details = []
    for j, bs in enumerate(blindspots):
        inside = np.asarray(membership[:, j], dtype=bool)
        b = np.flatnonzero(inside)
        entry = {
            "blindspot": j,
            "covered": False,
            "group": None,
            "sentences": [],
            "recall": 0.0,
            "truthfulness": 0.0,
            "score": 0.0,
        }
        details.append(entry)
        if len(b) == 0 or blindspot_recall(hypotheses, b, lambda_p) < lambda_r:
            continue
        covering = [i for i, h in enumerate(hypotheses) if blindspot_precision(h, b) >= lambda_p]
        best = max(covering, key=lambda i: len(np.intersect1d(hypotheses[i], b)))
        sents = [int(s) for s in (top_sentences(best) or [])]
        entry.update(covered=True, group=int(best), sentences=sents)
        if not sents:
            continue
        true_ = [rel[inside, s].mean() >= true_of for s in sents]
        outside = ~inside
        spec = [(rel[outside, s].mean() if outside.any() else 0.0) <= specific for s in sents]
        defining = {(layer, attr): v for layer, attr, v in bs.triplets if (layer, attr) != CLASS_CONDITION}
        named = {
            key
            for s, t, sp in zip(sents, true_, spec)
            if t and sp
            for key, v in conditions[s].items()
            if defining.get(key) == v
        }
        recall = len(named) / len(defining) if defining else 1.0
        truth = float(np.sum(true_)) / max(len(true_), slots or 0)
        entry.update(recall=recall, truthfulness=truth, score=recall * truth, named=sorted(map(list, named)))
    score = float(np.mean([d["score"] for d in details])) if details else float("nan")
    return score, details
