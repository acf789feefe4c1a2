"""Provenance of embeddings files: the encoder and τ travel with the numbers.

The provenance rule: every embeddings ``.npy`` lbee writes (``lbee embed``,
:func:`write_embeddings`) has a sidecar ``<name>.provenance.json`` beside it
with the encoder's identity (spec, model, weights digest), its τ, the
normalisation, the shape, a digest of the rows and, for sentence embeddings,
the digest of the sentence list they embed. Every consumer reads it through
:func:`load_embeddings` and :func:`check_pair`:

- τ defaults to the sidecar's (``--tau`` / ``tau:`` still wins);
- image and sentence embeddings from two encoders are refused, and so are
  sentence embeddings of another sentence list, or of another encoder than
  the one that embeds the images now;
- a sidecar that does not describe its ``.npy`` (replaced since) is refused;
- embeddings without a sidecar (a bare array) are read with a warning that
  names the τ assumed (CLIP's), unless τ is given.
"""

from __future__ import annotations

import hashlib
import json
import warnings
from pathlib import Path

import numpy as np

FORMAT = 1
SUFFIX = ".provenance.json"
KINDS = ("image_embeddings", "sentence_embeddings")
NORMALISATION = "unit L2 rows, float32"
#: The identity keys that name an encoder's space (``preprocess`` is the image side's and may differ).
_SPACE_KEYS = ("encoder", "model", "weights")


class ProvenanceWarning(UserWarning):
    """Embeddings without provenance: lbee assumes something and says what."""


def sidecar_path(path):
    """``embeddings.npy`` -> ``embeddings.provenance.json``."""
    path = Path(path)
    return path.with_name(path.stem + SUFFIX)


def array_digest(array):
    """Hex SHA-256 of the rows as contiguous float32 (what lbee stores and reads)."""
    arr = np.ascontiguousarray(np.asarray(array, dtype=np.float32))
    h = hashlib.sha256(str(arr.shape).encode())
    h.update(memoryview(arr).cast("B"))
    return h.hexdigest()


def encoder_tau(encoder):
    """The τ an encoder declares (``default_tau``), else None (the CLIP value then applies)."""
    tau = getattr(encoder, "default_tau", None)
    return None if tau is None else float(tau)


def make_provenance(
    kind, array, *, encoder=None, identity=None, spec=None, tau=None, sentences=None, sentence_set=None
):
    """The provenance record of an embeddings array.

    Parameters
    ----------
    kind : {'image_embeddings', 'sentence_embeddings'}
    array : ndarray of shape (n, d)
    encoder : lbee.encoders.Encoder, optional
        Gives ``identity`` and ``tau`` when they are not passed.
    identity : dict, optional
        The encoder's :meth:`~lbee.encoders.Encoder.identity`.
    spec : str, optional
        The encoder spec as the user wrote it (``open_clip:ViT-B-32@laion2b_s34b_b79k``).
    tau : float, optional
    sentences : list of str, optional
        Sentence embeddings: the sentences, in row order (their digest is stored).
    sentence_set : str, optional
        The sentence set's name.
    """
    from .cache import sentence_list_key

    if kind not in KINDS:
        raise ValueError(f"`kind` must be one of {list(KINDS)}; received {kind!r}.")
    arr = np.asarray(array)
    if arr.ndim != 2:
        raise ValueError(f"`array` must be 2-D (rows, d); received shape {arr.shape}.")
    if identity is None:
        identity = encoder.identity() if encoder is not None else None
    if identity is None:
        raise ValueError("make_provenance needs the encoder (or its identity).")
    if tau is None and encoder is not None:
        tau = encoder_tau(encoder)
    record = {
        "lbee_provenance": FORMAT,
        "kind": kind,
        "encoder": dict(identity),
        "encoder_spec": spec,
        "weights": identity.get("weights"),
        "tau": None if tau is None else float(tau),
        "normalisation": NORMALISATION,
        "shape": list(arr.shape),
        "dimension": int(arr.shape[1]),
        "data_sha256": array_digest(arr),
    }
    if kind == "sentence_embeddings":
        if sentences is None:
            raise ValueError("sentence embeddings' provenance needs the sentences (their digest is stored).")
        sentences = [str(s) for s in sentences]
        if len(sentences) != arr.shape[0]:
            raise ValueError(
                f"{len(sentences)} sentences for {arr.shape[0]} sentence embeddings; expected one sentence per row."
            )
        record.update(
            sentence_set=sentence_set, n_sentences=len(sentences), sentences_sha256=sentence_list_key(sentences)
        )
    from .._version import __version__

    record["lbee_version"] = __version__
    return record


