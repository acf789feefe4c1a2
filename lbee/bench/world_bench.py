"""The worlds bench: every describer on attribute worlds of any grammar, scored against the planted failures.

For each world (`lbee.bench.worlds.make_world`) and encoder quality (a median atom ROC-AUC of
`lbee.bench.simulated_encoder.SimulatedEncoder`), lbee runs as ``lbee describe`` does with the grammar's
generated sentences and the model's true-class probability as confidence: one split, Ward, the pieces of one
failure merged (one hypothesis per failure), every describer over the same hypotheses.

Scores, per planted failure and describer, from the **first sentence of the hypothesis that overlaps the failure
most** (Jaccard of images): its literals against the failure's (canonical conditions: a presence an attribute
implies is left out) give literal precision, recall, F1 and exact match. Per world, the hypotheses against the
failures' images give DR / FDR (`lbee.core.metrics`) at SpotCheck's λ_p = λ_r = 0.8 ("strict") and, beside
it, a loose variant (λ_p = 50 %, λ_r = 25 %) that the finer grammars need: a failure's images the
model gets right (10 %) are in no hard group.

Development worlds use seeds from 0, held-out test worlds seeds from `TEST_FIRST_SEED`: a change to a
describer counts only when it holds on both.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

#: The encoder qualities of the bench (median atom ROC-AUC): CLIP-like on fine attributes, good, near-perfect.
LEVELS = (0.75, 0.88, 0.97)
#: The world families: the shipped grammars of two domains and one written for the bench (camera traps).
FAMILIES = ("street_scenes", "object_photos", "camera_traps")
#: Seeds of the held-out test worlds (development worlds start at 0).
TEST_FIRST_SEED = 1000
#: (λ_p, λ_r) of the strict (SpotCheck) and loose DR / FDR, in percent.
STRICT, LOOSE = (80, 80), (50, 25)


@dataclass
class WorldRun:
    """One world at one quality: per-failure sentence scores and per-method DR / FDR.

    Attributes
    ----------
    family : str
    seed : int
    level : float
        The target median atom AUC; ``measured`` the one reached.
    rows : list of dict
        One per (method, failure): ``f1``, ``precision``, ``recall``, ``exact``, the failure and the sentence.
    discovery : list of dict
        One per method: ``dr``, ``fdr`` (strict) and ``dr_loose``, ``fdr_loose``.
    seconds : float
    """

    family: str
    seed: int
    level: float
    measured: float
    rows: list
    discovery: list
    seconds: float


def literal_scores(predicted, truth, grammar):
    """Literal precision, recall, F1 and exact match of ``predicted`` conditions against ``truth``."""
    p = set(grammar.canonical(predicted).items()) if predicted else set()
    t = set(grammar.canonical(truth).items())
    hit = len(p & t)
    precision = hit / len(p) if p else 0.0
    recall = hit / len(t) if t else 0.0
    f1 = 2 * precision * recall / (precision + recall) if hit else 0.0
    return {"precision": precision, "recall": recall, "f1": f1, "exact": float(p == t)}


def _jaccard(a, b):
    union = len(a | b)
    return len(a & b) / union if union else 0.0


def run_world(family, *, level, seed, n=10_000, n_failures=2, n_clusters=15, k=3, methods=None):
    """One world of ``family`` at encoder quality ``level``, every describer scored: a `WorldRun`."""
    from ..core.explain import explain_methods
    from ..core.metrics import discovery_rate, false_discovery_rate
    from ..core.selection import DESCRIBERS
    from ..grammar import generate
    from .simulated_encoder import SimulatedEncoder
    from .worlds import make_world

    t0 = time.perf_counter()
    world = make_world(family, n=n, n_failures=n_failures, random_state=seed)
    g = world.grammar
    enc = SimulatedEncoder(g, random_state=seed).fit_quality(world, level)
    x = enc.embed_images(world)
    measured = float(np.nanmedian(enc.atom_auc(world, x)))
    texts, conditions, _ = generate(g)
    s = enc.embed_sentences(conditions)
    tau = enc.default_tau(world, x)
    exps = explain_methods(
        x,
        s,
        methods=list(methods or DESCRIBERS),
        confidence=world.confidence,
        grammar=g,
        tau=tau,
        sentences=texts,
        n_clusters=n_clusters,
        k=k,
    )
    masks = world.failure_masks()
    failures = [set(np.flatnonzero(masks[:, j]).tolist()) for j in range(masks.shape[1])]
    of_text = dict(zip(texts, conditions))
    rows, discovery = [], []
    for method, exp in exps.items():
        for c in exp.hard_clusters:  # compose's own sentences carry their conditions
            for j, d in zip(c.sentences, c.details or []):
                if isinstance(d, dict) and "conditions" in d:
                    of_text.setdefault(exp.sentence_texts[j], d["conditions"])
        groups = [set(np.asarray(c.indices).tolist()) for c in exp.hard_clusters]
        for j, (f, truth) in enumerate(zip(failures, world.failures)):
            overlap = [_jaccard(h, f) for h in groups]
            best = int(np.argmax(overlap)) if overlap else -1
            sents = exp.hard_clusters[best].sentences if best >= 0 else []
            text = exp.sentence_texts[sents[0]] if len(sents) else ""
            pred = of_text.get(text, {})
            rows.append(
                {
                    "family": family,
                    "seed": seed,
                    "level": level,
                    "method": method,
                    "failure": g.render(truth),
                    "confounder": None if world.confounders[j] is None else g.render(dict([world.confounders[j]])),
                    "sentence": text,
                    "jaccard": overlap[best] if best >= 0 else 0.0,
                    **literal_scores(pred, truth, g),
                }
            )
        hyps = [np.asarray(c.indices) for c in exp.hard_clusters]
        blinds = [np.asarray(sorted(f)) for f in failures]
        rec = {"family": family, "seed": seed, "level": level, "method": method}
        for suffix, (lp_pct, lr_pct) in (("", STRICT), ("_loose", LOOSE)):
            lp, lr = lp_pct / 100, lr_pct / 100
            rec[f"dr{suffix}"] = discovery_rate(hyps, blinds, lambda_p=lp, lambda_r=lr) if hyps else 0.0
            rec[f"fdr{suffix}"] = false_discovery_rate(hyps, blinds, lambda_p=lp, lambda_r=lr) if hyps else np.nan
        discovery.append(rec)
    return WorldRun(family, seed, level, measured, rows, discovery, time.perf_counter() - t0)


def run_worlds(families=FAMILIES, levels=LEVELS, *, n_worlds=6, first_seed=0, n=10_000, progress=None, **kwargs):
    """Every family × quality × world: a list of `WorldRun` (``progress(run)`` after each)."""
    runs = []
    for family in families:
        for level in levels:
            for seed in range(first_seed, first_seed + n_worlds):
                run = run_world(family, level=level, seed=seed, n=n, **kwargs)
                runs.append(run)
                if progress is not None:
                    progress(run)
    return runs


def summarize_worlds(runs):
    """The bench table: per quality level and describer, the means over failures and worlds (a DataFrame)."""
    import pandas as pd

    rows = pd.DataFrame([r for run in runs for r in run.rows])
    disc = pd.DataFrame([r for run in runs for r in run.discovery])
    lit = rows.groupby(["level", "method"])[["f1", "exact", "precision", "recall"]].mean()
    dis = disc.groupby(["level", "method"])[["dr", "fdr", "dr_loose", "fdr_loose"]].mean()
    out = lit.join(dis)
    out["failures"] = rows.groupby(["level", "method"]).size()
    return out.reset_index()


def markdown_table(table):
    """The summary table as Markdown (two decimals)."""
    cols = list(table.columns)
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for row in table.itertuples(index=False):
        cells = [f"{v:.2f}" if isinstance(v, float) else str(v) for v in row]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)
