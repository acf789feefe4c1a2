"""``lbee.explain``: the LBEE split–cluster–match–select pipeline (SPEC §2–3)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .._validation import as_unit_rows, check_choice, check_positive_int, check_real
from .clustering import WARD_METHODS, match_easy, prototypes, ward_labels
from .selection import METHODS, select_sentences
from .sentence_index import SentenceIndex
from .split import resolve_split

DEFAULT_TAU = 0.25  # calibrated for CLIP (LBEE footnote 2)


@dataclass
class EasyCluster:
    """An easy cluster: member ``indices`` into the n images and its unit ``prototype`` (d,)."""

    indices: np.ndarray
    prototype: np.ndarray

    def to_dict(self):
        return {"indices": self.indices.tolist(), "prototype": self.prototype.tolist()}


@dataclass
class HardCluster:
    """A hard cluster with the sentences chosen for it.

    Attributes
    ----------
    indices : ndarray of int, shape (n_members,)
        Members, as indices into the n images.
    prototype : ndarray of shape (d,)
        Renormalised mean of the members' unit embeddings.
    easy_cluster : int
        Index into ``Explanation.easy_clusters`` of the most similar easy prototype.
    sentences : list of int
        Chosen sentences (indices into the N sentences), best first.
    scores : list of float
        The method's score of each chosen sentence.
    """

    indices: np.ndarray
    prototype: np.ndarray
    easy_cluster: int
    sentences: list = field(default_factory=list)
    scores: list = field(default_factory=list)

    def to_dict(self):
        return {
            "indices": self.indices.tolist(),
            "prototype": self.prototype.tolist(),
            "easy_cluster": int(self.easy_cluster),
            "sentences": [int(s) for s in self.sentences],
            "scores": [float(s) for s in self.scores],
        }


@dataclass
class Explanation:
    """The result of :func:`lbee.explain`.

    Attributes
    ----------
    hard_clusters : list of HardCluster
    easy_clusters : list of EasyCluster
    method : str
    params : dict
        The parameters the explanation was computed with.
    sentence_texts : list of str or None
        The N sentences, when they were given.
    """

    hard_clusters: list
    easy_clusters: list
    method: str
    params: dict = field(default_factory=dict)
    sentence_texts: list | None = None

    @property
    def selected(self):
        """Sorted list of int: R_S, the union of every hard cluster's sentences."""
        return sorted({int(s) for c in self.hard_clusters for s in c.sentences})

    def cluster_sentences(self, i):
        """The sentences of hard cluster ``i`` as text (or indices when no text was given)."""
        ids = self.hard_clusters[i].sentences
        if self.sentence_texts is None:
            return list(ids)
        return [self.sentence_texts[s] for s in ids]

    def to_dict(self):
        """A JSON-serialisable dict; :meth:`from_dict` round-trips it."""
        return {
            "method": self.method,
            "params": dict(self.params),
            "hard_clusters": [c.to_dict() for c in self.hard_clusters],
            "easy_clusters": [c.to_dict() for c in self.easy_clusters],
            "selected": self.selected,
            "sentences": None if self.sentence_texts is None else list(self.sentence_texts),
        }

    @classmethod
    def from_dict(cls, data, *, n_images=None, n_sentences=None, source="data"):
        """Rebuild an :class:`Explanation` from :meth:`to_dict` output, validating it.

        A file may have been edited, truncated or produced by something else:
        structure, types and ranges are checked and any problem raises
        ``ValueError`` (``TypeError`` when ``data`` is not a dict) naming the
        field, e.g. ``data.hard_clusters[2].indices[5]``.

        Parameters
        ----------
        data : dict
        n_images, n_sentences : int, optional
            Upper bounds (exclusive) for image and sentence indices, when the
            loader knows them; the length of ``sentences`` bounds sentence
            indices when texts are included. Indices are always non-negative
            integers below 2**62.
        source : str, default='data'
            How messages name ``data`` (a file path, for loaders).

        Returns
        -------
        Explanation
        """
        return _explanation_from_dict(cls, data, n_images=n_images, n_sentences=n_sentences, source=source)


