"""What ``lbee.explain`` returns: hard and easy clusters with their sentences (SPEC §2)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .selection import METHODS


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
