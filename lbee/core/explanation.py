"""What ``lbee.explain`` returns: hard and easy clusters with their sentences (SPEC §2)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .selection import DESCRIBERS


@dataclass
class EasyCluster:
    """An easy cluster: member ``indices`` into the n images and its unit ``prototype`` (d,)."""

    indices: np.ndarray
    prototype: np.ndarray

    def to_dict(self):
        return {"indices": self.indices.tolist(), "prototype": self.prototype.tolist()}

    def __repr__(self):
        return f"EasyCluster({len(self.indices)} images)"


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
    #: 'compose': per sentence, its conditions and the shares of hard / easy / twin images it holds for (in memory).
    details: list = field(default_factory=list, repr=False, compare=False)

    def to_dict(self):
        return {
            "indices": self.indices.tolist(),
            "prototype": self.prototype.tolist(),
            "easy_cluster": int(self.easy_cluster),
            "sentences": [int(s) for s in self.sentences],
            "scores": [float(s) for s in self.scores],
        }

    def __repr__(self):
        return (f"HardCluster({len(self.indices)} images, easy_cluster={int(self.easy_cluster)}, "
                f"sentences={[int(s) for s in self.sentences]})")


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
    confidence : ndarray of shape (n,) or None
        φ of the n images when :func:`lbee.explain` was given it, for
        :meth:`assignments`. Kept in memory only: :meth:`to_dict` does not store
        it (``explanation.json`` has ``assignments.parquet`` beside it).
    image_ids : list or None
        Row labels of the images (the DataFrame index with ``lbee.explain(data=df, ...)``); in memory only.
    """

    hard_clusters: list
    easy_clusters: list
    method: str
    params: dict = field(default_factory=dict)
    sentence_texts: list | None = None
    confidence: np.ndarray | None = field(default=None, repr=False, compare=False)
    image_ids: list | None = field(default=None, repr=False, compare=False)

    def __repr__(self):
        sizes = ", ".join(str(len(c.indices)) for c in self.hard_clusters[:8])
        more = ", ..." if len(self.hard_clusters) > 8 else ""
        return (f"Explanation(method={self.method!r}, {len(self.hard_clusters)} hard clusters (sizes {sizes}{more}), "
                f"{len(self.easy_clusters)} easy clusters, {len(self.selected)} sentences selected)")

    def _sentence_text(self, s):
        return self.sentence_texts[s] if self.sentence_texts is not None else f"sentence {int(s)}"

    def to_pandas(self):
        """One row per hard cluster: ``group``, ``size``, ``easy_cluster``, ``sentences`` (texts, best first),
        ``scores``. For one row per image use :meth:`assignments`.

        Returns
        -------
        pandas.DataFrame
        """
        import pandas as pd

        return pd.DataFrame({
            "group": np.arange(len(self.hard_clusters), dtype=np.int64),
            "size": [len(c.indices) for c in self.hard_clusters],
            "easy_cluster": [int(c.easy_cluster) for c in self.hard_clusters],
            "sentences": [[self._sentence_text(s) for s in c.sentences] for c in self.hard_clusters],
            "scores": [list(map(float, c.scores)) for c in self.hard_clusters],
        })

    def assignments(self, confidence=None, performance=None, *, image_ids=None):
        """One row per image: ``split`` (hard / easy / neutral), ``group`` (hard-cluster index for hard images,
        easy-cluster index for easy ones, -1 for neutral), ``phi`` and ``omega``.

        φ and ω are not part of an explanation's file: pass them, or φ is the
        ``confidence`` that :func:`lbee.explain` was given (else NaN); ω is NaN
        when not passed.

        Parameters
        ----------
        confidence, performance : array-like of shape (n,), optional
        image_ids : list of length n, optional
            The index of the table (default: ``self.image_ids``, else 0..n-1).

        Returns
        -------
        pandas.DataFrame
        """
        import pandas as pd

        n = self.params.get("n_images")
        members = [np.asarray(c.indices) for c in (*self.hard_clusters, *self.easy_clusters)]
        if n is None:
            n = 1 + max((int(m.max()) for m in members if m.size), default=-1)
        n = int(n)
        top = max((int(m.max()) for m in members if m.size), default=-1)
        if top >= n:
            raise ValueError(f"the explanation refers to image {top} but has n_images={n} (params); expected "
                             f"image indices in [0, {n}).")
        phi = self.confidence if confidence is None else confidence
        columns = {}
        for name, values in (("phi", phi), ("omega", performance)):
            if values is None:
                columns[name] = np.full(n, np.nan)
                continue
            arr = np.asarray(values, dtype=np.float64).reshape(-1)
            if arr.shape[0] != n:
                raise ValueError(f"`{'confidence' if name == 'phi' else 'performance'}` has {arr.shape[0]} values; "
                                 f"expected {n}, one per image of the explanation.")
            columns[name] = arr
        split, group = self.split_and_group(n)
        index = image_ids if image_ids is not None else self.image_ids
        return pd.DataFrame({"split": split, "group": group, **columns},
                            index=pd.Index(index if index is not None else np.arange(n), name="image"))

    def split_and_group(self, n):
        """Each image's split and group, from the clusters.

        Parameters
        ----------
        n : int
            Number of images.

        Returns
        -------
        split : ndarray of object, shape (n,)
            'hard', 'easy' or 'neutral'.
        group : ndarray of int, shape (n,)
            The cluster within its split; -1 for neutral images.
        """
        split = np.full(n, "neutral", dtype=object)
        group = np.full(n, -1, dtype=np.int64)
        for j, c in enumerate(self.easy_clusters):
            split[c.indices] = "easy"
            group[c.indices] = j
        for i, c in enumerate(self.hard_clusters):
            split[c.indices] = "hard"
            group[c.indices] = i
        return split, group

    def _repr_html_(self):
        """A compact table of the hard clusters and their sentences (Jupyter)."""
        from html import escape

        rows = []
        for i, c in enumerate(self.hard_clusters):
            sents = "<br>".join(escape(str(self._sentence_text(s))) for s in c.sentences)
            rows.append(f"<tr><td>{i}</td><td>{len(c.indices)}</td><td>{int(c.easy_cluster)}</td>"
                        f"<td style='text-align:left'>{sents}</td></tr>")
        head = (f"<p><b>Explanation</b> · {escape(self.method)} · {len(self.hard_clusters)} hard clusters, "
                f"{len(self.easy_clusters)} easy, {len(self.selected)} sentences selected</p>")
        return (head + "<table><tr><th>group</th><th>images</th><th>easy twin</th><th>sentences (best first)</th>"
                "</tr>" + "".join(rows) + "</table>")

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
            integers below 2**62; without ``n_images``, a whole-dataset
            explanation's ``params['n_images']`` bounds its image indices (a
            per-class one, with ``params['label']``, indexes the whole run).
            Clusters must form a partition: no empty hard cluster, no image in
            two clusters of a side or in both a hard and an easy cluster.
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


