"""The checks an explanation read from a file passes: structure, types, index ranges, partition.

Every failure raises ``ValueError`` naming the field as a path into the data
(``explanation.json methods.fpdiff.hard_clusters[2].indices[5]``), what was
received and what is expected.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NoReturn

import numpy as np

from ..typing import FloatArray, IntArray

if TYPE_CHECKING:
    from .explanation import Explanation

MAX_INDEX = 2**62  # far above any real n; keeps int64 conversion safe before the n_* bound is known


def bad_field(source: str, field: str, received: object, expected: str) -> NoReturn:
    """Raise the one ``ValueError`` shape: ``{source}.{field}: received ...; expected ...``."""
    raise ValueError(f"{source}.{field}: received {received}; expected {expected}.")


def show_value(value: object) -> str:
    """``repr(value)``, cut to 60 characters for messages."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def check_index(value: Any, field: str, source: str, *, upper: int | None = None, what: str = "index") -> int:
    """A non-negative integer below ``upper`` (else below `MAX_INDEX`)."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        bad_field(source, field, f"{type(value).__name__} {show_value(value)}", f"an integer {what}")
    index = int(value)
    if index < 0:
        bad_field(source, field, index, f"a non-negative {what}")
    bound = MAX_INDEX if upper is None else upper
    if index >= bound:
        art = "an" if what[0] in "aeiou" else "a"
        bad_field(source, field, index, f"{art} {what} below {bound}" if upper is not None else f"a plausible {what}")
    return index


def check_index_list(
    values: Any, field: str, source: str, *, upper: int | None = None, what: str = "index", unique: bool = True
) -> IntArray:
    """A list of `check_index` values (distinct when ``unique``), as int64."""
    if not isinstance(values, (list, tuple, np.ndarray)):
        bad_field(source, field, f"{type(values).__name__} {show_value(values)}", f"a list of integer {what}es")
    out = [check_index(v, f"{field}[{i}]", source, upper=upper, what=what) for i, v in enumerate(values)]
    if unique and len(set(out)) != len(out):
        dup = next(v for v in out if out.count(v) > 1)
        bad_field(source, field, f"{what} {dup} more than once", f"each {what} once")
    indices: IntArray = np.asarray(out, dtype=np.int64)
    return indices


def check_vector(values: Any, field: str, source: str, *, length: int | None = None) -> FloatArray:
    """A list of finite numbers (of ``length`` when given), as float64."""
    if not isinstance(values, (list, tuple, np.ndarray)):
        bad_field(source, field, f"{type(values).__name__} {show_value(values)}", "a list of numbers")
    if any(isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, np.integer, np.floating)) for v in values):
        bad = next(
            v
            for v in values
            if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, np.integer, np.floating))
        )
        bad_field(source, field, f"the element {show_value(bad)}", "numbers only")
    arr: FloatArray = np.asarray(values, dtype=np.float64).reshape(-1)
    if not np.all(np.isfinite(arr)):
        bad_field(source, field, f"{int(np.sum(~np.isfinite(arr)))} NaN or inf value(s)", "finite numbers")
    if length is not None and arr.shape[0] != length:
        bad_field(source, field, f"length {arr.shape[0]}", f"length {length} (the embedding dimension d)")
    return arr


def check_mapping(value: Any, field: str, source: str, keys: Sequence[str]) -> None:
    """A dict holding every key of ``keys``."""
    if not isinstance(value, dict):
        bad_field(source, field, f"{type(value).__name__} {show_value(value)}", "an object (dict)")
    missing = [k for k in keys if k not in value]
    if missing:
        bad_field(source, field, f"an object without {missing}", f"the keys {list(keys)}")


def check_json_data(value: Any, field: str, source: str) -> None:
    """Refuse what strict JSON cannot hold (NaN, ±inf, non-string keys, objects), so a result writes as read."""
    if isinstance(value, (float, np.floating)) and not np.isfinite(value):
        bad_field(source, field, show_value(value), "finite numbers (strict JSON has no NaN or infinity)")
    if isinstance(value, dict):
        for k, v in value.items():
            if not isinstance(k, str):
                bad_field(source, field, f"the key {show_value(k)}", "string keys")
            check_json_data(v, f"{field}.{k}", source)
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            check_json_data(v, f"{field}[{i}]", source)
    elif not (value is None or isinstance(value, (str, bool, int, float, np.integer, np.floating, np.bool_))):
        bad_field(
            source, field, f"a {type(value).__name__}", "JSON data (null, booleans, numbers, strings, lists, objects)"
        )


def check_bound(explicit: Any, params: dict[str, Any], key: str, source: str) -> int | None:
    """An explicit ``n_images`` / ``n_sentences`` bound as int (None when not given)."""
    if explicit is not None:
        if isinstance(explicit, bool) or not isinstance(explicit, (int, np.integer)) or explicit < 0:
            raise ValueError(f"`{key}` must be a non-negative integer; received {show_value(explicit)}.")
        return int(explicit)
    return None  # params['n_images'] is not a bound: per-class explanations index every image of the run


def check_partition(hard: Sequence[Any], easy: Sequence[Any], source: str = "explanation") -> None:
    """Refuse clusters that are not a partition.

    An empty hard cluster, an image in two clusters of a side, or an image both hard and easy: any of them shifts
    ACR and the split sizes without a word.
    """
    for i, c in enumerate(hard):
        if np.asarray(c.indices).size == 0:
            bad_field(source, f"hard_clusters[{i}].indices", "an empty cluster", "at least one image per hard cluster")
    sides: dict[str, IntArray] = {}
    for side, clusters in (("hard_clusters", hard), ("easy_clusters", easy)):
        members = (
            np.concatenate([np.asarray(c.indices, dtype=np.int64) for c in clusters])
            if clusters
            else np.zeros(0, np.int64)
        )
        uniq, counts = np.unique(members, return_counts=True)
        if (counts > 1).any():  # a partition: an image sits in one cluster of a side
            bad_field(
                source,
                side,
                f"image {int(uniq[counts > 1][0])} in more than one cluster",
                "each image in at most one cluster of a side",
            )
        sides[side] = uniq
    both = np.intersect1d(sides["hard_clusters"], sides["easy_clusters"])
    if both.size:
        bad_field(
            source,
            "easy_clusters",
            f"image {int(both[0])} in a hard and an easy cluster ({both.size} image(s) in all)",
            "each image hard, easy or neither",
        )


def check_explanation_ranges(
    explanation: Explanation,
    *,
    n_images: int | None = None,
    n_sentences: int | None = None,
    source: str = "explanation",
) -> Explanation:
    """Check that an `Explanation` indexes within ``n_images`` images and ``n_sentences`` sentences.

    Loaders call it once they know the run's sizes (the file's ``images`` and
    ``sentences`` lists). Raises ``ValueError`` naming the cluster and field.

    Returns
    -------
    Explanation
        The same object.
    """
    for key, n in (("n_images", n_images), ("n_sentences", n_sentences)):
        if n is not None and (isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0):
            raise ValueError(f"`{key}` must be a non-negative integer; received {show_value(n)}.")
    sides: tuple[tuple[str, Sequence[Any]], ...] = (
        ("hard_clusters", explanation.hard_clusters),
        ("easy_clusters", explanation.easy_clusters),
    )
    for kind, clusters in sides:
        for i, c in enumerate(clusters):
            idx = np.asarray(c.indices)
            if idx.size and (idx.min() < 0 or (n_images is not None and idx.max() >= n_images)):
                bad = int(idx.min()) if idx.min() < 0 else int(idx.max())
                bad_field(
                    source,
                    f"{kind}[{i}].indices",
                    f"image index {bad}",
                    f"indices in [0, {n_images if n_images is not None else 'n'})",
                )
    for i, c in enumerate(explanation.hard_clusters):
        for s in c.sentences:
            if s < 0 or (n_sentences is not None and s >= n_sentences):
                bad_field(
                    source,
                    f"hard_clusters[{i}].sentences",
                    f"sentence index {s}",
                    f"indices in [0, {n_sentences if n_sentences is not None else 'N'})",
                )
    return explanation


def explanation_from_dict(
    cls: type[Explanation],
    data: Any,
    *,
    n_images: int | None = None,
    n_sentences: int | None = None,
    source: str = "data",
) -> Explanation:
    """`Explanation.from_dict`: an explanation rebuilt from a dict, every field checked (naming it)."""
    from .explanation import EasyCluster, HardCluster
    from .selection import DESCRIBERS

    if not isinstance(data, dict):
        raise TypeError(f"`data` must be a dict from Explanation.to_dict(); received {type(data).__name__}.")
    missing = {"method", "hard_clusters", "easy_clusters"} - set(data)
    if missing:
        raise ValueError(f"{source} lacks the key(s) {sorted(missing)}; is it an Explanation.to_dict() result?")
    method = data["method"]
    if not isinstance(method, str) or method not in DESCRIBERS:
        bad_field(source, "method", show_value(method), f"one of {list(DESCRIBERS)}")
    params = data.get("params", {})
    if params is None:
        params = {}
    if not isinstance(params, dict):
        bad_field(source, "params", f"{type(params).__name__} {show_value(params)}", "an object (dict)")
    check_json_data(params, "params", source)
    texts = data.get("sentences")
    if texts is not None:
        if not isinstance(texts, (list, tuple)) or not all(isinstance(t, str) for t in texts):
            bad_field(source, "sentences", show_value(texts)[:60], "null or a list of strings")
        texts = list(texts)
    n_img = check_bound(n_images, params, "n_images", source)
    if n_img is None and "label" not in params and params.get("n_images") is not None:
        # A whole-dataset explanation indexes its own n_images; a per-class one (params['label']) indexes the run's.
        n_img = check_bound(params["n_images"], {}, "params.n_images", source)
    n_sent = check_bound(n_sentences, params, "n_sentences", source)
    if n_sent is None and texts is None and params.get("n_sentences") is not None:
        n_sent = check_bound(params["n_sentences"], {}, "params.n_sentences", source)
    if texts is not None:
        if n_sent is not None and len(texts) != n_sent:
            bad_field(
                source,
                "sentences",
                f"{len(texts)} sentence(s)",
                f"{n_sent} (one per sentence index; n_sentences={n_sent})",
            )
        n_sent = len(texts)
    for key in ("hard_clusters", "easy_clusters"):
        if not isinstance(data[key], (list, tuple)):
            bad_field(source, key, f"{type(data[key]).__name__} {show_value(data[key])}", "a list of clusters")
    dim = None
    easy = []
    for j, c in enumerate(data["easy_clusters"]):
        where = f"easy_clusters[{j}]"
        check_mapping(c, where, source, ("indices", "prototype"))
        idx = check_index_list(c["indices"], f"{where}.indices", source, upper=n_img, what="image index")
        proto = check_vector(c["prototype"], f"{where}.prototype", source, length=dim)
        dim = proto.shape[0] if dim is None else dim
        easy.append(EasyCluster(idx, proto))
    hard = []
    for i, c in enumerate(data["hard_clusters"]):
        where = f"hard_clusters[{i}]"
        check_mapping(c, where, source, ("indices", "prototype", "easy_cluster", "sentences", "scores"))
        idx = check_index_list(c["indices"], f"{where}.indices", source, upper=n_img, what="image index")
        proto = check_vector(c["prototype"], f"{where}.prototype", source, length=dim)
        dim = proto.shape[0] if dim is None else dim
        if not easy:
            bad_field(
                source,
                f"{where}.easy_cluster",
                show_value(c["easy_cluster"]),
                "an index into easy_clusters, which is empty",
            )
        match = check_index(
            c["easy_cluster"], f"{where}.easy_cluster", source, upper=len(easy), what="easy-cluster index"
        )
        sents = check_index_list(c["sentences"], f"{where}.sentences", source, upper=n_sent, what="sentence index")
        scores = check_vector(c["scores"], f"{where}.scores", source)
        if scores.shape[0] != sents.shape[0]:
            bad_field(
                source, f"{where}.scores", f"{scores.shape[0]} score(s)", f"{sents.shape[0]}, one per chosen sentence"
            )
        hard.append(HardCluster(idx, proto, match, sents.tolist(), scores.tolist()))
    check_partition(hard, easy, source)
    if dim == 0:
        bad_field(source, "prototype", "empty prototypes", "vectors of the embedding dimension d >= 1")
    if "selected" in data and data["selected"] is not None:
        selected = check_index_list(data["selected"], "selected", source, upper=n_sent, what="sentence index")
        union = sorted({s for c in hard for s in c.sentences})
        if sorted(selected.tolist()) != union:
            bad_field(
                source,
                "selected",
                show_value(sorted(selected.tolist())),
                f"the union of the hard clusters' sentences, {show_value(union)}",
            )
    return cls(hard, easy, method, dict(params), texts)
