"""Running every describer on an EC and scoring it with complete ground truth."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from ..core.evaluation import evaluate
from ..core.metrics import discovery_rate, failure_analysis, false_discovery_rate
from ..core.selection import DESCRIBERS
from ..io.sentences import WORLD_SENTENCE_SET
from ..spotcheck import predict, spotcheck_sentences


def order_by_importance(groups, performance):
    """Hard groups ordered by error rate × number of errors (most important first); ω is correctness."""
    def importance(g):
        errors = float(np.sum(1.0 - performance[g]))
        return errors / max(len(g), 1) * errors

    return sorted(range(len(groups)), key=lambda i: -importance(groups[i]))


#: The paper's cap on hypothesised blindspots per method (SpotCheck §5.1).
MAX_HYPOTHESES = 10
PROTOCOLS = ("paper", "lbee")
#: The class label's condition: every official blindspot pins it, so naming it says nothing.
CLASS_CONDITION = ("square", "presence")


def description_score(membership, hypotheses, top_sentences, relevance, conditions, blindspots, *,
                      lambda_p=0.8, lambda_r=0.8, true_of=0.8, specific=0.3):
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
        entry = {"blindspot": j, "covered": False, "group": None, "sentences": [], "recall": 0.0,
                 "truthfulness": 0.0, "score": 0.0}
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
        named = {key for s, t, sp in zip(sents, true_, spec) if t and sp
                 for key, v in conditions[s].items() if defining.get(key) == v}
        recall = len(named) / len(defining) if defining else 1.0
        truth = float(np.mean(true_))
        entry.update(recall=recall, truthfulness=truth, score=recall * truth, named=sorted(map(list, named)))
    score = float(np.mean([d["score"] for d in details])) if details else float("nan")
    return score, details


def slicer_hypotheses(ec, image_embeddings, probs, features, *, random_state=0, protocol="paper",
                      planespot_reducers=None, rows=None, max_hypotheses=MAX_HYPOTHESES):
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
        dom = DominoSlicer(n_slices=max_hypotheses, n_mixture_components=25, y_log_likelihood_weight=10.0,
                           y_hat_log_likelihood_weight=10.0, random_state=random_state)
    else:
        dom = DominoSlicer(random_state=random_state)
    dom.fit(image_embeddings, y, probs[:, 1])
    out["domino"] = ([s for s in dom.slices_ if len(s)][:max_hypotheses if protocol == "paper" else None],
                     time.perf_counter() - t0)
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
                ps = PlaneSpotSlicer(reducer=reducer, random_state=random_state, n_slices=max_hypotheses,
                                     min_components=10, max_components=32, soft_errors=True)
                ps.fit(features[idx], probs[idx, c])
            else:
                ps = PlaneSpotSlicer(reducer=reducer, random_state=random_state, n_slices=None, min_components=1,
                                     max_components=10, soft_errors=False)
                ps.fit(features[idx], probs[idx, c], errors=pred[idx] != c)
            groups += [(imp, idx[g]) for imp, g in zip(ps.importance_, ps.slices_)]
        groups.sort(key=lambda t: -t[0])
        keep = [g for _, g in groups]
        out[f"planespot-{reducer}"] = (keep[:max_hypotheses] if protocol == "paper" else keep,
                                       time.perf_counter() - t0)
    return out


#: The sentences the demo and the bench describe with (one place: :data:`lbee.io.sentences.WORLD_SENTENCE_SET`).
SENTENCE_SET = WORLD_SENTENCE_SET


def sentence_conditions(inputs, explanations):
    """Each sentence's conditions for the run's whole list: the set's, then those of the sentences 'compose' added."""
    conds = list(inputs.sentence_conditions) if inputs.sentence_conditions is not None else \
        [c for _, c, _ in spotcheck_sentences()]
    e = explanations.get("compose")
    if e is None:
        return conds
    conds += [None] * (len(e.sentence_texts) - len(conds))
    for hc in e.hard_clusters:
        for s, d in zip(hc.sentences, hc.details):
            if conds[s] is None:
                conds[s] = d["conditions"]
    return conds


def positive_rows(ec):
    """Indices of the positive-class test images (a square present): what the paper's methods see."""
    return np.flatnonzero(ec.true_labels("test") == 1)


