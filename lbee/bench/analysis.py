"""Running every describer on an EC and scoring it with complete ground truth."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from ..core.evaluation import evaluate
from ..core.metrics import blindspot_precision, discovery_rate, failure_analysis, false_discovery_rate
from ..core.selection import DESCRIBERS
from ..io.sentences import WORLD_SENTENCE_SET
from ..spotcheck import predict, spotcheck_sentences
from .description import description_score
from .peers import slicer_hypotheses
from .protocol import MAX_HYPOTHESES, PROTOCOLS, order_by_importance, positive_rows, subset_inputs

#: The sentences the demo and the bench describe with (one place: `lbee.io.sentences.WORLD_SENTENCE_SET`).
SENTENCE_SET = WORLD_SENTENCE_SET


def sentence_conditions(inputs, explanations):
    """Each sentence's conditions for the run's whole list: the set's, then those of the sentences 'compose' added."""
    conds = (
        list(inputs.sentence_conditions)
        if inputs.sentence_conditions is not None
        else [c for _, c, _ in spotcheck_sentences()]
    )
    e = explanations.get("compose")
    if e is None:
        return conds
    conds += [None] * (len(e.sentence_texts) - len(conds))
    for hc in e.hard_clusters:
        for s, d in zip(hc.sentences, hc.details):
            if conds[s] is None:
                conds[s] = d["conditions"]
    return conds


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
    #: variants of the description score, beside it: {variant: {method: score}}
    description_variants: dict = field(default_factory=dict)
    #: each sentence's conditions over the world's attributes (None where it has none), by sentence index
    sentence_conditions: list | None = None
    #: beside the description score, never instead: {method: {"accuracy", "needed"}} on fresh renders
    #: (`lbee.bench.counterfactual.blindspot_counterfactuals`; empty until it is run)
    counterfactual: dict = field(default_factory=dict)
    #: hypotheses confirmed on held-out images, of the blindspots' and of the others (None: not confirmed)
    confirmation: dict | None = None

    def summary(self):
        return {
            "protocol": self.protocol,
            "n_images": None if self.rows is None else int(len(self.rows)),
            "scores": self.scores,
            "DR": self.dr,
            "FDR": self.fdr,
            "description_score": self.description_score,
            "description_details": self.description_details,
            "description_variants": self.description_variants,
            "counterfactual": self.counterfactual,
            "failure_analysis": self.failures,
            "slicers": self.slicers,
            "confirmation": self.confirmation,
        }


def _log_prob_true(ec, rows):
    """The true class's log-probability in float64, from the classifier's logits (−cross-entropy; never saturates)."""
    import torch

    from ..spotcheck import to_tensor

    y = ec.true_labels("test")[rows]
    out = []
    with torch.inference_mode():
        for i in range(0, len(rows), 512):
            logits = ec.model(to_tensor(ec.images["test"][rows[i : i + 512]])).double()
            out.append(torch.log_softmax(logits, 1).numpy())
    logp = np.concatenate(out) if out else np.zeros((0, 2))
    return logp[np.arange(len(rows)), y]