def write_embeddings(path, array, provenance):
    """Write ``array`` (unit float32 rows) to ``path`` and its provenance sidecar, each atomically.

    The ``.npy`` goes through a temporary file and a rename (a full disk leaves
    the old file whole); the sidecar follows, so a reader never pairs a new
    array with an old record without noticing (the digest differs).
    """
    from .cache import atomic_save_npy, atomic_write_bytes

    arr = np.ascontiguousarray(np.asarray(array, dtype=np.float32))
    if provenance.get("data_sha256") != array_digest(arr) or list(arr.shape) != provenance.get("shape"):
        raise ValueError(
            "the provenance record describes another array (shape or digest); build it with "
            "make_provenance(kind, array, ...) from the array written."
        )
    atomic_save_npy(path, arr)
    atomic_write_bytes(sidecar_path(path), json.dumps(provenance, indent=1).encode())
    return Path(path)


def write_sidecar(path, provenance):
    """Write only the sidecar of an embeddings file already written atomically (``lbee embed --engine ray``)."""
    from .cache import atomic_write_bytes

    atomic_write_bytes(sidecar_path(path), json.dumps(provenance, indent=1).encode())


def read_provenance(path, name="embeddings"):
    """The sidecar record of the embeddings file ``path``, validated; None when there is no sidecar.

    Raises ``ValueError`` naming the sidecar when it is unreadable or not an lbee provenance record.
    """
    side = sidecar_path(path)
    if not side.is_file():
        return None
    try:
        record = json.loads(side.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"Cannot read the provenance of {name} {str(path)!r} ({side.name}): {exc}") from None
    problems = []
    if not isinstance(record, dict) or record.get("lbee_provenance") != FORMAT:
        found = record.get("lbee_provenance") if isinstance(record, dict) else record
        problems.append(f"'lbee_provenance' is {found!r}, expected {FORMAT}")
    else:
        if record.get("kind") not in KINDS:
            problems.append(f"'kind' is {record.get('kind')!r}, expected one of {list(KINDS)}")
        if not isinstance(record.get("encoder"), dict) or not all(
            k in record["encoder"] for k in ("encoder", "weights")
        ):
            problems.append("'encoder' is not an encoder identity (encoder, model, weights)")
        tau = record.get("tau")
        if tau is not None and (isinstance(tau, bool) or not isinstance(tau, (int, float)) or not -1 <= tau <= 1):
            problems.append(f"'tau' is {tau!r}, expected null or a number in [-1, 1]")
        shape = record.get("shape")
        if not (isinstance(shape, list) and len(shape) == 2 and all(isinstance(v, int) for v in shape)):
            problems.append(f"'shape' is {shape!r}, expected [rows, d]")
        if record.get("kind") == "sentence_embeddings" and not isinstance(record.get("sentences_sha256"), str):
            problems.append("'sentences_sha256' is missing (sentence embeddings record their sentence list)")
    if problems:
        raise ValueError(
            f"{side} is not a valid provenance record of {name} {str(path)!r}: "
            + "; ".join(problems)
            + ". Re-create the embeddings with `lbee embed`, or delete the sidecar to use them bare."
        )
    return record


def check_matches_array(record, array, path, name="embeddings"):
    """Refuse a sidecar that describes another array than ``array`` (the ``.npy`` was replaced after it)."""
    if record is None:
        return
    arr = np.asarray(array)
    if list(arr.shape) != record["shape"] or record.get("data_sha256") not in (None, array_digest(arr)):
        raise ValueError(
            f"{name} {str(path)!r} does not match its provenance {sidecar_path(path).name} (shape "
            f"{tuple(arr.shape)} vs recorded {tuple(record['shape'])}, or other values): the .npy was "
            "replaced after lbee wrote it. Re-create both with `lbee embed`, or delete the sidecar to "
            "use the array bare."
        )


