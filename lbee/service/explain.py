"""``POST /v1/explain``: arrays in, explanations out, through `lbee.explain_methods`, in worker processes.

The server only reads the (size-limited) body; parsing, the limits of
`lbee.service.settings.EXPLAIN_LIMITS` and the analysis run in an
`ExplainPool` process, so a request's memory is never the server's and
its cost is bounded: over a limit it is refused (413 for too many images,
sentences or dimensions, 422 for too many clusters or an exact Ward split too
large) with the limit in the message.
"""

from __future__ import annotations

import io
import json

import numpy as np

from .settings import EXPLAIN_LIMITS, MAX_NESTING

#: The RunSettings knobs that apply to embeddings already in hand (the others need a dataset and a model).
EXPLAIN_KNOBS = ("a", "clusters", "easy_clusters", "k", "tau", "methods", "ward")
ARRAY_FIELDS = ("image_embeddings", "sentence_embeddings", "confidence", "hard", "easy")


class LimitExceeded(ValueError):
    """A request over one of the server's documented limits; ``status`` is the HTTP answer (413 or 422)."""

    def __init__(self, message, status=413):
        super().__init__(message)
        self.status = status


class RefusedJSON(ValueError):
    """Valid JSON that a body may not hold (`DuplicateKey`, a number of more than `MAX_INT_DIGITS` digits)."""


class DuplicateKey(RefusedJSON):
    """A JSON object that names a key twice (YAML refuses it too; the last one must not win in silence)."""


def _unique_pairs(pairs):
    out = dict(pairs)
    if len(out) != len(pairs):
        seen = set()
        key = next(k for k, _ in pairs if k in seen or seen.add(k))
        raise DuplicateKey(f"key {key!r} is written twice in one object; give each key once.")
    return out


#: Digits of the longest integer a JSON body may write: Python's own limit is 4,300, and it says so naming nothing;
#: below it, a key's own range check names the key.
MAX_INT_DIGITS = 4000


def _bounded_int(text):
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        raise RefusedJSON(f"a number of {len(text.lstrip('-')):,} digits; at most {MAX_INT_DIGITS} are accepted.")
    return int(text)