def subset_inputs(inputs, scores, rows):
    """The run-layer inputs and scores restricted to ``rows`` (same objects, fewer images)."""
    import dataclasses

    rows = np.asarray(rows, dtype=np.int64)
    take = lambda v: None if v is None else (v[rows] if isinstance(v, np.ndarray) else [v[i] for i in rows])  # noqa: E731
    sub_in = dataclasses.replace(inputs, embeddings=inputs.embeddings[rows], image_ids=take(inputs.image_ids),
                                 image_paths=take(inputs.image_paths), thumbnails=take(inputs.thumbnails),
                                 labels=take(inputs.labels), relevance=take(inputs.relevance))
    ms = scores.model_scores.subset(rows) if scores.model_scores is not None else None
    split = None if scores.split is None else tuple(np.asarray(m)[rows] for m in scores.split)
    sub_sc = dataclasses.replace(scores, confidence=np.asarray(scores.confidence)[rows],
                                 performance=np.asarray(scores.performance)[rows], model_scores=ms, split=split)
    return sub_in, sub_sc


@dataclass
class ECAnalysis:
    """Everything measured on one EC.

    ``rows`` are the test images the analysis saw (all of them under the
    'lbee' protocol, the positives under 'paper'); ``result``, ``hypotheses``,
    ``relevance`` and ``embeddings`` are indexed by position in ``rows``.
    """

    result: object  # lbee.run.pipeline.DescribeResult
    scores: dict
    dr: float
    fdr: float
    description_score: dict
    failures: list = field(default_factory=list)
    hypotheses: list = field(default_factory=list)
    relevance: np.ndarray | None = None
    slicers: dict = field(default_factory=dict)
    embeddings: np.ndarray | None = None
    sentence_embeddings: np.ndarray | None = None
    rows: np.ndarray | None = None
    protocol: str = "paper"
    description_details: dict = field(default_factory=dict)

    def summary(self):
        return {"protocol": self.protocol, "n_images": None if self.rows is None else int(len(self.rows)),
                "scores": self.scores, "DR": self.dr, "FDR": self.fdr,
                "description_score": self.description_score, "description_details": self.description_details,
                "failure_analysis": self.failures, "slicers": self.slicers}


def _log_prob_true(ec, rows):
    """log P(true class) in float64 from the classifier's logits (−cross-entropy; never saturates)."""
    import torch

    from ..spotcheck import to_tensor

    y = ec.true_labels("test")[rows]
    out = []
    with torch.inference_mode():
        for i in range(0, len(rows), 512):
            logits = ec.model(to_tensor(ec.images["test"][rows[i:i + 512]])).double()
            out.append(torch.log_softmax(logits, 1).numpy())
    logp = np.concatenate(out) if out else np.zeros((0, 2))
    return logp[np.arange(len(rows)), y]