def _check_json_data(value, field, source):
    """Refuse what strict JSON cannot hold (NaN, ±inf, non-string keys, objects), so a result writes as read."""
    if isinstance(value, (float, np.floating)) and not np.isfinite(value):
        _bad(source, field, _show(value), "finite numbers (strict JSON has no NaN or infinity)")
    if isinstance(value, dict):
        for k, v in value.items():
            if not isinstance(k, str):
                _bad(source, field, f"the key {_show(k)}", "string keys")
            _check_json_data(v, f"{field}.{k}", source)
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            _check_json_data(v, f"{field}[{i}]", source)
    elif not (value is None or isinstance(value, (str, bool, int, float, np.integer, np.floating, np.bool_))):
        _bad(source, field, f"a {type(value).__name__}", "JSON data (null, booleans, numbers, strings, lists, objects)")


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
    if not isinstance(method, str) or method not in DESCRIBERS:
        _bad(source, "method", _show(method), f"one of {list(DESCRIBERS)}")
    params = data.get("params", {})
    if params is None:
        params = {}
    if not isinstance(params, dict):
        _bad(source, "params", f"{type(params).__name__} {_show(params)}", "an object (dict)")
    _check_json_data(params, "params", source)
    texts = data.get("sentences")
    if texts is not None:
        if not isinstance(texts, (list, tuple)) or not all(isinstance(t, str) for t in texts):
            _bad(source, "sentences", _show(texts)[:60], "null or a list of strings")
        texts = list(texts)
    n_img = _bound(n_images, params, "n_images", source)
    if n_img is None and "label" not in params and params.get("n_images") is not None:
        # A whole-dataset explanation indexes its own n_images; a per-class one (params['label']) indexes the run's.
        n_img = _bound(params["n_images"], {}, "params.n_images", source)
    n_sent = _bound(n_sentences, params, "n_sentences", source)
    if n_sent is None and texts is None and params.get("n_sentences") is not None:
        n_sent = _bound(params["n_sentences"], {}, "params.n_sentences", source)
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
    check_partition(hard, easy, source)
    if dim == 0:
        _bad(source, "prototype", "empty prototypes", "vectors of the embedding dimension d >= 1")
    if "selected" in data and data["selected"] is not None:
        selected = _check_int_list(data["selected"], "selected", source, upper=n_sent, what="sentence index")
        union = sorted({s for c in hard for s in c.sentences})
        if sorted(selected.tolist()) != union:
            _bad(source, "selected", _show(sorted(selected.tolist())),
                 f"the union of the hard clusters' sentences, {_show(union)}")
    return cls(hard, easy, method, dict(params), texts)