# ----------------------------------------------------------------------------- serialisation checks

_MAX_INDEX = 2 ** 62  # far above any real n; keeps int64 conversion safe before the n_* bound is known


def _bad(source, field, received, expected):
    raise ValueError(f"{source}.{field}: received {received}; expected {expected}.")


def _show(value):
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _check_int(value, field, source, *, upper=None, what="index"):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        _bad(source, field, f"{type(value).__name__} {_show(value)}", f"an integer {what}")
    value = int(value)
    if value < 0:
        _bad(source, field, value, f"a non-negative {what}")
    bound = _MAX_INDEX if upper is None else upper
    if value >= bound:
        art = "an" if what[0] in "aeiou" else "a"
        _bad(source, field, value, f"{art} {what} below {bound}" if upper is not None else f"a plausible {what}")
    return value


def _check_int_list(values, field, source, *, upper=None, what="index", unique=True):
    if not isinstance(values, (list, tuple, np.ndarray)):
        _bad(source, field, f"{type(values).__name__} {_show(values)}", f"a list of integer {what}es")
    out = [_check_int(v, f"{field}[{i}]", source, upper=upper, what=what) for i, v in enumerate(values)]
    if unique and len(set(out)) != len(out):
        dup = next(v for v in out if out.count(v) > 1)
        _bad(source, field, f"{what} {dup} more than once", f"each {what} once")
    return np.asarray(out, dtype=np.int64)


def _check_vector(values, field, source, *, length=None):
    if not isinstance(values, (list, tuple, np.ndarray)):
        _bad(source, field, f"{type(values).__name__} {_show(values)}", "a list of numbers")
    if any(isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, np.integer, np.floating))
           for v in values):
        bad = next(v for v in values if isinstance(v, (bool, np.bool_))
                   or not isinstance(v, (int, float, np.integer, np.floating)))
        _bad(source, field, f"the element {_show(bad)}", "numbers only")
    arr = np.asarray(values, dtype=np.float64).reshape(-1)
    if not np.all(np.isfinite(arr)):
        _bad(source, field, f"{int(np.sum(~np.isfinite(arr)))} NaN or inf value(s)", "finite numbers")
    if length is not None and arr.shape[0] != length:
        _bad(source, field, f"length {arr.shape[0]}", f"length {length} (the embedding dimension d)")
    return arr


def _check_mapping(value, field, source, keys):
    if not isinstance(value, dict):
        _bad(source, field, f"{type(value).__name__} {_show(value)}", "an object (dict)")
    missing = [k for k in keys if k not in value]
    if missing:
        _bad(source, field, f"an object without {missing}", f"the keys {list(keys)}")


def _bound(explicit, params, key, source):
    if explicit is not None:
        if isinstance(explicit, bool) or not isinstance(explicit, (int, np.integer)) or explicit < 0:
            raise ValueError(f"`{key}` must be a non-negative integer; received {_show(explicit)}.")
        return int(explicit)
    return None  # params['n_images'] is not a bound: per-class explanations index every image of the run


