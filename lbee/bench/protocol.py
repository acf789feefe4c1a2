"""The two protocols of the SpotCheck bench: which test images the methods see, how many hypotheses they return.

'paper' (SpotCheck §5.1): the positive test images only, at most `MAX_HYPOTHESES` hypotheses per method.
'lbee' (lbee's earlier protocol, kept for comparison): the whole test set, no cap.
"""

from __future__ import annotations

import numpy as np

#: The paper's cap on hypothesised blindspots per method (SpotCheck §5.1).
MAX_HYPOTHESES = 10
PROTOCOLS = ("paper", "lbee")


def order_by_importance(groups, performance):
    """Hard groups ordered by error rate × number of errors (most important first); ω is correctness."""

    def importance(g):
        errors = float(np.sum(1.0 - performance[g]))
        return errors / max(len(g), 1) * errors

    return sorted(range(len(groups)), key=lambda i: -importance(groups[i]))


def positive_rows(ec):
    """Indices of the positive-class test images (a square present): what the paper's methods see."""
    return np.flatnonzero(ec.true_labels("test") == 1)


def subset_inputs(inputs, scores, rows):
    """The run-layer inputs and scores restricted to ``rows`` (same objects, fewer images)."""
    import dataclasses

    rows = np.asarray(rows, dtype=np.int64)
    take = lambda v: None if v is None else (v[rows] if isinstance(v, np.ndarray) else [v[i] for i in rows])  # noqa: E731
    sub_in = dataclasses.replace(
        inputs,
        embeddings=inputs.embeddings[rows],
        image_ids=take(inputs.image_ids),
        image_paths=take(inputs.image_paths),
        thumbnails=take(inputs.thumbnails),
        labels=take(inputs.labels),
        relevance=take(inputs.relevance),
    )
    ms = scores.model_scores.subset(rows) if scores.model_scores is not None else None
    split = None if scores.split is None else tuple(np.asarray(m)[rows] for m in scores.split)
    sub_sc = dataclasses.replace(
        scores,
        confidence=np.asarray(scores.confidence)[rows],
        performance=np.asarray(scores.performance)[rows],
        model_scores=ms,
        split=split,
    )
    return sub_in, sub_sc