def check_partition(hard, easy, source="explanation"):
    """Refuse clusters that are not a partition: an empty hard cluster, an image in two clusters of a side, or an
    image both hard and easy (any of them shifts ACR and the split sizes without a word)."""
    for i, c in enumerate(hard):
        if np.asarray(c.indices).size == 0:
            _bad(source, f"hard_clusters[{i}].indices", "an empty cluster", "at least one image per hard cluster")
    sides = {}
    for side, clusters in (("hard_clusters", hard), ("easy_clusters", easy)):
        members = np.concatenate([np.asarray(c.indices, dtype=np.int64) for c in clusters]) if clusters \
            else np.zeros(0, np.int64)
        uniq, counts = np.unique(members, return_counts=True)
        if (counts > 1).any():  # a partition: an image sits in one cluster of a side
            _bad(source, side, f"image {int(uniq[counts > 1][0])} in more than one cluster",
                 "each image in at most one cluster of a side")
        sides[side] = uniq
    both = np.intersect1d(sides["hard_clusters"], sides["easy_clusters"])
    if both.size:
        _bad(source, "easy_clusters", f"image {int(both[0])} in a hard and an easy cluster ({both.size} image(s) "
             "in all)", "each image hard, easy or neither")


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


PAYLOAD_FORMAT = 2


def _encode_f32(rows):
    import base64

    arr = np.ascontiguousarray(np.asarray(rows, dtype="<f4"))
    return base64.b64encode(arr.tobytes()).decode("ascii")


def _decode_f32(text, shape, where, source):
    import base64
    import binascii

    if not isinstance(text, str):
        _bad(source, where, f"{type(text).__name__} {_show(text)}", "a base64 string of float32 values")
    try:
        raw = base64.b64decode(text.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError, ValueError):
        _bad(source, where, _show(text), "a base64 string of float32 values")
    if len(raw) != 4 * shape[0] * shape[1]:
        _bad(source, where, f"{len(raw)} bytes", f"{4 * shape[0] * shape[1]} bytes (float32, shape {shape})")
    return np.frombuffer(raw, dtype="<f4").astype(np.float64).reshape(shape)


def compact_payload(explanations):
    """The ``clustering`` and ``methods`` parts of an ``explanation.json`` (format 2).

    The methods of one run share their split and clustering, so it is stored
    once (``clustering``: member indices, easy matches, prototypes as base64
    little-endian float32); each method keeps only its parameters, sentences and
    scores. :func:`validate_explanation_payload` reads this and the older
    format (one full :meth:`Explanation.to_dict` per method). When the methods
    do not share one clustering, the older format is returned.

    Parameters
    ----------
    explanations : dict of str to Explanation

    Returns
    -------
    dict
        ``{"format": 2, "clustering": ..., "methods": ...}`` or ``{"methods": ...}``.
    """
    exps = list(explanations.values())
    first = exps[0]

    def same(e):
        return (len(e.hard_clusters) == len(first.hard_clusters) and len(e.easy_clusters) == len(first.easy_clusters)
                and all(np.array_equal(a.indices, b.indices) and a.easy_cluster == b.easy_cluster
                        and np.array_equal(a.prototype, b.prototype)
                        for a, b in zip(e.hard_clusters, first.hard_clusters))
                and all(np.array_equal(a.indices, b.indices) and np.array_equal(a.prototype, b.prototype)
                        for a, b in zip(e.easy_clusters, first.easy_clusters)))

    if not all(same(e) for e in exps[1:]):
        return {"methods": {m: {k: v for k, v in e.to_dict().items() if k != "sentences"}
                            for m, e in explanations.items()}}
    protos = [c.prototype for c in (*first.hard_clusters, *first.easy_clusters)]
    d = int(np.asarray(protos[0]).shape[0]) if protos else 0
    clustering = {
        "hard": [{"indices": np.asarray(c.indices).tolist(), "easy_cluster": int(c.easy_cluster)}
                 for c in first.hard_clusters],
        "easy": [{"indices": np.asarray(c.indices).tolist()} for c in first.easy_clusters],
        "prototypes": {"dtype": "<f4", "d": d,
                       "hard": _encode_f32([c.prototype for c in first.hard_clusters]) if first.hard_clusters else "",
                       "easy": _encode_f32([c.prototype for c in first.easy_clusters]) if first.easy_clusters else ""},
    }
    methods = {m: {"method": e.method, "params": dict(e.params),
                   "hard_sentences": [[int(s) for s in c.sentences] for c in e.hard_clusters],
                   "hard_scores": [[round(float(x), 6) for x in c.scores] for c in e.hard_clusters],
                   "selected": e.selected}
               for m, e in explanations.items()}
    return {"format": PAYLOAD_FORMAT, "clustering": clustering, "methods": methods}