def _explanation_from_dict(cls, data, *, n_images=None, n_sentences=None, source="data"):
    if not isinstance(data, dict):
        raise TypeError(f"`data` must be a dict from Explanation.to_dict(); received {type(data).__name__}.")
    missing = {"method", "hard_clusters", "easy_clusters"} - set(data)
    if missing:
        raise ValueError(f"{source} lacks the key(s) {sorted(missing)}; is it an Explanation.to_dict() result?")
    method = data["method"]
    if not isinstance(method, str) or method not in METHODS:
        _bad(source, "method", _show(method), f"one of {list(METHODS)}")
    params = data.get("params", {})
    if params is None:
        params = {}
    if not isinstance(params, dict):
        _bad(source, "params", f"{type(params).__name__} {_show(params)}", "an object (dict)")
    texts = data.get("sentences")
    if texts is not None:
        if not isinstance(texts, (list, tuple)) or not all(isinstance(t, str) for t in texts):
            _bad(source, "sentences", _show(texts)[:60], "null or a list of strings")
        texts = list(texts)
    n_img = _bound(n_images, params, "n_images", source)
    n_sent = _bound(n_sentences, params, "n_sentences", source)
    if texts is not None:
        if n_sent is not None and len(texts) != n_sent:
            _bad(source, "sentences", f"{len(texts)} sentence(s)",
                 f"{n_sent} (one per sentence index; n_sentences={n_sent})")
        n_sent = len(texts)
    for key in ("hard_clusters", "easy_clusters"):
        if not isinstance(data[key], (list, tuple)):
            _bad(source, key, f"{type(data[key]).__name__} {_show(data[key])}", "a list of clusters")
    dim = None
    easy = []
    for j, c in enumerate(data["easy_clusters"]):
        where = f"easy_clusters[{j}]"
        _check_mapping(c, where, source, ("indices", "prototype"))
        idx = _check_int_list(c["indices"], f"{where}.indices", source, upper=n_img, what="image index")
        proto = _check_vector(c["prototype"], f"{where}.prototype", source, length=dim)
        dim = proto.shape[0] if dim is None else dim
        easy.append(EasyCluster(idx, proto))
    hard = []
    for i, c in enumerate(data["hard_clusters"]):
        where = f"hard_clusters[{i}]"
        _check_mapping(c, where, source, ("indices", "prototype", "easy_cluster", "sentences", "scores"))
        idx = _check_int_list(c["indices"], f"{where}.indices", source, upper=n_img, what="image index")
        proto = _check_vector(c["prototype"], f"{where}.prototype", source, length=dim)
        dim = proto.shape[0] if dim is None else dim
        if not easy:
            _bad(source, f"{where}.easy_cluster", _show(c["easy_cluster"]), "an index into easy_clusters, "
                 "which is empty")
        match = _check_int(c["easy_cluster"], f"{where}.easy_cluster", source, upper=len(easy),
                           what="easy-cluster index")
        sents = _check_int_list(c["sentences"], f"{where}.sentences", source, upper=n_sent, what="sentence index")
        scores = _check_vector(c["scores"], f"{where}.scores", source)
        if scores.shape[0] != sents.shape[0]:
            _bad(source, f"{where}.scores", f"{scores.shape[0]} score(s)",
                 f"{sents.shape[0]}, one per chosen sentence")
        hard.append(HardCluster(idx, proto, match, sents.tolist(), scores.tolist()))
    if dim == 0:
        _bad(source, "prototype", "empty prototypes", "vectors of the embedding dimension d >= 1")
    if "selected" in data and data["selected"] is not None:
        selected = _check_int_list(data["selected"], "selected", source, upper=n_sent, what="sentence index")
        union = sorted({s for c in hard for s in c.sentences})
        if sorted(selected.tolist()) != union:
            _bad(source, "selected", _show(sorted(selected.tolist())),
                 f"the union of the hard clusters' sentences, {_show(union)}")
    return cls(hard, easy, method, dict(params), texts)


