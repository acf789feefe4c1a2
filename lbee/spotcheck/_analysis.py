"""Running every describer on an EC and scoring it with complete ground truth."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from ..core.evaluation import evaluate
from ..core.selection import METHODS
from ..core.metrics import discovery_rate, failure_analysis, false_discovery_rate
from ._ec import predict
from ._sentences import spotcheck_sentences


def order_by_importance(groups, performance):
    """Hard groups ordered by error rate × number of errors (most important first); ω is correctness."""
    def importance(g):
        errors = float(np.sum(1.0 - performance[g]))
        return errors / max(len(g), 1) * errors

    return sorted(range(len(groups)), key=lambda i: -importance(groups[i]))


def description_accuracy(ec_membership, hypotheses, relevance, conditions, blindspots, top_sentence,
                         lambda_p=0.8, lambda_r=0.8):
    """Fraction of true blindspots that are covered and well described (a measure beyond the papers).

    A blindspot counts when some hard group covers it (BP ≥ λ_p and BR ≥ λ_r
    overall) and the top sentence of the covering group with the largest overlap
    is true of ≥ 80% of the blindspot's images and names one of its defining
    (layer, attribute, value) triplets.
    """
    from ..core.metrics import blindspot_precision, blindspot_recall

    hits = []
    for j, bs in enumerate(blindspots):
        b = np.flatnonzero(ec_membership[:, j])
        if blindspot_recall(hypotheses, b, lambda_p) < lambda_r:
            hits.append(False)
            continue
        covering = [i for i, h in enumerate(hypotheses) if blindspot_precision(h, b) >= lambda_p]
        best = max(covering, key=lambda i: len(np.intersect1d(hypotheses[i], b)))
        s = top_sentence(best)
        if s is None:
            hits.append(False)
            continue
        true_enough = relevance[b, s].mean() >= 0.8
        names = any(bs.as_dict().get(k) == v for k, v in conditions[s].items())
        hits.append(bool(true_enough and names))
    return float(np.mean(hits)) if hits else float("nan")


def slicer_hypotheses(ec, image_embeddings, probs, features, *, random_state=0,
                      planespot_reducers=("scvis", "tsne", "pca")):
    """Hypothesised blindspots of Domino and PlaneSpot on the EC's test set, with fit times.

    Domino gets the cross-modal image embeddings, labels and P(square); PlaneSpot
    runs per class on the classifier's penultimate features and its confidence
    for that class, and the groups of both classes are merged by importance.

    Returns
    -------
    dict of str to (list of ndarray, float)
    """

    from ..slicers import DominoSlicer, PlaneSpotSlicer

    y = ec.true_labels("test")
    out = {}
    t0 = time.perf_counter()
    dom = DominoSlicer(random_state=random_state).fit(image_embeddings, y, probs[:, 1])
    out["domino"] = ([s for s in dom.slices_ if len(s)], time.perf_counter() - t0)
    pred = probs.argmax(1)
    for reducer in planespot_reducers:
        t0 = time.perf_counter()
        groups = []
        for c in (0, 1):
            idx = np.flatnonzero(y == c)
            if len(idx) < 3:
                continue
            ps = PlaneSpotSlicer(reducer=reducer, random_state=random_state).fit(features[idx], probs[idx, c],
                                                                                errors=pred[idx] != c)
            groups += [(imp, idx[g]) for imp, g in zip(ps.importance_, ps.slices_)]
        groups.sort(key=lambda t: -t[0])
        out[f"planespot-{reducer}"] = ([g for _, g in groups], time.perf_counter() - t0)
    return out


@dataclass
class ECAnalysis:
    """Everything measured on one EC."""

    result: object  # lbee.run.pipeline.DescribeResult
    scores: dict
    dr: float
    fdr: float
    description_accuracy: dict
    failures: list = field(default_factory=list)
    hypotheses: list = field(default_factory=list)
    relevance: np.ndarray | None = None
    slicers: dict = field(default_factory=dict)
    embeddings: np.ndarray | None = None
    sentence_embeddings: np.ndarray | None = None

    def summary(self):
        return {"scores": self.scores, "DR": self.dr, "FDR": self.fdr,
                "description_accuracy": self.description_accuracy, "failure_analysis": self.failures,
                "slicers": self.slicers}


def analyze_ec(ec, encoder, *, methods=METHODS, n_clusters=15, k=3, a=0.2, o=0.2, tau=None, image_ids=None,
               with_slicers=False):
    """Embed the EC's test images, run the describers through the run layer and score them.

    φ is the model's probability of the true class (the test set is correctly
    labelled) and ω its correctness. Hypothesised blindspots for DR / FDR are
    the hard clusters ordered by error rate × number of errors.
    """
    from ..run.inputs import DatasetSpec, model_scores, spotcheck_inputs
    from ..run.pipeline import analyse
    from ..run.settings import RunSettings

    settings = RunSettings(a=a, clusters=n_clusters, k=k, tau=tau, o=o, methods=tuple(methods),
                           confidence_from="true_class")
    ds = DatasetSpec(name=f"SpotCheck world {ec.seed}", spotcheck={"seed": ec.seed}, encoder="spotcheck",
                     sentence_set="spotcheck", relevance="ground_truth", settings=settings)
    inputs = spotcheck_inputs(ds, ec, encoder)
    scores = model_scores(ds, None, inputs)
    t0 = time.perf_counter()
    run = analyse(inputs, scores, settings, dataset=ds.name, model=f"square classifier (seed {ec.seed})")
    ward_s = time.perf_counter() - t0
    result = run.main
    exps = result.explanations
    rel, omega = inputs.relevance, scores.performance
    conditions = [c for _, c, _ in spotcheck_sentences()]
    scores_ = {m: evaluate(e, rel, omega, o=o) for m, e in exps.items()}
    first = next(iter(exps.values()))
    groups = [c.indices for c in first.hard_clusters]
    order = order_by_importance(groups, omega)
    hyps = [groups[i] for i in order]
    truth = ec.blindspot_indices("test")
    dr = discovery_rate(hyps, truth)
    fdr = false_discovery_rate(hyps, truth)
    memb = ec.membership("test")
    desc = {m: description_accuracy(memb, groups, rel, conditions, ec.blindspots,
                                    lambda i, e=e: e.hard_clusters[i].sentences[0]
                                    if e.hard_clusters[i].sentences else None)
            for m, e in exps.items()}
    result.image_ids = list(image_ids or [f"images/test/{i:05d}.png" for i in range(len(inputs.image_ids))])
    result.extra = {"blindspots": ec.describe_blindspots(), "metrics": scores_, "DR": dr, "FDR": fdr,
                    "description_accuracy": desc, "ec_seed": ec.seed}
    slicers = {"ward": {"DR": dr, "FDR": fdr, "fit_s": ward_s, "n_groups": len(hyps)}}
    if with_slicers:
        probs, feats = predict(ec.model, ec.images["test"])
        for name, (h, secs) in slicer_hypotheses(ec, inputs.embeddings, probs, feats).items():
            slicers[name] = {"DR": discovery_rate(h, truth), "FDR": false_discovery_rate(h, truth),
                             "fit_s": secs, "n_groups": len(h)}
    return ECAnalysis(result, scores_, dr, fdr, desc, failure_analysis(hyps, truth), hyps, rel, slicers,
                      inputs.embeddings, inputs.sentence_embeddings)
