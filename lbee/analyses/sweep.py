"""Sensitivity sweeps over K, C and o (LBEE Fig. 6 and Fig. 10).

- K (sentences per cluster): the split and clustering are computed once and
  only the selection is redone.
- C (clusters, C^h = C^e): the Ward trees of the hard and easy sides are
  built once (cached in a temporary folder) and cut at each value.
- o (β = o·std ω): the explanations do not change; only S*_β and the metrics
  that depend on it (AHR, TPR, JI) move, ACR stays constant, as in Fig. 10.
"""

from __future__ import annotations

import logging

import numpy as np

from ..core.clustering import DEFAULT_WARD
from ..core.evaluation import DEFAULT_O, check_relevance, failure_sentences, score_explanation
from ..core.partition import DEFAULT_A, DEFAULT_K, DEFAULT_N_CLUSTERS, partition
from ..core.selection import CLIP_TAU, METHODS
from ..core.sentence_index import as_sentence_index

logger = logging.getLogger("lbee")

METRICS = ("ACR", "AHR", "TPR", "JI")
K_GRID = (1, 2, 3, 5, 10)
C_GRID = (1, 5, 10, 15, 20, 30)
O_GRID = (0.0, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0)


def _values(values, name, kind):
    values = list(values or [])
    for v in values:
        if kind is int and (isinstance(v, bool) or int(v) != v or v < 1):
            raise ValueError(f"`{name}` values must be integers >= 1; received {v!r}.")
        if kind is float and (not np.isfinite(float(v)) or float(v) < 0):
            raise ValueError(f"`{name}` values must be finite and >= 0; received {v!r}.")
    return [kind(v) for v in values]