def check_explanation_ranges(explanation, *, n_images=None, n_sentences=None, source="explanation"):
    """Check that an :class:`Explanation` indexes within ``n_images`` images and ``n_sentences`` sentences.

    Loaders call it once they know the run's sizes (the file's ``images`` and
    ``sentences`` lists). Raises ``ValueError`` naming the cluster and field.

    Returns
    -------
    Explanation
        The same object.
    """
    for key, n in (("n_images", n_images), ("n_sentences", n_sentences)):
        if n is not None and (isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0):
            raise ValueError(f"`{key}` must be a non-negative integer; received {_show(n)}.")
    for kind, clusters in (("hard_clusters", explanation.hard_clusters), ("easy_clusters", explanation.easy_clusters)):
        for i, c in enumerate(clusters):
            idx = np.asarray(c.indices)
            if idx.size and (idx.min() < 0 or (n_images is not None and idx.max() >= n_images)):
                bad = int(idx.min()) if idx.min() < 0 else int(idx.max())
                _bad(source, f"{kind}[{i}].indices", f"image index {bad}",
                     f"indices in [0, {n_images if n_images is not None else 'n'})")
    for i, c in enumerate(explanation.hard_clusters):
        for s in c.sentences:
            if s < 0 or (n_sentences is not None and s >= n_sentences):
                _bad(source, f"hard_clusters[{i}].sentences", f"sentence index {s}",
                     f"indices in [0, {n_sentences if n_sentences is not None else 'N'})")
    return explanation


def validate_explanation_payload(payload, *, source):
    """Validate an ``explanation.json`` payload and rebuild its explanations.

    The payload is what :func:`lbee.run.pipeline.write_outputs` writes: a
    ``methods`` object (method name → :meth:`Explanation.to_dict` without
    ``sentences``), the run's ``sentences`` and ``images`` lists. Indices are
    checked against those lists.

    Parameters
    ----------
    payload : object
        The decoded JSON.
    source : str or path-like
        The file, for messages.

    Returns
    -------
    dict of str to Explanation
    """
    src = str(source)
    if not isinstance(payload, dict):
        raise ValueError(f"{src!r}: received a JSON {type(payload).__name__}; expected an object with a 'methods' key "
                         "(an lbee explanation.json).")
    if "methods" not in payload:
        raise ValueError(f"{src!r} is not an lbee explanation.json (no 'methods' key).")
    methods = payload["methods"]
    if not isinstance(methods, dict) or not methods:
        _bad(repr(src), "methods", f"{type(methods).__name__} {_show(methods)}",
             "a non-empty object mapping method names to explanations")
    sentences = payload.get("sentences")
    if sentences is not None and (not isinstance(sentences, list) or not all(isinstance(s, str) for s in sentences)):
        _bad(repr(src), "sentences", _show(sentences), "a list of strings")
    images = payload.get("images")
    if images is not None and not isinstance(images, list):
        _bad(repr(src), "images", _show(images), "a list of image ids")
    n_images = None if images is None else len(images)
    exps = {}
    for name, body in methods.items():
        if not isinstance(body, dict):
            _bad(repr(src), f"methods.{name}", f"{type(body).__name__} {_show(body)}", "an explanation object")
        exps[name] = Explanation.from_dict({**body, "sentences": sentences}, n_images=n_images,
                                           source=f"{src!r} methods.{name}")
        if exps[name].method != name:
            _bad(repr(src), f"methods.{name}.method", repr(exps[name].method), repr(name))
    return exps


class _Partition:
    """Split and clusters shared by every describer (computed once for ``method="all"``)."""

    def __init__(self, images, hard_groups, easy_mask, n_easy_clusters, ward_kw=None):
        self.images = images
        self.hard_groups = hard_groups
        self.hard_protos, self.hard_means = _group_prototypes(images, hard_groups)
        easy_idx = np.flatnonzero(easy_mask)
        labels = ward_labels(images[easy_idx], n_easy_clusters, **(ward_kw or {}))
        c_e = int(labels.max()) + 1
        self.easy_groups = [easy_idx[labels == j] for j in range(c_e)]
        self.easy_protos, _ = prototypes(images[easy_idx], labels, c_e)
        self.matches = match_easy(self.hard_protos, self.easy_protos)
        self.reference_mean = images.mean(axis=0)


def _group_prototypes(images, groups):
    labels = np.concatenate([np.full(len(g), i) for i, g in enumerate(groups)])
    members = images[np.concatenate(groups)]
    return prototypes(members, labels, len(groups))