def parse_json(raw, what, max_depth=MAX_NESTING):
    """JSON text → value, refusing invalid text, a key written twice and nesting deeper than ``max_depth``.

    Raises
    ------
    ValueError
        Naming ``what`` and the problem.
    """
    try:
        value = json.loads(raw, object_pairs_hook=_unique_pairs, parse_int=_bounded_int)
    except RefusedJSON as exc:
        raise ValueError(f"{what} is not accepted: {exc}") from None
    except RecursionError:
        raise ValueError(f"{what} is nested too deeply; at most {max_depth} levels are accepted.") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise ValueError(f"{what} is not valid JSON: {exc}") from None
    if b"\\u" in (raw if isinstance(raw, bytes) else raw.encode("utf-8", "surrogatepass")):
        try:  # an escaped lone surrogate ("\ud800") is JSON, but no text: it fails wherever it is written
            json.dumps(value, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError as exc:
            bad = exc.object[exc.start : exc.end].encode("unicode_escape").decode()
            raise ValueError(f"{what} holds {bad}, a lone surrogate; expected valid Unicode text.") from None
    check_depth(value, what, max_depth)
    return value


def check_depth(value, what, max_depth=MAX_NESTING):
    """Refuse containers nested deeper than ``max_depth`` (checked without recursion)."""
    stack = [(value, 1)]
    while stack:
        v, depth = stack.pop()
        if isinstance(v, (dict, list)):
            if depth > max_depth:
                raise ValueError(f"{what} is nested too deeply; at most {max_depth} levels are accepted.")
            stack.extend((c, depth + 1) for c in (v.values() if isinstance(v, dict) else v))


#: The JSON values an array field may hold: numbers (bools are refused: they are not numbers in JSON, and
#: numpy would read true as 1); the boolean masks also take true / false.
_JSON_LEAVES = {"hard": (bool, int, float), "easy": (bool, int, float)}


def _check_json_leaves(value, name):
    """Refuse strings, booleans (outside the masks), nulls and objects inside a JSON array, naming one."""
    allowed = _JSON_LEAVES.get(name, (int, float))
    for row_i, row in enumerate(value if isinstance(value, list) else [value]):
        for v in row if isinstance(row, list) else [row]:
            if isinstance(v, list) or (type(v) in allowed):
                continue
            what = "true / false" if name in _JSON_LEAVES else "JSON numbers"
            raise ValueError(
                f"`{name}` holds {json.dumps(v)[:40]} ({type(v).__name__}, row {row_i}); expected {what}, "
                "not strings, booleans or nulls."
            )


def _array(value, name, dtype):
    if isinstance(value, np.ndarray):
        arr = value
    else:
        _check_json_leaves(value, name)
        try:
            arr = np.asarray(value, dtype=dtype)
        except OverflowError:  # an integer such as 10**400 fits no float: a 500 before (sweep 28)
            raise ValueError(f"`{name}` holds a number too large for a float; expected finite numbers.") from None
        except (ValueError, TypeError) as exc:
            raise ValueError(f"`{name}` must be a numeric array (nested lists of equal length); {exc}") from None
    if arr.dtype == object:
        raise ValueError(f"`{name}` must be a numeric array; received objects.")
    return arr


#: The numpy dtype kinds an uploaded ``.npy`` may have: real numbers ('f' float, 'i' / 'u' integers); the masks
#: also booleans ('b'). Datetimes, complex numbers, text and records are refused before the data is read.
_NPY_KINDS = {"hard": "biu", "easy": "biu"}

#: Which limit of EXPLAIN_LIMITS bounds each axis of an uploaded array (rows, then columns).
_UPLOAD_AXES = {
    "image_embeddings": ("images", "dim"),
    "sentence_embeddings": ("sentences", "dim"),
    "confidence": ("images",),
    "hard": ("images",),
    "easy": ("images",),
}


def load_npy_bytes(data, name, limits=None):
    """A ``.npy`` upload (no pickles), its header checked before anything is allocated.

    The shape the header claims must fit the request's limits (413 naming the limit) and the bytes that
    came (a header claiming (10**12, 8) allocated terabytes); an ``.npz`` archive under any name is refused.
    """
    from numpy.lib import format as npformat

    from ..io.arrays import npy_reason

    if data[:4] == b"PK\x03\x04":
        raise ValueError(
            f"`{name}` is an .npz archive (np.savez), not a .npy array; upload each array as its own .npy (np.save)."
        )
    f = io.BytesIO(data)
    try:
        version = npformat.read_magic(f)
        read_header = npformat.read_array_header_1_0 if version == (1, 0) else npformat.read_array_header_2_0
        shape, _, dtype = read_header(f)  # the header only: nothing is allocated
    except (OSError, ValueError, EOFError, SyntaxError) as exc:
        raise ValueError(f"`{name}` is not a readable .npy file: {npy_reason(exc)}") from None
    if any(int(size) < 0 for size in shape):
        raise ValueError(f"`{name}`: its header claims shape {shape}, a negative size; expected a .npy file (np.save).")
    axes = _UPLOAD_AXES.get(name, ())
    if len(shape) > max(len(axes), 1):
        raise ValueError(f"`{name}` has shape {shape}; expected {len(axes) or 1} dimension(s).")
    for size, key in zip(shape, axes):
        if limits is not None and size > limits[key]:
            raise LimitExceeded(
                f"`{name}` has shape {shape}: {size} is over this server's limit '{key}' of {limits[key]} "
                "per /v1/explain request; submit a job (POST /v1/jobs) for larger analyses."
            )
    kinds = _NPY_KINDS.get(name, "fiu")
    if dtype.kind not in kinds or dtype.fields is not None:  # datetimes, complex, text, records, objects
        raise ValueError(
            f"`{name}` has dtype {dtype}; expected {'booleans or integers' if 'b' in kinds else 'real numbers'} "
            "(float or integer)."
        )
    needed = int(np.prod(shape, dtype=object)) * dtype.itemsize
    if needed != len(data) - f.tell():  # fewer: a truncated upload; more: data the header does not describe
        raise ValueError(
            f"`{name}`: its header claims shape {shape} ({needed} bytes of {dtype}) but the file holds "
            f"{len(data) - f.tell()} bytes of data; expected a complete .npy file (np.save) and nothing after it."
        )
    try:
        return np.load(io.BytesIO(data), allow_pickle=False)
    except (OSError, ValueError, EOFError) as exc:
        raise ValueError(f"`{name}` is not a readable .npy file: {npy_reason(exc)}") from None


def _check_limits(X, S, st, masks, limits):
    """Refuse a request whose cost is over the server's limits, before any clustering."""
    from lbee.core.split import resolve_split

    n, N, d = len(X), len(S), X.shape[-1] if X.ndim == 2 else 0
    for count, key, what in (
        (n, "images", "image_embeddings rows (images)"),
        (N, "sentences", "sentence_embeddings rows (sentences)"),
        (d, "dim", "dimensions"),
    ):
        if count > limits[key]:
            raise LimitExceeded(
                f"{count} {what}: this server answers at most {limits[key]} per /v1/explain "
                f"request (limit '{key}'); submit a job (POST /v1/jobs) for larger analyses."
            )
    for key, value in (("clusters", st.n_clusters), ("easy_clusters", st.easy_clusters)):
        if value is not None and value > limits["clusters"]:
            raise LimitExceeded(
                f"settings.{key} is {value}; this server forms at most {limits['clusters']} "
                "clusters per /v1/explain request (limit 'clusters').",
                status=422,
            )
    if st.ward in ("exact", "knn") and X.ndim == 2 and len(X) > limits["exact_ward"]:
        hard, easy = resolve_split(n, a=st.a, **masks)
        biggest = int(max(hard.sum(), easy.sum()))
        if biggest > limits["exact_ward"]:
            raise LimitExceeded(
                f"settings.ward {st.ward!r} on a split of {biggest} images: this server clusters at "
                f"most {limits['exact_ward']} images per split that way (limit 'exact_ward'; memory "
                "grows with the square of the split); use ward 'auto' (the scalable Ward).",
                status=422,
            )


def explain_request(body, limits=None):
    """Run the analysis of one request.

    Parameters
    ----------
    body : dict
        ``image_embeddings`` (n, d), ``sentence_embeddings`` (N, d), ``confidence``
        (n,) or ``hard`` / ``easy`` (n,) boolean masks, optional ``sentences`` (N strings)
        and ``settings`` (the knobs of `EXPLAIN_KNOBS`, validated by
        [`lbee.RunSettings`][lbee.RunSettings]).
    limits : dict, optional
        `lbee.service.settings.EXPLAIN_LIMITS` as configured (default: those).

    Returns
    -------
    dict
        ``lbee_version``, ``settings`` (as used), ``warnings`` (clusters capped or tiny: what to change) and
        ``explanations`` (method -> ``Explanation.to_dict()``, whose params record the clusters formed).

    Raises
    ------
    LimitExceeded
        Over a limit (the message names it).
    ValueError, TypeError
        Naming the field, what was received and what is expected.
    """
    import lbee
    from lbee.run.settings import RunSettings

    if not isinstance(body, dict):
        raise ValueError(f"the body must be a JSON object; received {type(body).__name__}.")
    unknown = [k for k in body if k not in ARRAY_FIELDS + ("sentences", "settings")]
    if unknown:
        raise ValueError(
            f"unknown field(s) {', '.join(map(repr, unknown))}; expected "
            f"{', '.join(ARRAY_FIELDS + ('sentences', 'settings'))}."
        )
    for name in ("image_embeddings", "sentence_embeddings"):
        if body.get(name) is None:
            raise ValueError(f"`{name}` is required: an array of shape ({'n' if name[0] == 'i' else 'N'}, d).")
    settings = body.get("settings") or {}
    if not isinstance(settings, dict):
        raise ValueError(f"`settings` must be an object of knobs; received {type(settings).__name__}.")
    other = [k for k in settings if k not in EXPLAIN_KNOBS and k in RunSettings.knobs()]
    if other:
        raise ValueError(
            f"settings {', '.join(map(repr, other))} need a dataset and a model (use POST /v1/jobs); "
            f"/v1/explain takes {', '.join(EXPLAIN_KNOBS)}."
        )
    st = RunSettings.from_mapping(settings, where="settings")
    if "compose" in st.methods:  # the library's advice ("pass grammar=") is no request's to follow (sweep 32ak N4)
        raise ValueError(
            "settings: method 'compose' needs a grammar's sentences with their conditions, which /v1/explain does not "
            "take; submit a job (POST /v1/jobs) whose sentences are a grammar, or choose other methods."
        )
    X = _array(body["image_embeddings"], "image_embeddings", np.float64)  # checked and scaled before any float32
    S = _array(body["sentence_embeddings"], "sentence_embeddings", np.float64)
    masks = {}
    for name in ("confidence", "hard", "easy"):
        if body.get(name) is not None:  # masks keep their dtype: the library refuses 0.3 rather than read True
            masks[name] = _array(body[name], name, np.float64 if name == "confidence" else None)
    sentences = body.get("sentences")
    if sentences is not None:
        check_sentence_list(sentences)
    _check_limits(X, S, st, masks, limits or EXPLAIN_LIMITS)
    exps = lbee.explain_methods(
        X,
        S,
        methods=list(st.methods),
        a=st.a,
        n_clusters=st.n_clusters,
        n_easy_clusters=st.easy_clusters,
        k=st.k,
        tau=st.resolved_tau(None),
        sentences=sentences,
        ward=st.ward,
        **masks,
    )
    from lbee.core.clustering import cluster_notes

    for e in exps.values():
        e.params["n_hard_clusters_formed"] = len(e.hard_clusters)
        e.params["n_easy_clusters_formed"] = len(e.easy_clusters)
    notes = cluster_notes(next(iter(exps.values()))) if exps else []
    first = next(iter(exps.values()), None)
    if first is not None and first.params.get("n_clusters", 0) > first.params.get("n_hard", 10**12):
        from lbee.core.clustering import capped_clusters_message

        notes.insert(
            0, capped_clusters_message(first.params["n_clusters"], first.params["n_hard"], option="settings.clusters")
        )
    if st.tau is None:  # bare arrays carry no encoder: say which τ was assumed (lbee.io.provenance)
        notes.append(
            f"settings.tau not given and JSON arrays carry no provenance: τ = {st.resolved_tau(None):g} "
            "(CLIP's) was assumed; pass settings.tau for another encoder's embeddings (the SpotCheck "
            "encoder's is in the .provenance.json that `lbee embed` writes)."
        )
    used = {k: v for k, v in st.to_dict().items() if k in EXPLAIN_KNOBS}
    used["tau"] = st.resolved_tau(None)
    return {
        "lbee_version": lbee.__version__,
        "settings": used,
        "warnings": notes,
        "explanations": {m: e.to_dict() for m, e in exps.items()},
    }


def check_sentence_list(sentences):
    """Refuse what a sentence file cannot hold (`lbee.io.sentences.parse_sentences`'s rule).

    Strings of visible text on one line, none blank, none repeated (compared as
    `lbee.io.sentences.sentence_key` does): a blank or repeated sentence makes rows that no explanation
    can tell apart.
    """
    if not (isinstance(sentences, list) and all(isinstance(s, str) for s in sentences)):
        raise ValueError("`sentences` must be a list of strings, one per row of sentence_embeddings.")
    from ..grammar import INVISIBLE, line_break_in
    from ..io.sentences import MAX_SENTENCE_CHARS, sentence_key, too_long

    seen = {}
    for i, text in enumerate(sentences):
        if not text.strip():
            raise ValueError(f"`sentences[{i}]` is blank; expected a sentence.")
        if len(text.strip()) > MAX_SENTENCE_CHARS:
            raise ValueError(f"`sentences[{i}]` {too_long(text.strip())}")
        bad = line_break_in(text.strip())
        if bad is not None:
            raise ValueError(
                f"`sentences[{i}]` holds the character U+{ord(bad):04X} ({INVISIBLE}); expected one sentence of "
                "visible text on one line."
            )
        key = sentence_key(text)
        if key in seen:
            raise ValueError(f"`sentences[{i}]` repeats sentences[{seen[key]}] {text[:80]!r}; give each once.")
        seen[key] = i


def parse_form(fields, limits=None):
    """The body of a ``multipart/form-data`` request: ``fields`` is a list of (name, str or bytes of a file)."""
    body = {}
    for key, value in fields:
        if key in body:  # one of them would win in silence (a JSON body refuses a key written twice too)
            raise ValueError(f"field {key!r} is given twice; give each field once.")
        if isinstance(value, bytes):
            if key not in ARRAY_FIELDS:
                raise ValueError(f"unexpected file field {key!r}; files are {', '.join(ARRAY_FIELDS)}.")
            body[key] = load_npy_bytes(value, key, limits)
        elif key in ("settings",) + ARRAY_FIELDS:
            body[key] = parse_json(value, key)
        elif key == "sentences":
            body[key] = (
                parse_json(value, key)
                if value.lstrip().startswith("[")
                else [ln for ln in value.splitlines() if ln.strip()]
            )
        else:
            body[key] = value
    return body


def answer(kind, payload, limits):
    """In an explain worker: (HTTP status, JSON bytes) of one request (``kind`` 'json': raw bytes; 'form': fields)."""
    from .views import clean

    try:
        body = parse_json(payload, "the body") if kind == "json" else parse_form(payload, limits)
        result = explain_request(body, limits)
    except LimitExceeded as exc:
        return exc.status, json.dumps({"detail": str(exc)}).encode()
    except MemoryError:
        detail = "the request needs more memory than this server's explain process has; submit a job instead."
        return 413, json.dumps({"detail": detail}).encode()
    except (ValueError, TypeError, OverflowError) as exc:
        return 422, json.dumps({"detail": str(exc)}).encode()
    return 200, json.dumps(clean(result)).encode()