def _expand_compact(payload, src):
    """Format 2 -> one :meth:`Explanation.to_dict`-like body per method (validated afterwards)."""
    cl = payload["clustering"]
    _check_mapping(cl, "clustering", repr(src), ("hard", "easy", "prototypes"))
    for key in ("hard", "easy"):
        if not isinstance(cl[key], list):
            _bad(repr(src), f"clustering.{key}", _show(cl[key]), "a list of clusters")
    pr = cl["prototypes"]
    _check_mapping(pr, "clustering.prototypes", repr(src), ("d", "hard", "easy"))
    d = _check_int(pr["d"], "clustering.prototypes.d", repr(src), what="dimension")
    hard_p = _decode_f32(pr["hard"], (len(cl["hard"]), d), "clustering.prototypes.hard", repr(src))
    easy_p = _decode_f32(pr["easy"], (len(cl["easy"]), d), "clustering.prototypes.easy", repr(src))
    easy = []
    for j, c in enumerate(cl["easy"]):
        _check_mapping(c, f"clustering.easy[{j}]", repr(src), ("indices",))
        easy.append({"indices": c["indices"], "prototype": easy_p[j]})
    bodies = {}
    for name, body in payload["methods"].items():
        if not isinstance(body, dict):
            _bad(repr(src), f"methods.{name}", f"{type(body).__name__} {_show(body)}", "an explanation object")
        _check_mapping(body, f"methods.{name}", repr(src), ("method", "hard_sentences", "hard_scores"))
        sents, scores = body["hard_sentences"], body["hard_scores"]
        for key, val in (("hard_sentences", sents), ("hard_scores", scores)):
            if not isinstance(val, list) or len(val) != len(cl["hard"]):
                _bad(repr(src), f"methods.{name}.{key}", _show(val),
                     f"a list with one entry per hard cluster ({len(cl['hard'])})")
        hard = []
        for i, c in enumerate(cl["hard"]):
            _check_mapping(c, f"clustering.hard[{i}]", repr(src), ("indices", "easy_cluster"))
            hard.append({"indices": c["indices"], "prototype": hard_p[i], "easy_cluster": c["easy_cluster"],
                         "sentences": sents[i], "scores": scores[i]})
        bodies[name] = {"method": body["method"], "params": body.get("params", {}), "hard_clusters": hard,
                        "easy_clusters": easy, "selected": body.get("selected")}
    return bodies


def validate_explanation_payload(payload, *, source):
    """Validate an ``explanation.json`` payload and rebuild its explanations.

    The payload is what :func:`lbee.run.pipeline.write_outputs` writes: the
    run's ``sentences`` and ``images`` lists and either (format 2, see
    :func:`compact_payload`) one shared ``clustering`` with a ``methods`` object
    of sentences and scores, or (the older format, still read) a ``methods``
    object of method name → :meth:`Explanation.to_dict` without ``sentences``.
    Indices are checked against the lists.

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
    fmt = payload.get("format", 1)
    if isinstance(fmt, bool) or not isinstance(fmt, int) or not 1 <= fmt <= PAYLOAD_FORMAT:
        _bad(repr(src), "format", _show(fmt), f"an explanation.json format up to {PAYLOAD_FORMAT} (a newer lbee "
             "wrote this file?)")
    if "clustering" in payload:
        methods = _expand_compact(payload, src)
    exps = {}
    for name, body in methods.items():
        if not isinstance(body, dict):
            _bad(repr(src), f"methods.{name}", f"{type(body).__name__} {_show(body)}", "an explanation object")
        exps[name] = Explanation.from_dict({**body, "sentences": sentences}, n_images=n_images,
                                           source=f"{src!r} methods.{name}")
        if exps[name].method != name:
            _bad(repr(src), f"methods.{name}.method", repr(exps[name].method), repr(name))
    return exps