def _hard_groups(images, hard_mask, n_clusters, slicer, confidence, ward_kw=None):
    if isinstance(slicer, str):
        check_choice(slicer, "slicer", {"ward"})
        hard_idx = np.flatnonzero(hard_mask)
        labels = ward_labels(images[hard_idx], n_clusters, **(ward_kw or {}))
        return [hard_idx[labels == i] for i in range(int(labels.max()) + 1)]
    groups = getattr(slicer, "hard_groups", None)
    if not callable(groups):
        raise TypeError(
            f"`slicer` must be 'ward' or a slicer object (lbee.slicers) with a `hard_groups` method; "
            f"received {type(slicer).__name__}."
        )
    result = [np.asarray(g, dtype=np.int64) for g in groups(images, confidence=confidence, hard=hard_mask)]
    result = [g for g in result if g.size]
    if not result:
        raise ValueError("`slicer` returned no non-empty hard group.")
    return result


def _prepare(image_embeddings, sentence_embeddings, confidence, hard, easy, a, n_clusters,
             n_easy_clusters, k, tau, slicer, sentences, ward="exact", ward_memory=None):
    images = as_unit_rows(image_embeddings, "image_embeddings")
    # A prebuilt SentenceIndex is reused as is (per-class loops over one sentence set).
    index = sentence_embeddings if isinstance(sentence_embeddings, SentenceIndex) else None
    sent = index.embeddings if index is not None else as_unit_rows(sentence_embeddings, "sentence_embeddings")
    if images.shape[1] != sent.shape[1]:
        raise ValueError(
            f"`sentence_embeddings` has dimension d={sent.shape[1]} but `image_embeddings` has d={images.shape[1]}; "
            "both must come from the same joint encoder."
        )
    n_clusters = check_positive_int(n_clusters, "n_clusters")
    n_easy_clusters = n_clusters if n_easy_clusters is None else check_positive_int(n_easy_clusters, "n_easy_clusters")
    check_positive_int(k, "k")
    tau = DEFAULT_TAU if tau is None else check_real(tau, "tau")
    a = check_real(a, "a", minimum=0.0)
    if sentences is not None:
        sentences = [str(s) for s in sentences]
        if len(sentences) != sent.shape[0]:
            raise ValueError(
                f"`sentences` has {len(sentences)} entries but `sentence_embeddings` has {sent.shape[0]} rows."
            )
    hard_mask, easy_mask = resolve_split(images.shape[0], confidence=confidence, hard=hard, easy=easy, a=a)
    check_choice(ward, "ward", set(WARD_METHODS))
    ward_kw = {"memory": ward_memory, "method": ward}
    groups = _hard_groups(images, hard_mask, n_clusters, slicer, confidence, ward_kw)
    partition = _Partition(images, groups, easy_mask, n_easy_clusters, ward_kw)
    params = {"a": a, "n_clusters": n_clusters, "n_easy_clusters": n_easy_clusters, "k": int(k), "tau": tau,
              "slicer": slicer if isinstance(slicer, str) else type(slicer).__name__, "ward": ward,
              "n_images": int(images.shape[0]), "n_sentences": int(sent.shape[0]),
              "n_hard": int(hard_mask.sum()), "n_easy": int(easy_mask.sum())}
    return partition, index or SentenceIndex(sent), params, sentences


def _describe(partition, index, method, params, sentences):
    check_choice(method, "method", set(METHODS))
    easy = [EasyCluster(g, p) for g, p in zip(partition.easy_groups, partition.easy_protos)]
    hard = []
    for i, group in enumerate(partition.hard_groups):
        j = int(partition.matches[i])
        ids, scores = select_sentences(
            method, index, partition.hard_protos[i], partition.easy_protos[j], params["k"], params["tau"],
            cluster_mean=partition.hard_means[i], reference_mean=partition.reference_mean,
        )
        hard.append(HardCluster(group, partition.hard_protos[i], j, ids.tolist(), scores.tolist()))
    return Explanation(hard, easy, method, dict(params, method=method), sentences)