def load_embeddings(path, name, *, kind=None):
    """An embeddings ``.npy`` and its provenance record (None for a bare array), checked against each other.

    Parameters
    ----------
    path : path-like
    name : str
        How messages name the file (``--image-embeddings``, ``image_embeddings``).
    kind : {'image_embeddings', 'sentence_embeddings'}, optional
        Refuse a sidecar of the other kind (image embeddings passed as sentences).

    Returns
    -------
    (ndarray, dict or None)
    """
    from .arrays import load_npy

    record = read_provenance(path, name)
    if record is not None and kind is not None and record["kind"] != kind:
        raise ValueError(
            f"{name} {str(path)!r} holds {record['kind'].replace('_', ' ')} (its provenance says so); "
            f"expected {kind.replace('_', ' ')}."
        )
    array = load_npy(path, name)
    check_matches_array(record, array, path, name)
    return array, record


def _space(identity):
    return {k: identity.get(k) for k in _SPACE_KEYS}


def _describe(record_or_identity):
    ident = (
        record_or_identity.get("encoder", record_or_identity)
        if "lbee_provenance" in record_or_identity
        else record_or_identity
    )
    spec = record_or_identity.get("encoder_spec") if "lbee_provenance" in record_or_identity else None
    text = spec or f"{ident.get('encoder')}:{ident.get('model')}"
    return f"{text} (weights {ident.get('weights')})"


def check_pair(
    image=None,
    sentence=None,
    *,
    sentences=None,
    encoder_identity=None,
    image_name="image embeddings",
    sentence_name="sentence embeddings",
):
    """Refuse embeddings that do not belong together; return the τ their provenance declares (or None).

    Parameters
    ----------
    image, sentence : dict or None
        The provenance records (None for a bare array or for embeddings
        computed now, whose encoder is ``encoder_identity``).
    sentences : list of str, optional
        The run's sentences: the sentence embeddings must embed this list.
    encoder_identity : dict, optional
        The encoder lbee uses now for the side that has no file.
    image_name, sentence_name : str
        How messages name the two inputs.

    Returns
    -------
    float or None
        τ of the records (None when no record declares one).
    """
    from .cache import sentence_list_key

    sides = [(image_name, image), (sentence_name, sentence)]
    if encoder_identity is not None:
        sides.append(("the encoder used now", {"lbee_provenance": FORMAT, "encoder": encoder_identity}))
    known = [(n, r) for n, r in sides if r is not None]
    for (n1, r1), (n2, r2) in zip(known, known[1:]):
        if _space(r1["encoder"]) != _space(r2["encoder"]):
            raise ValueError(
                f"{n1} come from {_describe(r1)} but {n2} from {_describe(r2)}; image and sentence "
                "embeddings must come from one encoder (one joint space), else the similarities mean "
                "nothing. Embed both with the same --encoder (`lbee embed`)."
            )
    if sentence is not None and sentences is not None:
        if sentence.get("sentences_sha256") != sentence_list_key([str(s) for s in sentences]):
            raise ValueError(
                f"{sentence_name} embed another sentence list ({sentence.get('n_sentences')} sentences"
                f"{', set ' + repr(sentence['sentence_set']) if sentence.get('sentence_set') else ''}) "
                f"than the run's {len(sentences)} sentences (rows must be these sentences, in this "
                "order); embed the sentence set you pass with `lbee embed --sentences SET`."
            )
    taus = [r.get("tau") for _, r in (sides[:2]) if r is not None and r.get("tau") is not None]
    return float(taus[0]) if taus else None


def warn_assumed_tau(tau: float, what: str) -> None:
    """Warn that ``tau`` (the CLIP value) is assumed for embeddings without provenance (``what`` names them)."""
    warnings.warn(
        f"{what} carry no provenance (no .provenance.json sidecar), so lbee cannot know their encoder: "
        f"τ = {tau:g} (CLIP's) is assumed. Pass τ explicitly (--tau / tau:) for another encoder, or "
        "create the embeddings with `lbee embed`, which records it.",
        ProvenanceWarning,
        stacklevel=3,
    )
