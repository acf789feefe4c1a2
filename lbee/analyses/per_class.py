"""Per-class analysis (LBEE §5 and app. A): one explanation per class, plus averages.

Two ways of splitting a class's images, both from the paper:

- ``"errors"`` (ImageNet, app. A): the class's images are those labelled or
  predicted as the class; easy = true positives, hard = false negatives ∪ false
  positives. ω = 1 for a correct prediction, else 0.
- ``"probability"`` (NICO++, app. D): the images labelled as the class, split at
  μ ± a·σ of the predicted probability of that class. ω as above.

The embeddings are validated once, in row blocks (`lbee.core.rows.UnitRows`: no
float64 copy of the whole matrix), and every class shares one `SentenceIndex`,
so 1,000 classes over 50,000 images never re-embed anything nor rebuild the
sentence side. Classes go `CLASS_BATCH` at a time: the prototypes of a batch
are scored against the sentences in one product instead of one small product
per class and describer, and each describer selects the sentences of the whole
batch's clusters at once. With ``n_jobs`` > 1, batches run in worker processes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._blas import one_blas_thread
from .._gc import collector_paused
from .._validation import check_choice, check_positive_int, check_real
from ..core.evaluation import DEFAULT_O
from ..core.explanation import EasyCluster, Explanation, HardCluster
from ..core.partition import DEFAULT_A, DEFAULT_K, DEFAULT_N_CLUSTERS_PER_CLASS, partition
from ..core.rows import UnitRows
from ..core.selection import CLIP_TAU, METHODS, check_describe_args, check_methods, select_from_scores
from ..core.sentence_index import SentenceIndex, as_sentence_index
from ..core.split import split_by_confidence

CLASS_SPLITS = ("errors", "probability")


@dataclass
class ClassSplit:
    """The images of one class and its easy / hard masks over them (local indices)."""

    label: int
    images: np.ndarray
    hard: np.ndarray
    easy: np.ndarray
    performance: np.ndarray


def class_splits(labels, *, preds=None, probs=None, split="errors", a=DEFAULT_A, classes=None):
    """Split every class's images into easy and hard.

    Parameters
    ----------
    labels : array-like of int, shape (n,)
        True classes.
    preds : array-like of int, shape (n,), optional
        Predicted classes (default: argmax of ``probs``).
    probs : array-like of shape (n, n_classes), optional
        Predicted probabilities; needed for ``split='probability'``.
    split : {'errors', 'probability'}, default='errors'
    a : float, default=0.2
        Margin of the probability split.
    classes : iterable of int, optional
        Classes to analyse (default: every class in ``labels``, and with the
        error split also every predicted class).

    Returns
    -------
    splits : list of ClassSplit
    skipped : dict of int to str
        Classes that cannot be analysed and why.
    """
    check_choice(split, "split", set(CLASS_SPLITS))
    from ..scoring.confidence import check_labels

    y = np.asarray(labels)
    if y.ndim != 1 or y.size == 0:
        raise ValueError(f"`labels` must be a non-empty 1-D array of class indices; received shape {y.shape}.")
    y = check_labels(y, y.shape[0])  # NaN, negative or fractional labels raise, naming the rows
    p = None
    if probs is not None:
        p = np.asarray(probs, dtype=np.float64)
        if p.ndim != 2 or p.shape[0] != y.shape[0]:
            raise ValueError(f"`probs` must have shape ({y.shape[0]}, n_classes); received {p.shape}.")
        unknown = np.unique(y[(y < 0) | (y >= p.shape[1])])
        if unknown.size:
            raise ValueError(
                f"`labels` contains class(es) {unknown[:5].tolist()} absent from the predictions, which "
                f"cover {p.shape[1]} classes [0, {p.shape[1]})."
            )
    if preds is None:
        if p is None:
            raise ValueError("Per-class analysis needs predictions: `preds` or `probs`.")
        preds = p.argmax(axis=1)
    yhat = np.asarray(preds)
    if yhat.shape != y.shape:
        raise ValueError(f"`preds` has shape {yhat.shape}; expected {y.shape}, one per label.")
    yhat = check_labels(yhat, y.shape[0], name="preds")
    if split == "probability" and p is None:
        raise ValueError("`split='probability'` needs `probs` (the class probability columns).")
    correct = (yhat == y).astype(np.float64)
    if classes is not None:
        wanted = np.asarray(list(classes), dtype=np.int64)
    else:  # with the error split a class that is only ever predicted still has false positives to show
        wanted = np.union1d(y, yhat) if split == "errors" else np.unique(y)
    splits, skipped = [], {}
    for c in wanted.tolist():
        if split == "errors":
            members = np.flatnonzero((y == c) | (yhat == c))
            hard = y[members] != yhat[members]  # false negatives and false positives
            easy = ~hard  # true positives
        else:
            members = np.flatnonzero(y == c)
            if members.size:  # the μ ± aσ rule of the whole-dataset split, on the class probability
                hard, easy = split_by_confidence(p[members, c], a=a)
            else:
                hard = easy = np.zeros(0, dtype=bool)
        if members.size == 0:
            skipped[c] = "no image labelled or predicted as this class"
        elif not hard.any():
            skipped[c] = (
                "no hard image (every prediction of this class is right)"
                if split == "errors"
                else "no hard image (class probabilities do not spread)"
            )
        elif not easy.any():
            skipped[c] = (
                "no easy image (the class is never predicted correctly)" if split == "errors" else "no easy image"
            )
        else:
            splits.append(ClassSplit(int(c), members, hard, easy, correct[members]))
    return splits, skipped


def _to_global(exp, members, label):
    """The same explanation with member indices into all n images."""
    hard = [
        HardCluster(members[c.indices], c.prototype, c.easy_cluster, c.sentences, c.scores) for c in exp.hard_clusters
    ]
    easy = [EasyCluster(members[c.indices], c.prototype) for c in exp.easy_clusters]
    return Explanation(hard, easy, exp.method, dict(exp.params, label=int(label)), exp.sentence_texts)


#: Classes whose describers' products are computed together (`_describe_batch`): one product of their
#: stacked prototypes costs a fraction of one per class, and a batch's scores stay small (64 x 15 rows x N floats).
CLASS_BATCH = 64


def _fit_class(images, cs, settings):
    """Split and cluster one class's images (a fitted `Partition`)."""
    import warnings

    from ..core.clustering import ClusterCountWarning

    with warnings.catch_warnings():  # a class with fewer hard images than C is common; n_hard_clusters records it
        warnings.simplefilter("ignore", ClusterCountWarning)
        return partition(
            images.subset(cs.images).keep_dense(),  # split, clustered and averaged: its rows computed once
            hard=cs.hard,
            easy=cs.easy,
            n_clusters=_class_clusters(int(np.sum(cs.hard)), settings),
            n_easy_clusters=settings["n_easy_clusters"],
        )