def explain(image_embeddings, sentence_embeddings, *, confidence=None, hard=None, easy=None, a=0.2,
            method="fpdiff", n_clusters=15, n_easy_clusters=None, k=3, tau=0.25, slicer="ward",
            sentences=None, ward="exact"):
    """Find hard clusters of images and the sentences that describe them.

    Parameters
    ----------
    image_embeddings : array-like of shape (n, d)
        Image embeddings in the joint space (renormalised to unit rows).
    sentence_embeddings : array-like of shape (N, d) or SentenceIndex
        Sentence embeddings in the same space (renormalised to unit rows). A
        prebuilt :class:`lbee.core.sentence_index.SentenceIndex` is reused as is,
        which saves its set-up in loops over classes.
    confidence : array-like of shape (n,), optional
        φ, higher = easier (pass −entropy for entropy). Splits at μ ± aσ.
    hard, easy : array-like of bool, shape (n,), optional
        Explicit split masks, an alternative to ``confidence``.
    a : float, default=0.2
        Split margin in standard deviations of φ.
    method : {'tops', 'setdiff', 'pdiff', 'fpdiff', 'domino'}, default='fpdiff'
        The describer (SPEC §3.3).
    n_clusters : int, default=15
        Hard clusters; the effective number is ``min(n_clusters, n_hard)``.
    n_easy_clusters : int, optional
        Easy clusters, default ``n_clusters``; effective ``min(., n_easy)``.
    k : int, default=3
        Sentences kept per hard cluster.
    tau : float or None, default=0.25
        Similarity threshold of SetDiff / FPDiff; None means the CLIP default 0.25
        (pass the encoder's ``default_tau`` for another encoder).
    slicer : 'ward' or slicer object, default='ward'
        'ward' clusters the hard split; a slicer from :mod:`lbee.slicers`
        (fitted on these images, or unfitted: then fitted here with the split as
        its error signal) supplies the hard groups, most important first. The
        easy side is still Ward-clustered and every describer works on them.
    sentences : list of str of length N, optional
        Sentence texts, kept for readable output.
    ward : {'exact', 'knn'}, default='exact'
        Exact Ward (SPEC §3.2), or the approximate option for very large
        splits: merges restricted to a 15-nearest-neighbour graph (see
        :func:`lbee.core.clustering.ward_labels`).

    Returns
    -------
    Explanation
    """
    partition, index, params, sentences = _prepare(
        image_embeddings, sentence_embeddings, confidence, hard, easy, a, n_clusters, n_easy_clusters, k, tau,
        slicer, sentences, ward)
    return _describe(partition, index, method, params, sentences)


def explain_methods(image_embeddings, sentence_embeddings, *, methods=METHODS, **kwargs):
    """Run several describers over one split and clustering.

    Same parameters as :func:`explain`, with ``methods`` (a list of method names)
    instead of ``method``. Clustering is computed once.

    Returns
    -------
    dict of str to Explanation
    """
    if isinstance(methods, str):
        methods = [methods]
    if not methods:
        raise ValueError(f"`methods` is empty; expected one or more of {list(METHODS)}.")
    for m in methods:
        check_choice(m, "methods", set(METHODS))
    defaults = dict(confidence=None, hard=None, easy=None, a=0.2, n_clusters=15, n_easy_clusters=None, k=3,
                    tau=0.25, slicer="ward", sentences=None, ward="exact")
    unknown = set(kwargs) - set(defaults)
    if unknown:
        raise TypeError(f"explain_methods() got unexpected keyword argument(s) {sorted(unknown)}.")
    defaults.update(kwargs)
    partition, index, params, sentences = _prepare(image_embeddings, sentence_embeddings, **defaults)
    return {m: _describe(partition, index, m, params, sentences) for m in methods}