def analyze_ec(
    ec,
    encoder,
    *,
    protocol="paper",
    methods=DESCRIBERS,
    n_clusters=None,
    k=3,
    a=0.2,
    o=0.2,
    tau=None,
    image_ids=None,
    with_slicers=False,
    max_hypotheses=MAX_HYPOTHESES,
    random_state=0,
    sentence_set=SENTENCE_SET,
):
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
        Also run Domino and PlaneSpot (`slicer_hypotheses`).

    Returns
    -------
    ECAnalysis
        DR / FDR (λ_p = λ_r = 0.8) of LBEE's hard clusters ordered by error
        rate × errors, the metrics of every describer with exact Γ, and
        `description_score` per describer.
    """
    import dataclasses

    from ..run.inputs import DatasetSpec, model_scores, spotcheck_inputs, spotcheck_relevance
    from ..run.pipeline import analyse
    from ..run.settings import RunSettings

    if protocol not in PROTOCOLS:
        raise ValueError(f"`protocol` must be one of {PROTOCOLS}; received {protocol!r}.")
    if n_clusters is None:
        n_clusters = max_hypotheses if protocol == "paper" else 15
    settings = RunSettings(
        a=a, clusters=n_clusters, k=k, tau=tau, o=o, methods=tuple(methods), confidence_from="true_class"
    )
    ds = DatasetSpec(
        name=f"SpotCheck world {ec.seed}",
        spotcheck={"seed": ec.seed},
        encoder="spotcheck",
        sentence_set=sentence_set,
        relevance="ground_truth",
        settings=settings,
    )
    inputs = spotcheck_inputs(ds, ec, encoder)
    scores = model_scores(ds, None, inputs)
    n_test = len(inputs.image_ids)
    if protocol == "paper":
        rows = positive_rows(ec)
        inputs, scores = subset_inputs(inputs, scores, rows)
        logp = _log_prob_true(ec, rows)
        wrong = logp < np.log(0.5)  # misclassified (binary): where a blindspot lives, by SpotCheck's definition
        scores = dataclasses.replace(
            scores, confidence=logp, confidence_desc="log-probability of the true class", split=(wrong, ~wrong)
        )
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
    scores_ = {m: evaluate(e, rel[:, : e.params["n_sentences"]], omega, o=o) for m, e in exps.items()}
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
    all_truth = [np.flatnonzero(memb[:, j]) for j in range(memb.shape[1])]  # the peers see every image
    conf = result.extra.get("confirmation") or {}
    if conf.get("held_out"):  # the hypotheses are found on the rest: blindspots are scored there
        memb = memb.copy()
        memb[np.asarray(conf["held_out"], dtype=np.int64)] = False
    truth = [np.flatnonzero(memb[:, j]) for j in range(memb.shape[1])]
    dr = discovery_rate(hyps, truth)
    fdr = false_discovery_rate(hyps, truth)
    desc, details = {}, {}
    for m, e in exps.items():
        desc[m], details[m] = description_score(
            memb, hyps, lambda i, e=e: e.hard_clusters[order[i]].sentences[:k], rel, named, ec.blindspots
        )
        for d in details[m]:  # the hard cluster of the covering hypothesis
            d["cluster"] = None if d["group"] is None else int(order[d["group"]])
    # beside the score, never instead: the first sentence alone (K = 1), and missing sentences counted untrue
    variants = {
        name: {
            m: description_score(
                memb,
                hyps,
                lambda i, e=e, top=top: e.hard_clusters[order[i]].sentences[:top],
                rel,
                named,
                ec.blindspots,
                slots=slots,
            )[0]
            for m, e in exps.items()
        }
        for name, top, slots in (("first sentence", 1, None), ("missing sentences untrue", k, k))
    }
    confirmation = confirmation_counts(result.extra.get("confirmation"), groups, truth, details)
    default_ids = [f"images/test/{i:05d}.png" for i in rows]
    result.image_ids = list(image_ids if image_ids is not None else default_ids)
    result.extra = {
        "blindspots": ec.describe_blindspots(),
        "metrics": scores_,
        "DR": dr,
        "FDR": fdr,
        "description_score": desc,
        "ec_seed": ec.seed,
        "protocol": protocol,
        "confidence": scores.confidence_desc,
        **{
            key: result.extra[key]
            for key in ("hypotheses", "sentence_conditions", "confirmation", "unassigned_hard", "performance")
            if key in result.extra
        },
    }
    slicers = {"ward": {"DR": dr, "FDR": fdr, "fit_s": ward_s, "n_groups": len(hyps)}}
    if merged:  # beside it, the fixed-C Ward clusters ordered by importance, as before merging
        raw = part.slicer_groups_
        raw_order = order_by_importance(raw, omega)[: max_hypotheses if protocol == "paper" else None]
        raw_h = [raw[i] for i in raw_order]
        slicers["ward-fixed-c"] = {
            "DR": discovery_rate(raw_h, truth),
            "FDR": false_discovery_rate(raw_h, truth),
            "fit_s": ward_s,
            "n_groups": len(raw_h),
        }
    if with_slicers:
        probs, feats = predict(ec.model, ec.images["test"][rows])
        for name, (h, secs) in slicer_hypotheses(
            ec,
            inputs.embeddings,
            probs,
            feats,
            protocol=protocol,
            rows=rows,
            max_hypotheses=max_hypotheses,
            random_state=random_state,
        ).items():
            slicers[name] = {
                "DR": discovery_rate(h, all_truth),
                "FDR": false_discovery_rate(h, all_truth),
                "fit_s": secs,
                "n_groups": len(h),
            }
    return ECAnalysis(
        result,
        scores_,
        dr,
        fdr,
        desc,
        failure_analysis(hyps, truth),
        hyps,
        rel,
        slicers,
        inputs.embeddings,
        inputs.sentence_embeddings,
        rows,
        protocol,
        details,
        variants,
        conditions,
        confirmation=confirmation,
    )


def confirmation_counts(conf, groups, truth, details, lambda_p=0.8):
    """How many blindspots' hypotheses confirmed on held-out images, and how many of the hypotheses matching none.

    A blindspot's hypothesis is the one the description score found covering it (``details``, the first
    describer's); a hypothesis matches no blindspot when at most ``lambda_p`` of its images lie in each one.

    Returns
    -------
    dict or None
        ``blindspots``, ``blindspots_confirmed``, ``others``, ``others_confirmed``, and the same two counts by q
        alone (``..._confirmed_at_q``); None when the run did not confirm (skipped or off).
    """
    if not conf or conf.get("status") != "done":
        return None
    found = [d for d in next(iter(details.values()), []) if d.get("covered")]
    others = [i for i, g in enumerate(groups) if all(blindspot_precision(g, b) < lambda_p for b in truth)]
    out = {"blindspots": len(truth), "others": len(others)}
    for rule in ("confirmed", "confirmed_at_q"):  # the run's rule, and q alone beside it (issue 33's definition)
        out[f"blindspots_{rule}"] = sum(bool(conf["groups"][d["cluster"]].get(rule)) for d in found)
        out[f"others_{rule}"] = sum(bool(conf["groups"][i].get(rule)) for i in others)
    return out