def analyze_ec(ec, encoder, *, protocol="paper", methods=DESCRIBERS, n_clusters=None, k=3, a=0.2, o=0.2, tau=None,
               image_ids=None, with_slicers=False, max_hypotheses=MAX_HYPOTHESES, random_state=0,
               sentence_set=SENTENCE_SET):
    """Embed the EC's test images, run the describers through the run layer and score them.

    Parameters
    ----------
    ec : ExperimentalConfiguration
    encoder : Encoder
        The SpotCheck encoder.
    protocol : {'paper', 'lbee'}, default='paper'
        'paper' (SpotCheck §5.1): only the positive test images (square
        present) are analysed, every method returns at most
        ``max_hypotheses`` = 10 hypotheses, LBEE clusters its hard split into
        ``n_clusters`` = 10 groups, and the split is by correctness: the
        misclassified positives are hard, the others easy (φ = log P(true
        class) is recorded). LBEE's μ ± aσ rule cannot serve a near-perfect
        model: with fewer than about 4 % errors φ piles up at its maximum and
        μ + 0.2σ lies above every image, so the easy split is empty (4 of the
        first 10 ECs), and the logit margin, which spreads the correct images,
        puts hundreds of them in the hard split instead. 'lbee' (the earlier protocol): the
        whole test set, 15 hard clusters, φ = P(true class), no cap.
    n_clusters : int, optional
        Hard clusters C^h (default 10 under 'paper', 15 under 'lbee').
    with_slicers : bool, default=False
        Also run Domino and PlaneSpot (:func:`slicer_hypotheses`).

    Returns
    -------
    ECAnalysis
        DR / FDR (λ_p = λ_r = 0.8) of LBEE's hard clusters ordered by error
        rate × errors, the metrics of every describer with exact Γ, and
        :func:`description_score` per describer.
    """
    import dataclasses

    from ..run.inputs import DatasetSpec, model_scores, spotcheck_inputs, spotcheck_relevance
    from ..run.pipeline import analyse
    from ..run.settings import RunSettings

    if protocol not in PROTOCOLS:
        raise ValueError(f"`protocol` must be one of {PROTOCOLS}; received {protocol!r}.")
    if n_clusters is None:
        n_clusters = max_hypotheses if protocol == "paper" else 15
    settings = RunSettings(a=a, clusters=n_clusters, k=k, tau=tau, o=o, methods=tuple(methods),
                           confidence_from="true_class")
    ds = DatasetSpec(name=f"SpotCheck world {ec.seed}", spotcheck={"seed": ec.seed}, encoder="spotcheck",
                     sentence_set=sentence_set, relevance="ground_truth", settings=settings)
    inputs = spotcheck_inputs(ds, ec, encoder)
    scores = model_scores(ds, None, inputs)
    n_test = len(inputs.image_ids)
    if protocol == "paper":
        rows = positive_rows(ec)
        inputs, scores = subset_inputs(inputs, scores, rows)
        logp = _log_prob_true(ec, rows)
        wrong = logp < np.log(0.5)  # misclassified (binary): where a blindspot lives, by SpotCheck's definition
        scores = dataclasses.replace(scores, confidence=logp, confidence_desc="log-probability of the true class",
                                     split=(wrong, ~wrong))
    else:
        rows = np.arange(n_test)
    t0 = time.perf_counter()
    run = analyse(inputs, scores, settings, dataset=ds.name, model=f"square classifier (seed {ec.seed})")
    ward_s = time.perf_counter() - t0
    result = run.main
    exps = result.explanations
    omega = scores.performance
    conditions = sentence_conditions(inputs, exps)
    attrs = [ec.attributes["test"][i] for i in rows]
    rel = spotcheck_relevance(attrs, conditions, inputs.grammar)  # exact, 'compose''s own sentences included
    named = [inputs.grammar.implied(c) for c in conditions] if inputs.grammar is not None else conditions
    scores_ = {m: evaluate(e, rel[:, :e.params["n_sentences"]], omega, o=o) for m, e in exps.items()}
    first = next(iter(exps.values()))
    groups = [c.indices for c in first.hard_clusters]
    part = result.partition
    merged = part is not None and part.hypotheses_ is not None
    # merged hypotheses come ranked by error concentration (lbee.core.hypotheses); the slicer's by importance
    order = list(range(len(groups))) if merged else order_by_importance(groups, omega)
    if protocol == "paper":
        order = order[:max_hypotheses]
    hyps = [groups[i] for i in order]
    memb = ec.membership("test")[rows]
    truth = [np.flatnonzero(memb[:, j]) for j in range(memb.shape[1])]
    dr = discovery_rate(hyps, truth)
    fdr = false_discovery_rate(hyps, truth)
    desc, details = {}, {}
    for m, e in exps.items():
        desc[m], details[m] = description_score(memb, hyps, lambda i, e=e: e.hard_clusters[order[i]].sentences[:k],
                                                rel, named, ec.blindspots)
        for d in details[m]:  # the hard cluster of the covering hypothesis
            d["cluster"] = None if d["group"] is None else int(order[d["group"]])
    default_ids = [f"images/test/{i:05d}.png" for i in rows]
    result.image_ids = list(image_ids if image_ids is not None else default_ids)
    result.extra = {"blindspots": ec.describe_blindspots(), "metrics": scores_, "DR": dr, "FDR": fdr,
                    "description_score": desc, "ec_seed": ec.seed, "protocol": protocol,
                    "confidence": scores.confidence_desc,
                    **{key: result.extra[key] for key in ("hypotheses", "sentence_conditions") if key in result.extra}}
    slicers = {"ward": {"DR": dr, "FDR": fdr, "fit_s": ward_s, "n_groups": len(hyps)}}
    if merged:  # beside it, the fixed-C Ward clusters ordered by importance, as before merging
        raw = part.slicer_groups_
        raw_order = order_by_importance(raw, omega)[:max_hypotheses if protocol == "paper" else None]
        raw_h = [raw[i] for i in raw_order]
        slicers["ward-fixed-c"] = {"DR": discovery_rate(raw_h, truth), "FDR": false_discovery_rate(raw_h, truth),
                                   "fit_s": ward_s, "n_groups": len(raw_h)}
    if with_slicers:
        probs, feats = predict(ec.model, ec.images["test"][rows])
        for name, (h, secs) in slicer_hypotheses(ec, inputs.embeddings, probs, feats, protocol=protocol, rows=rows,
                                                 max_hypotheses=max_hypotheses,
                                                 random_state=random_state).items():
            slicers[name] = {"DR": discovery_rate(h, truth), "FDR": false_discovery_rate(h, truth),
                             "fit_s": secs, "n_groups": len(h)}
    return ECAnalysis(result, scores_, dr, fdr, desc, failure_analysis(hyps, truth), hyps, rel, slicers,
                      inputs.embeddings, inputs.sentence_embeddings, rows, protocol, details)