def sensitivity_sweep(
    image_embeddings,
    sentence_embeddings,
    *,
    relevance,
    performance,
    confidence=None,
    hard=None,
    easy=None,
    K=K_GRID,
    C=C_GRID,
    o=O_GRID,
    methods=METHODS,
    k=DEFAULT_K,
    n_clusters=DEFAULT_N_CLUSTERS,
    tau=CLIP_TAU,
    a=DEFAULT_A,
    o_default=DEFAULT_O,
    ward=DEFAULT_WARD,
):
    """Metrics of every method while one parameter varies and the others stay at their defaults.

    Parameters
    ----------
    image_embeddings : array-like of shape (n, d)
    sentence_embeddings : array-like of shape (N, d)
    relevance : array-like of bool, shape (n, N)
        Γ.
    performance : array-like of shape (n,)
        ω.
    confidence : array-like of shape (n,), optional
        φ, higher = easier; the split, as in [`lbee.explain`][lbee.explain].
    hard, easy : array-like of bool, shape (n,), optional
        Explicit split masks, an alternative to ``confidence``.
    K : sequence of int, default=(1, 2, 3, 5, 10)
        Sentences per cluster to try; an empty sequence skips that sweep.
    C : sequence of int, default=(1, 5, 10, 15, 20, 30)
        Cluster counts to try (as many easy clusters as hard ones); an empty sequence skips that sweep.
    o : sequence of float, default=(0.0, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0)
        Severities to try; an empty sequence skips that sweep.
    methods : sequence of str, default=('tops', 'setdiff', 'pdiff', 'fpdiff', 'domino')
        The describers (all of them by default).
    k : int, default=3
        Sentences per cluster while another parameter varies.
    n_clusters : int, default=15
        Clusters while another parameter varies.
    tau : float, default=0.25
        Similarity threshold of SetDiff / FPDiff (the CLIP value by default).
    a : float, default=0.2
        Split margin in standard deviations of φ.
    o_default : float, default=0.2
        Severity while another parameter varies.
    ward : str, default='auto'
        As in [`lbee.explain`][lbee.explain].

    Returns
    -------
    pandas.DataFrame
        Columns ``parameter`` ('K', 'C' or 'o'), ``value`` (requested),
        ``effective`` (what ran: C is capped by the hard images, K by the
        sentences; a warning says so), ``method``, ACR, AHR, TPR, JI and
        ``n_failure_sentences``.
    """
    import pandas as pd

    K, C, o = _values(K, "K", int), _values(C, "C", int), _values(o, "o", float)
    if not (K or C or o):
        raise ValueError("Nothing to sweep: `K`, `C` and `o` are all empty.")
    if isinstance(methods, str):
        methods = [methods]
    if "compose" in methods:  # its sentences are written for each run: Γ has no column for them
        methods = [m for m in methods if m != "compose"]
        import logging

        logging.getLogger("lbee").warning(
            "The sweep leaves 'compose' out: it writes new sentences for each group, and the relevance Γ has no "
            "column for them; it scores %s.",
            ", ".join(methods) or "nothing else",
        )
        if not methods:
            raise ValueError("Nothing to sweep: 'compose' alone cannot be scored against Γ; add another method.")
    rel, omega = check_relevance(relevance, performance)
    star_default = set(failure_sentences(rel, omega, o_default).tolist())
    split = dict(confidence=confidence, hard=hard, easy=easy, a=a)
    rows = []

    def add(parameter, value, exps, star, effective=None):
        effective = value if effective is None else effective
        if effective != value:  # e.g. C above the number of hard images: say what was run
            logger.warning(
                "sweep %s = %s ran as %s = %s (fewer %s exist).",
                parameter,
                value,
                parameter,
                effective,
                "hard images" if parameter == "C" else "sentences",
            )
        for m, e in exps.items():
            rows.append(
                {
                    "parameter": parameter,
                    "value": value,
                    "effective": effective,
                    "method": m,
                    **score_explanation(e, rel, star),
                }
            )

    from joblib import Memory

    from ..io.folder_trust import private_temporary_folder

    tree_cache = private_temporary_folder("lbee-ward-")  # joblib unpickles what it reads there: this user's alone
    memory = Memory(tree_cache.name, verbose=0)
    index = as_sentence_index(sentence_embeddings)  # built once, reused by every run

    def run(n_clusters_):
        part = partition(image_embeddings, n_clusters=n_clusters_, ward=ward, memory=memory, **split)
        if rel.shape[0] != part.embeddings_.shape[0]:
            raise ValueError(
                f"`relevance` has {rel.shape[0]} rows; expected {part.embeddings_.shape[0]}, one per image."
            )
        return part

    part = run(n_clusters)
    base = part.describe_methods(index, methods, k=k, tau=tau)
    n_sentences = rel.shape[1]
    for value in K:  # one clustering, selection redone per K
        add("K", value, part.describe_methods(index, methods, k=value, tau=tau), star_default, min(value, n_sentences))
    for value in C:  # one cached Ward tree per side, cut at each C
        part_c = run(value)
        add("C", value, part_c.describe_methods(index, methods, k=k, tau=tau), star_default, part_c.n_hard_clusters_)
    for value in o:  # same explanations, another S*
        add("o", value, base, set(failure_sentences(rel, omega, value).tolist()))
    tree_cache.cleanup()
    return pd.DataFrame(rows)


def plot_sweep(table, path):
    """Write [`sweep_figure`][lbee.analyses.sweep.sweep_figure] to ``path`` (.png or .svg) and return ``path``."""
    import matplotlib.pyplot as plt

    fig = sweep_figure(table)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def sweep_figure(table):
    """Fig. 6 / Fig. 10 style: one row per swept parameter, one column per metric, a line per method.

    Parameters
    ----------
    table : pandas.DataFrame
        [`sensitivity_sweep`][lbee.analyses.sweep.sensitivity_sweep] output.

    Returns
    -------
    matplotlib.figure.Figure
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    params = list(dict.fromkeys(table["parameter"]))
    fig, axes = plt.subplots(len(params), len(METRICS), figsize=(3.2 * len(METRICS), 2.6 * len(params)), squeeze=False)
    for r, p in enumerate(params):
        sub = table[table["parameter"] == p]
        for c, metric in enumerate(METRICS):
            ax = axes[r, c]
            for m, g in sub.groupby("method", sort=False):
                ax.plot(g["value"], g[metric], marker="o", label=m)
            ax.set_xlabel(p)
            ax.set_ylim(-0.02, 1.02)
            ax.set_title(metric if r == 0 else "")
            ax.grid(alpha=0.3)
    axes[0, -1].legend(fontsize=8)
    fig.tight_layout()
    return fig