def _class_clusters(n_hard, settings):
    """Hard groups of a class of ``n_hard`` hard images (`explain_per_class`'s ``images_per_group``)."""
    per = settings.get("images_per_group")
    return settings["n_clusters"] if per is None else min(settings["n_clusters"], max(1, n_hard // per))


def _describe_batch(parts, index, settings):
    """``Partition.describe_methods`` of every fitted class of a batch, one dict per class, the same explanations.

    The batch's describer queries are scored against the sentences in one product, and since a describer's
    selection of a cluster reads that cluster's scores only (`select_from_scores`), each describer selects the
    stacked clusters of the whole batch at once instead of class by class.
    """
    k, tau, texts = check_describe_args(
        index, parts[0].embeddings_, settings["k"], settings["tau"], settings["sentences"]
    )
    sizes = [len(part.hard_groups_) for part in parts]
    # The four prototype describers score the same queries ('pdiff''s [hard; easy]); 'domino' its own.
    kinds = sorted({"domino" if m == "domino" else "pdiff" for m in settings["methods"] if m in METHODS})
    rows = {kind: [part.describer_queries([kind])[0] for part in parts] for kind in kinds}
    stacked = {"pdiff": ("hard", "easy"), "domino": ("domino",)}
    blocks = {}
    for kind in kinds:  # per part, 'pdiff''s queries are c hard rows then c easy rows
        for j, name in enumerate(stacked[kind]):
            blocks[name] = np.concatenate([q[j * c : (j + 1) * c] for q, c in zip(rows[kind], sizes)])
    sims = dict(zip(blocks, np.split(index.similarities(np.concatenate(list(blocks.values()))), len(blocks))))
    out = [{} for _ in parts]
    for m in settings["methods"]:
        if m not in METHODS:  # 'compose' searches each class on its own
            for exps, part in zip(out, parts):
                exps[m] = part.describe(index, m, k=k, tau=tau, sentences=texts)
            continue
        hard, easy = (sims["domino"], None) if m == "domino" else (sims["hard"], sims["easy"])
        chosen = select_from_scores(m, hard, easy, k, tau)
        for exps, part, start, c in zip(out, parts, np.cumsum([0] + sizes).tolist(), sizes):
            exps[m] = part.explanation(m, chosen[start : start + c], index.n_sentences, k, tau, texts)
    return out


def _describe_class(exps, rel, cs, settings):
    """Score (with Γ) one described class and make its rows; cluster indices come back global."""
    from ..core.evaluation import checked_failure_sentences, score_explanations

    if rel is not None:  # Γ, ω and o were checked once for every class (`explain_per_class`)
        class_rel = np.asarray(rel[cs.images])
        star = set(checked_failure_sentences(class_rel, cs.performance, settings["o"]).tolist())
        scores = score_explanations(exps, class_rel, star)
    rows = []
    for m, e in exps.items():
        row = {
            "class": cs.label,
            "method": m,
            "n_images": int(cs.images.size),
            "n_hard": int(cs.hard.sum()),
            "n_easy": int(cs.easy.sum()),
            "n_hard_clusters": len(e.hard_clusters),
        }
        if settings["class_names"] is not None:
            row["class_name"] = str(settings["class_names"][cs.label])
        if rel is not None:
            row.update(scores[m])
        rows.append(row)
    return cs.label, {m: _to_global(e, cs.images, cs.label) for m, e in exps.items()}, rows


def _run_classes(images, index, rel, splits, settings):
    """Yield each class's (label, explanations, metric rows), `CLASS_BATCH` classes fitted and scored at a time."""
    for i in range(0, len(splits), CLASS_BATCH):
        batch = splits[i : i + CLASS_BATCH]
        with one_blas_thread():  # a class's products are small: one limit for the batch, not one per product
            parts = [_fit_class(images, cs, settings) for cs in batch]
        explained = _describe_batch(parts, index, settings)  # the batch's product is big enough for every thread
        with one_blas_thread():
            described = [_describe_class(exps, rel, cs, settings) for exps, cs in zip(explained, batch)]
        yield from described


_WORKER_INDEX: dict[tuple[Any, ...], Any] = {}  # the worker's SentenceIndex, built once per process


def _run_chunk(images, sentence_embeddings, rel, chunk, settings):
    """A worker's share: the sentence index is built once per worker process and reused."""
    from threadpoolctl import threadpool_limits

    key = (sentence_embeddings.shape, hash(sentence_embeddings[:4].tobytes()))
    if key not in _WORKER_INDEX:
        _WORKER_INDEX.clear()
        _WORKER_INDEX[key] = SentenceIndex(sentence_embeddings)
    with threadpool_limits(1), collector_paused():  # one BLAS thread per worker: the workers are the parallelism
        return list(_run_classes(images, _WORKER_INDEX[key], rel, chunk, settings))


@dataclass
class PerClassResult:
    """Explanations and metrics of a per-class analysis.

    Attributes
    ----------
    explanations : dict of int to dict of str to Explanation
        Per class, per method; cluster indices point into all n images.
    metrics : pandas.DataFrame
        One row per (class, method): sizes and, with relevance, AHR / ACR / TPR / JI.
    skipped : dict of int to str
        Classes not analysed and why.
    class_names : list of str or None
    """

    explanations: dict
    metrics: object
    skipped: dict = field(default_factory=dict)
    class_names: list | None = None

    def summary(self):
        """Per method, the mean of each metric over the analysed classes (NaNs skipped)."""
        cols = [c for c in ("AHR", "ACR", "TPR", "JI") if c in self.metrics.columns]
        agg = self.metrics.groupby("method", sort=False)[cols + ["n_hard_clusters"]].mean()
        agg.insert(0, "n_classes", self.metrics.groupby("method", sort=False).size())
        return agg.reset_index()


def explain_per_class(
    image_embeddings,
    sentence_embeddings,
    *,
    labels,
    preds=None,
    probs=None,
    split="errors",
    methods=METHODS,
    n_clusters=DEFAULT_N_CLUSTERS_PER_CLASS,
    n_easy_clusters=None,
    k=DEFAULT_K,
    tau=CLIP_TAU,
    a=DEFAULT_A,
    relevance=None,
    o=DEFAULT_O,
    classes=None,
    class_names=None,
    sentences=None,
    n_jobs=1,
    progress=False,
    images_per_group=None,
):
    """Run LBEE separately on each class.

    Parameters
    ----------
    image_embeddings : array-like of shape (n, d)
    sentence_embeddings : array-like of shape (N, d) or SentenceIndex
    labels : array-like of int, shape (n,)
        True classes.
    preds : array-like of int, shape (n,), optional
        Predicted classes (default: argmax of ``probs``).
    probs : array-like of shape (n, n_classes), optional
        Predicted probabilities; needed for ``split='probability'``.
    split : {'errors', 'probability'}, default='errors'
        How each class is split (see [`class_splits`][lbee.analyses.per_class.class_splits]).
    methods : sequence of str, default=('tops', 'setdiff', 'pdiff', 'fpdiff', 'domino')
        The describers (all of them by default).
    n_clusters : int, default=5
        Hard clusters per class (the paper's per-class default).
    n_easy_clusters : int, optional
        As in [`lbee.explain`][lbee.explain].
    k : int, default=3
        Sentences kept per hard cluster.
    tau : float, default=0.25
        Similarity threshold of SetDiff / FPDiff (the CLIP value by default).
    a : float, default=0.2
        Margin of the probability split.
    classes : iterable of int, optional
        Classes to analyse (default: every class in ``labels``, and with the
        error split also every predicted class).
    relevance : array-like of bool, shape (n, N), optional
        Γ; with it each class gets AHR / ACR / TPR / JI on its own images.
    o : float, default=0.2
        Severity of the failure sentences, β = o·std(ω).
    class_names : list of str, optional
        Names indexed by class, for readable output.
    sentences : list of str, optional
        Sentence texts, kept for readable output.
    n_jobs : int, default=1
        Worker processes (joblib); -1 uses every core. Results do not depend on it.
    progress : bool, default=False
        A progress bar over classes.
    images_per_group : int, optional
        With it, a class of few hard images gets fewer groups: ``min(n_clusters, max(1, n_hard //
        images_per_group))`` (the command line's rule: 10 hard images are not cut into 5 groups of 2). Default:
        ``n_clusters`` for every class, as the paper.

    Returns
    -------
    PerClassResult
    """
    import pandas as pd
    from tqdm.auto import tqdm

    methods = check_methods(methods)
    check_positive_int(n_clusters, "n_clusters")
    if images_per_group is not None:
        check_positive_int(images_per_group, "images_per_group")
    images = UnitRows(image_embeddings, "image_embeddings")  # validated in row blocks, never copied whole
    index = as_sentence_index(sentence_embeddings)
    if labels is None or len(labels) != images.shape[0]:
        raise ValueError(
            f"`labels` must have one entry per image ({images.shape[0]}); "
            f"received {None if labels is None else len(labels)}."
        )
    rel = None
    if relevance is not None:
        rel = np.asarray(relevance, dtype=bool)
        if rel.shape != (images.shape[0], index.embeddings.shape[0]):
            raise ValueError(
                f"`relevance` has shape {rel.shape}; expected ({images.shape[0]}, {index.embeddings.shape[0]})."
            )
    o = check_real(o, "o", minimum=0.0)
    splits, skipped = class_splits(labels, preds=preds, probs=probs, split=split, a=a, classes=classes)

    settings = dict(
        methods=list(methods),
        n_clusters=n_clusters,
        images_per_group=images_per_group,
        n_easy_clusters=n_easy_clusters,
        k=k,
        tau=tau,
        sentences=sentences,
        o=o,
        class_names=class_names,
    )
    explanations, rows = {}, []
    if n_jobs == 1:  # joblib (and its asyncio) is imported only for workers
        n_workers = 1
    else:
        from joblib import effective_n_jobs

        n_workers = effective_n_jobs(n_jobs)
    bar = tqdm(total=len(splits), desc="classes", disable=not progress)
    # the objects kept per class would make the garbage collector walk the whole heap again and again (`lbee._gc`)
    with collector_paused():
        _collect(images, index, rel, splits, settings, n_workers, explanations, rows, bar)
    bar.close()
    metrics = pd.DataFrame(rows)
    if metrics.empty:
        raise ValueError(f"No class could be analysed: {dict(list(skipped.items())[:5])}.")
    return PerClassResult(explanations, metrics, skipped, list(class_names) if class_names is not None else None)


def _collect(images, index, rel, splits, settings, n_workers, explanations, rows, bar):
    """Run every class, serially or on ``n_workers`` processes, into ``explanations`` and ``rows``."""
    if n_workers == 1 or len(splits) < 2 * n_workers:
        for label, exps, r in _run_classes(images, index, rel, splits, settings):
            explanations[label] = exps
            rows.extend(r)
            bar.update()
    else:
        # Worker processes, each with a few classes at a time: every worker builds its sentence index once
        # and reads the (memory-mapped) embeddings and Γ; threads would contend for the GIL in Ward.
        from joblib import Parallel, delayed

        chunks = [splits[i : i + CLASS_BATCH] for i in range(0, len(splits), CLASS_BATCH)]
        jobs = Parallel(n_jobs=n_workers, return_as="generator")(
            delayed(_run_chunk)(images, index.embeddings, rel, chunk, settings) for chunk in chunks
        )
        for results in jobs:
            for label, exps, r in results:
                explanations[label] = exps
                rows.extend(r)
            bar.update(len(results))
