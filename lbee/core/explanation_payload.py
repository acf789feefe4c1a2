"""The ``explanation.json`` payload: written once per run, read back with every check.

`compact_payload` stores the methods of a run with their shared split
and clustering once (format 2 and later, prototypes as base64 float32; format 3 adds the rows digest);
`validate_explanation_payload` reads that and the older format (one
full `lbee.core.explanation.Explanation.to_dict` per method).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ..typing import ArrayLike, FloatArray
from .explanation_checks import bad_field, check_index, check_mapping, show_value

if TYPE_CHECKING:
    from .explanation import Explanation

PAYLOAD_FORMAT = 4
# From format 3 on, a file that lists its images or sentences records their digest (rows_sha256): a file of
# that format without it was edited. Older formats are read with a warning that their sentences are unchecked.
ROWS_DIGEST_SINCE = 3
# From format 4 on, the file records the digest of all it holds (content_sha256: the groups, each method's
# sentences and scores, the statistics): a file of that format without it, or whose content differs, was edited.
# Format 3 is read with a warning that its results are unchecked.
CONTENT_DIGEST_SINCE = 4


def _encode_f32(rows: ArrayLike) -> str:
    import base64

    arr = np.ascontiguousarray(np.asarray(rows, dtype="<f4"))
    return base64.b64encode(arr.tobytes()).decode("ascii")


def _decode_f32(text: Any, shape: tuple[int, int], where: str, source: str) -> FloatArray:
    import base64
    import binascii

    if not isinstance(text, str):
        bad_field(source, where, f"{type(text).__name__} {show_value(text)}", "a base64 string of float32 values")
    try:
        raw = base64.b64decode(text.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError, ValueError):
        bad_field(source, where, show_value(text), "a base64 string of float32 values")
    if len(raw) != 4 * shape[0] * shape[1]:
        bad_field(source, where, f"{len(raw)} bytes", f"{4 * shape[0] * shape[1]} bytes (float32, shape {shape})")
    out: FloatArray = np.frombuffer(raw, dtype="<f4").astype(np.float64).reshape(shape)
    return out


def compact_payload(explanations: dict[str, Explanation]) -> dict[str, Any]:
    """The ``clustering`` and ``methods`` parts of an ``explanation.json`` (format 2).

    The methods of one run share their split and clustering, so it is stored
    once (``clustering``: member indices, easy matches, prototypes as base64
    little-endian float32); each method keeps only its parameters, sentences and
    scores. `validate_explanation_payload` reads this and the older
    format (one full `Explanation.to_dict` per method). When the methods
    do not share one clustering, the older format is returned.

    Parameters
    ----------
    explanations : dict of str to Explanation

    Returns
    -------
    dict
        ``{"format": 3, "clustering": ..., "methods": ...}`` or ``{"methods": ...}``.
    """
    exps = list(explanations.values())
    first = exps[0]

    def same(e: Explanation) -> bool:
        return (
            len(e.hard_clusters) == len(first.hard_clusters)
            and len(e.easy_clusters) == len(first.easy_clusters)
            and all(
                np.array_equal(a.indices, b.indices)
                and a.easy_cluster == b.easy_cluster
                and np.array_equal(a.prototype, b.prototype)
                for a, b in zip(e.hard_clusters, first.hard_clusters)
            )
            and all(
                np.array_equal(a.indices, b.indices) and np.array_equal(a.prototype, b.prototype)
                for a, b in zip(e.easy_clusters, first.easy_clusters)
            )
        )

    if not all(same(e) for e in exps[1:]):
        return {
            "methods": {m: {k: v for k, v in e.to_dict().items() if k != "sentences"} for m, e in explanations.items()}
        }
    protos = [c.prototype for c in first.hard_clusters] + [c.prototype for c in first.easy_clusters]
    d = int(np.asarray(protos[0]).shape[0]) if protos else 0
    clustering = {
        "hard": [
            {"indices": np.asarray(c.indices).tolist(), "easy_cluster": int(c.easy_cluster)}
            for c in first.hard_clusters
        ],
        "easy": [{"indices": np.asarray(c.indices).tolist()} for c in first.easy_clusters],
        "prototypes": {
            "dtype": "<f4",
            "d": d,
            "hard": _encode_f32([c.prototype for c in first.hard_clusters]) if first.hard_clusters else "",
            "easy": _encode_f32([c.prototype for c in first.easy_clusters]) if first.easy_clusters else "",
        },
    }
    methods = {
        m: {
            "method": e.method,
            "params": dict(e.params),
            "hard_sentences": [[int(s) for s in c.sentences] for c in e.hard_clusters],
            "hard_scores": [[round(float(x), 6) for x in c.scores] for c in e.hard_clusters],
            "selected": e.selected,
        }
        for m, e in explanations.items()
    }
    return {"format": PAYLOAD_FORMAT, "clustering": clustering, "methods": methods}


def _expand_compact(payload: dict[str, Any], src: str) -> dict[str, dict[str, Any]]:
    """Format 2 -> one `Explanation.to_dict`-like body per method (validated afterwards)."""
    cl = payload["clustering"]
    check_mapping(cl, "clustering", repr(src), ("hard", "easy", "prototypes"))
    for key in ("hard", "easy"):
        if not isinstance(cl[key], list):
            bad_field(repr(src), f"clustering.{key}", show_value(cl[key]), "a list of clusters")
    pr = cl["prototypes"]
    check_mapping(pr, "clustering.prototypes", repr(src), ("d", "hard", "easy"))
    d = check_index(pr["d"], "clustering.prototypes.d", repr(src), what="dimension")
    hard_p = _decode_f32(pr["hard"], (len(cl["hard"]), d), "clustering.prototypes.hard", repr(src))
    easy_p = _decode_f32(pr["easy"], (len(cl["easy"]), d), "clustering.prototypes.easy", repr(src))
    easy = []
    for j, c in enumerate(cl["easy"]):
        check_mapping(c, f"clustering.easy[{j}]", repr(src), ("indices",))
        easy.append({"indices": c["indices"], "prototype": easy_p[j]})
    bodies = {}
    for name, body in payload["methods"].items():
        if not isinstance(body, dict):
            bad_field(
                repr(src), f"methods.{name}", f"{type(body).__name__} {show_value(body)}", "an explanation object"
            )
        check_mapping(body, f"methods.{name}", repr(src), ("method", "hard_sentences", "hard_scores"))
        sents, scores = body["hard_sentences"], body["hard_scores"]
        for key, val in (("hard_sentences", sents), ("hard_scores", scores)):
            if not isinstance(val, list) or len(val) != len(cl["hard"]):
                bad_field(
                    repr(src),
                    f"methods.{name}.{key}",
                    show_value(val),
                    f"a list with one entry per hard cluster ({len(cl['hard'])})",
                )
        hard = []
        for i, c in enumerate(cl["hard"]):
            check_mapping(c, f"clustering.hard[{i}]", repr(src), ("indices", "easy_cluster"))
            hard.append(
                {
                    "indices": c["indices"],
                    "prototype": hard_p[i],
                    "easy_cluster": c["easy_cluster"],
                    "sentences": sents[i],
                    "scores": scores[i],
                }
            )
        bodies[name] = {
            "method": body["method"],
            "params": body.get("params", {}),
            "hard_clusters": hard,
            "easy_clusters": easy,
            "selected": body.get("selected"),
        }
    return bodies


def validate_explanation_payload(payload: Any, *, source: object) -> dict[str, Explanation]:
    """Validate an ``explanation.json`` payload and rebuild its explanations.

    The payload is what `lbee.run.pipeline.write_outputs` writes: the
    run's ``sentences`` and ``images`` lists and either (format 2 or later, see
    `compact_payload`) one shared ``clustering`` with a ``methods`` object
    of sentences and scores, or (the older format, still read) a ``methods``
    object of method name → `Explanation.to_dict` without ``sentences``.
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
    from .explanation import Explanation

    src = str(source)
    if not isinstance(payload, dict):
        raise ValueError(
            f"{src!r}: received a JSON {type(payload).__name__}; expected an object with a 'methods' key "
            "(an lbee explanation.json)."
        )
    if "methods" not in payload:
        raise ValueError(f"{src!r} is not an lbee explanation.json (no 'methods' key).")
    methods = payload["methods"]
    if not isinstance(methods, dict) or not methods:
        bad_field(
            repr(src),
            "methods",
            f"{type(methods).__name__} {show_value(methods)}",
            "a non-empty object mapping method names to explanations",
        )
    sentences = payload.get("sentences")
    if sentences is not None and (not isinstance(sentences, list) or not all(isinstance(s, str) for s in sentences)):
        bad_field(repr(src), "sentences", show_value(sentences), "a list of strings")
    images = payload.get("images")
    if images is not None and not isinstance(images, list):
        bad_field(repr(src), "images", show_value(images), "a list of image ids")
    digest = payload.get("rows_sha256")
    fmt = payload.get("format", 1)
    lists_rows = images is not None or sentences is not None
    if digest is None and lists_rows and isinstance(fmt, int) and fmt >= ROWS_DIGEST_SINCE:
        raise ValueError(
            f"{src!r}: format {fmt} records the digest of its 'images' and 'sentences' (rows_sha256), and this "
            "file has none: the file was edited. Write it again with lbee describe."
        )
    if digest is None and sentences is not None:
        import warnings

        warnings.warn(
            f"{src!r} was written before lbee recorded the digest of its rows: its 'sentences' cannot be checked "
            "against edits. Write it again with lbee describe to have them checked.",
            UserWarning,
            stacklevel=3,
        )
    if digest is not None and digest != rows_digest(images, sentences):
        # indices point into these lists: reordered or edited, they would pair Γ's rows and columns with others
        raise ValueError(
            f"{src!r}: its 'images' or 'sentences' differ from the ones it was written with (rows_sha256); "
            "the file was edited. Write it again with lbee describe."
        )
    n_images = None if images is None else len(images)
    if isinstance(fmt, bool) or not isinstance(fmt, int) or not 1 <= fmt <= PAYLOAD_FORMAT:
        bad_field(
            repr(src),
            "format",
            show_value(fmt),
            f"an explanation.json format up to {PAYLOAD_FORMAT} (a newer lbee wrote this file?)",
        )
    if "clustering" in payload:
        methods = _expand_compact(payload, src)
    exps = {}
    for name, body in methods.items():
        if not isinstance(body, dict):
            bad_field(
                repr(src), f"methods.{name}", f"{type(body).__name__} {show_value(body)}", "an explanation object"
            )
        exps[name] = Explanation.from_dict(
            {**body, "sentences": sentences}, n_images=n_images, source=f"{src!r} methods.{name}"
        )
        if exps[name].method != name:
            bad_field(repr(src), f"methods.{name}.method", repr(exps[name].method), repr(name))
    # after the fields' checks, which name what is malformed: a well-formed edit is caught here
    content = payload.get("content_sha256")
    if content is None and isinstance(fmt, int) and fmt >= CONTENT_DIGEST_SINCE:
        raise ValueError(
            f"{src!r}: format {fmt} records the digest of its content (content_sha256), and this file has none: "
            "the file was edited. Write it again with lbee describe."
        )
    if content is None and isinstance(fmt, int) and fmt == ROWS_DIGEST_SINCE:
        import warnings

        warnings.warn(
            f"{src!r} was written before lbee recorded the digest of its content: its groups, sentences and scores "
            "cannot be checked against edits. Write it again with lbee describe to have them checked.",
            UserWarning,
            stacklevel=3,
        )
    if content is not None and content != content_digest(payload):
        raise ValueError(
            f"{src!r}: its content differs from what it was written with (content_sha256): the groups, a method's "
            "sentences or scores, or the statistics were edited. Write it again with lbee describe."
        )
    return exps


def content_digest(payload: dict[str, Any]) -> str:
    """The digest of everything an ``explanation.json`` holds but its ``content_sha256`` (canonical JSON)."""
    import hashlib
    import json

    body = {k: v for k, v in payload.items() if k != "content_sha256"}
    text = json.dumps(body, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def rows_digest(images: Any, sentences: Any) -> str:
    """The digest of an explanation's image ids and sentences, in order, that ``explanation.json`` records."""
    import hashlib
    import json

    text = json.dumps({"images": images, "sentences": sentences}, ensure_ascii=False, separators=(",", ":"))
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()
