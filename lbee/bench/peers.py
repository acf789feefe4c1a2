"""The peer methods of the SpotCheck bench, Domino and PlaneSpot, as the SpotCheck paper ran them."""

from __future__ import annotations

import time

import numpy as np

from .protocol import MAX_HYPOTHESES, PROTOCOLS


def slicer_hypotheses(
    ec,
    image_embeddings,
    probs,
    features,
    *,
    random_state=0,
    protocol="paper",
    planespot_reducers=None,
    rows=None,
    max_hypotheses=MAX_HYPOTHESES,
):
    """Hypothesised blindspots of Domino and PlaneSpot on the EC's test set, with fit times.

    ``protocol="paper"`` (SpotCheck §5.1, app. E): every method sees only the
    positive test images (``rows``; ``image_embeddings``, ``probs`` and
    ``features`` are of those rows) and returns at most ``max_hypotheses``
    groups. Domino runs as the SpotCheck paper ran it: γ = 10 for both the
    label and the prediction terms (Table 11), 25 mixture components, the
    cross-modal (SpotCheck encoder) embeddings, ``n_slices`` = 10; "domino-model" is the same mixture on the
    classifier's penultimate features (the paper's app. I, Table 16). PlaneSpot
    runs on the positive class: the classifier's penultimate features, its
    P(square), w = 0.025 (Table 12), 10–32 components by BIC, the top 10 by
    error rate × errors with soft errors 1 − P(square), mapped to the plane by
    scvis only (the paper's PlaneSpot; pass ``planespot_reducers`` for
    t-SNE / PCA too).

    ``protocol="lbee"`` (lbee's earlier protocol, kept for comparison): all
    test images; Domino on both classes with its default 5 slices; PlaneSpot
    per class with BIC over 1..10 components, hard errors, both classes' groups
    merged by importance, with scvis, t-SNE and PCA planes.

    Returns
    -------
    dict of str to (list of ndarray, float)
        Groups (indices into the rows given) and fit seconds.
    """
    from sklearn.base import clone as sklearn_clone

    from ..slicers import DominoSlicer, PlaneSpotSlicer

    if protocol not in PROTOCOLS:
        raise ValueError(f"`protocol` must be one of {PROTOCOLS}; received {protocol!r}.")
    if planespot_reducers is None:
        planespot_reducers = ("scvis",) if protocol == "paper" else ("scvis", "tsne", "pca")
    y_all = ec.true_labels("test")
    y = y_all if rows is None else y_all[rows]
    out = {}
    t0 = time.perf_counter()
    if protocol == "paper":
        dom = DominoSlicer(
            n_slices=max_hypotheses,
            n_mixture_components=25,
            y_log_likelihood_weight=10.0,
            y_hat_log_likelihood_weight=10.0,
            random_state=random_state,
        )
    else:
        dom = DominoSlicer(random_state=random_state)
    dom.fit(image_embeddings, y, probs[:, 1])
    out["domino"] = (
        [s for s in dom.slices_ if len(s)][: max_hypotheses if protocol == "paper" else None],
        time.perf_counter() - t0,
    )
    if protocol == "paper" and features is not None:
        # SpotCheck app. I, Table 16 ("Domino-Model"): the same mixture on the classifier's own representation
        t0 = time.perf_counter()
        dom_model = sklearn_clone(dom).fit(features, y, probs[:, 1])
        out["domino-model"] = ([s for s in dom_model.slices_ if len(s)][:max_hypotheses], time.perf_counter() - t0)
    pred = probs.argmax(1)
    classes = (1,) if protocol == "paper" else (0, 1)
    for reducer in planespot_reducers:
        t0 = time.perf_counter()
        groups = []
        for c in classes:
            idx = np.flatnonzero(y == c)
            if len(idx) < 3:
                continue
            if protocol == "paper":
                ps = PlaneSpotSlicer(
                    reducer=reducer,
                    random_state=random_state,
                    n_slices=max_hypotheses,
                    min_components=10,
                    max_components=32,
                    soft_errors=True,
                )
                ps.fit(features[idx], probs[idx, c])
            else:
                ps = PlaneSpotSlicer(
                    reducer=reducer,
                    random_state=random_state,
                    n_slices=None,
                    min_components=1,
                    max_components=10,
                    soft_errors=False,
                )
                ps.fit(features[idx], probs[idx, c], errors=pred[idx] != c)
            groups += [(imp, idx[g]) for imp, g in zip(ps.importance_, ps.slices_)]
        groups.sort(key=lambda t: -t[0])
        keep = [g for _, g in groups]
        out[f"planespot-{reducer}"] = (keep[:max_hypotheses] if protocol == "paper" else keep, time.perf_counter() - t0)
    return out
