"""Provenance of embeddings files: the encoder and τ travel with the numbers.

The provenance rule: every embeddings ``.npy`` lbee writes (``lbee embed``,
[`write_embeddings`][lbee.io.provenance.write_embeddings]) has a sidecar ``<name>.provenance.json`` beside it
with the encoder's identity (spec, model, weights digest), its τ, the
normalisation, the shape, a digest of the rows and, for sentence embeddings,
the digest of the sentence list they embed. Every consumer reads it through
[`load_embeddings`][lbee.io.provenance.load_embeddings] and [`check_pair`][lbee.io.provenance.check_pair]:

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
import math
import warnings
from pathlib import Path

import numpy as np

from .._validation import KeyTwice, once_each
from .provenance_record import FORMAT, IDENTITY_KEYS, KINDS, is_identity, record_problems

SUFFIX = ".provenance.json"
NORMALISATION = "unit L2 rows, float32"
#: The identity keys that name an encoder's space (``preprocess`` is the image side's and may differ).
_SPACE_KEYS = ("encoder", "model", "weights")
#: Largest sidecar read (a record is under 2 kB; a bigger file is not one lbee wrote, and is never parsed).
MAX_SIDECAR_BYTES = 1 << 20


class ProvenanceWarning(UserWarning):
    """Embeddings without provenance: lbee assumes something and says what."""


def sidecar_path(path):
    """``embeddings.npy`` -> ``embeddings.provenance.json``."""
    path = Path(path)
    return path.with_name(path.stem + SUFFIX)


def array_digest(array):
    """Hex SHA-256 of the rows as contiguous float32 (what lbee stores and reads)."""
    if np.ndim(array) != 2:
        arr = np.ascontiguousarray(np.asarray(array, dtype=np.float32))
        h = hashlib.sha256(str(arr.shape).encode())
        h.update(memoryview(arr).cast("B"))
        return h.hexdigest()
    h = hashlib.sha256(str(tuple(np.shape(array))).encode())
    step = 65536  # rows at a time: a memory-mapped array is never copied whole (the same bytes, the same digest)
    for i0 in range(0, np.shape(array)[0], step):
        h.update(memoryview(np.ascontiguousarray(np.asarray(array[i0 : i0 + step], dtype=np.float32))).cast("B"))
    return h.hexdigest()


def encoder_tau(encoder):
    """The τ an encoder declares (``default_tau``), else None (the CLIP value then applies)."""
    tau = getattr(encoder, "default_tau", None)
    return None if tau is None else float(tau)


def make_provenance(
    kind,
    array,
    *,
    encoder=None,
    identity=None,
    spec=None,
    tau=None,
    sentences=None,
    sentence_set=None,
    images_folder=None,
    row_ids=None,
):
    """The provenance record of an embeddings array.

    Parameters
    ----------
    kind : str
        'image_embeddings' or 'sentence_embeddings'.
    array : ndarray of shape (n, d)
    encoder : lbee.encoders.Encoder, optional
        Gives ``identity`` and ``tau`` when they are not passed.
    identity : dict, optional
        The encoder's [`identity`][lbee.encoders.Encoder.identity].
    spec : str, optional
        The encoder spec as the user wrote it (``open_clip:ViT-B-32@laion2b_s34b_b79k``).
    tau : float, optional
    sentences : list of str, optional
        Sentence embeddings: the sentences, in row order (their digest is stored).
    sentence_set : str, optional
        The sentence set's name.
    images_folder : path-like, optional
        Image embeddings: the folder the images were found in (``ids.txt`` names them relative to it), recorded
        absolute so that a reader can tell these images from same-named ones elsewhere (`check_row_ids`).
    row_ids : list of str, optional
        Image embeddings: the ids ``ids.txt`` lists, in row order. Their digest (of the file's bytes, `ids_bytes`)
        binds that file to these rows: another run's ``ids.txt`` beside them is refused (`check_row_ids`).
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
    if not is_identity(identity):  # refused when written, not
        # only when read (a thirteenth user's record of 'backend' was refused by load_embeddings)
        got = sorted(identity) if isinstance(identity, dict) else type(identity).__name__
        raise ValueError(
            f"`identity` must be an encoder identity with text under {list(IDENTITY_KEYS)} (as Encoder.identity() "
            f"gives, with 'model' and the preprocessing); received {got}."
        )
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
    if kind == "image_embeddings" and images_folder is not None:
        from pathlib import Path

        record["images_folder"] = str(Path(images_folder).resolve())
    if kind == "image_embeddings" and row_ids is not None:
        from .row_ids import ids_digest

        record["ids_sha256"] = ids_digest(row_ids)
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
    from .confinement import sidecar

    side = sidecar(sidecar_path(path), of=f"{name} {str(path)!r}", what="provenance sidecar", beside=path)
    if side is None:
        return None
    fix = "Re-create the embeddings with `lbee embed`, or delete the sidecar to use them bare."
    try:
        size = side.stat().st_size
        if size > MAX_SIDECAR_BYTES:
            raise ValueError(
                f"{side} ({size:,} bytes) is not a provenance record of {name} {str(path)!r}: a record lbee "
                f"writes is under {MAX_SIDECAR_BYTES:,} bytes. {fix}"
            )
        from .confinement import read_text_file  # the file checked is the file read

        text = read_text_file(side, "provenance sidecar", limit=MAX_SIDECAR_BYTES, encoding="utf-8-sig")
        record = json.loads(text, object_pairs_hook=once_each)
    except KeyTwice as exc:  # json keeps the last of two values in silence: which one did the writer mean?
        raise ValueError(
            f"{side} is not a provenance record of {name} {str(path)!r}: the key {exc.args[0]!r} is written "
            f"twice; expected each key once. {fix}"
        ) from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"Cannot read the provenance of {name} {str(path)!r} ({side.name}): {exc}") from None
    except RecursionError:  # JSON nested thousands deep: Python's parser recurses once per level
        raise ValueError(
            f"Cannot read the provenance of {name} {str(path)!r} ({side}): its JSON is nested too deep to be a "
            f"provenance record (a flat object of a few keys). {fix}"
        ) from None
    problems = record_problems(record)
    if problems:
        raise ValueError(
            f"{side} is not a valid provenance record of {name} {str(path)!r}: " + "; ".join(problems) + f". {fix}"
        )
    return record


def check_matches_array(record, array, path, name="embeddings"):
    """Refuse a sidecar that describes another array than ``array`` (the ``.npy`` was replaced after it)."""
    if record is None:
        return
    arr = np.asarray(array)
    if list(arr.shape) != record["shape"]:
        differs = f"'shape' differs: the array is {tuple(arr.shape)}, the record says {tuple(record['shape'])}"
    elif record["data_sha256"] != (digest := array_digest(arr)):
        differs = (
            f"'data_sha256' differs: the rows digest to {digest[:12]}…, the record says {record['data_sha256'][:12]}…"
        )
    else:
        return
    raise ValueError(
        f"{name} {str(path)!r} does not match its provenance {sidecar_path(path).name} ({differs}): the .npy "
        "was replaced after lbee wrote it, or the record edited. Re-create both with `lbee embed`, or delete the "
        "sidecar to use the array bare."
    )


def load_embeddings(path, name, *, kind=None):
    """An embeddings ``.npy`` and its provenance record (None for a bare array), checked against each other.

    Parameters
    ----------
    path : path-like
    name : str
        How messages name the file (``--image-embeddings``, ``image_embeddings``).
    kind : str, optional
        'image_embeddings' or 'sentence_embeddings': refuse a sidecar of the other kind (image embeddings passed as
        sentences).

    Returns
    -------
    (ndarray, dict or None)
        Image embeddings (``kind='image_embeddings'``) come memory-mapped (``np.load(mmap_mode="r")``),
        checked in row blocks (`lbee.io.arrays.check_embeddings`): the analysis reads them in blocks.
    """
    from .arrays import load_npy
    from .rollforward import refuse_interrupted

    refuse_interrupted(path, name)  # a killed writer's half-swapped folder is never read (sweep 32ao R2)
    record = read_provenance(path, name)
    if record is not None and kind is not None and record["kind"] != kind:
        raise ValueError(
            f"{name} {str(path)!r} holds {record['kind'].replace('_', ' ')} (its provenance says so); "
            f"expected {kind.replace('_', ' ')}."
        )
    image = kind == "image_embeddings"  # image embeddings stay on disk, memory-mapped (never loaded whole)
    array = load_npy(path, name, mmap=image)
    if image:
        from .arrays import check_embeddings

        check_embeddings(array, path, name)
    check_matches_array(record, array, path, name)
    return array, record


# The row ids beside image embeddings live in lbee.io.row_ids (re-exported here, their first home).
from .row_ids import ROW_IDS_NAME, ROW_IDS_SUFFIX, check_row_ids, row_ids_path  # noqa: E402,F401


def _space(identity):
    return {k: identity.get(k) for k in _SPACE_KEYS}


def _describe(record):
    """How a message names the encoder of a record: its identity (what defines the space), then the spec written.

    The identity comes first: a sidecar whose identity was edited keeps its old
    ``encoder_spec``, and naming the spec alone would name both sides alike.
    """
    ident = record.get("encoder") or {}
    text = f"{ident.get('encoder')}:{ident.get('model')} (weights {ident.get('weights')}"
    spec = record.get("encoder_spec")
    return text + (f", spec {spec!r})" if spec else ")")


def _space_difference(a, b):
    """``model 'x' vs 'y'; weights ...``: the identity keys two encoders differ in."""
    return "; ".join(f"{k} {a.get(k)!r} vs {b.get(k)!r}" for k in _SPACE_KEYS if a.get(k) != b.get(k))


#: Two τ closer than this (relative) are one τ (a float written to JSON and read back is exact; this is slack).
TAU_RTOL = 1e-6


def check_pair(
    image=None,
    sentence=None,
    *,
    sentences=None,
    encoder_identity=None,
    encoder_tau=None,
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
    encoder_tau : float, optional
        The τ that encoder declares (compared with the records' τ).
    image_name : str, default='image embeddings'
        How messages name the image embeddings (best with their file).
    sentence_name : str, default='sentence embeddings'
        How messages name the sentence embeddings (best with their file).

    Returns
    -------
    float or None
        τ of the records (None when no record declares one).

    Raises
    ------
    ValueError
        Two encoders; sentence embeddings of another list; or two sides that
        declare different τ (one of the sidecars was edited or written by
        another version: lbee will not pick one).
    """
    from .cache import sentence_list_key

    sides = [(image_name, image), (sentence_name, sentence)]
    if encoder_identity is not None:
        now = {"lbee_provenance": FORMAT, "encoder": encoder_identity, "tau": encoder_tau}
        sides.append(("the encoder used now", now))
    known = [(n, r) for n, r in sides if r is not None]
    for (n1, r1), (n2, r2) in zip(known, known[1:]):
        if _space(r1["encoder"]) != _space(r2["encoder"]):
            raise ValueError(
                f"{n1} come from {_describe(r1)} but {n2} from {_describe(r2)} "
                f"({_space_difference(r1['encoder'], r2['encoder'])}); image and sentence embeddings must come "
                "from one encoder (one joint space), else the similarities mean nothing. Embed both with the "
                "same --encoder (`lbee embed`)."
            )
    if sentence is not None and sentences is not None:
        if sentence.get("sentences_sha256") != sentence_list_key([str(s) for s in sentences]):
            raise ValueError(
                f"{sentence_name} embed another sentence list ({sentence.get('n_sentences')} sentences"
                f"{', set ' + repr(sentence['sentence_set']) if sentence.get('sentence_set') else ''}) "
                f"than the run's {len(sentences)} sentences (rows must be these sentences, in this "
                "order); embed the sentence set you pass with `lbee embed --sentences SET`."
            )
    files = [(n, r) for n, r in known if n != "the encoder used now"]
    if len(files) == 2 and (files[0][1].get("tau") is None) != (files[1][1].get("tau") is None):
        (n1, r1), (n2, r2) = files  # one says the encoder has no τ (CLIP's applies), the other gives one (sweep 30)
        raise ValueError(
            f"{n1} declare τ = {r1.get('tau')} but {n2} τ = {r2.get('tau')} (null: none, CLIP's 0.25 applies); one "
            "encoder has one τ, so one of the provenance sidecars was edited or comes from elsewhere. Re-create the "
            "embeddings with `lbee embed`, or delete the wrong sidecar."
        )
    declared = [(n, float(r["tau"])) for n, r in known if r.get("tau") is not None]
    for (n1, t1), (n2, t2) in zip(declared, declared[1:]):
        if not math.isclose(t1, t2, rel_tol=TAU_RTOL):
            raise ValueError(
                f"{n1} declare τ = {t1:g} but {n2} τ = {t2:g}; one encoder has one τ, so one of the "
                "provenance sidecars was edited or comes from elsewhere. Re-create the embeddings with "
                "`lbee embed`, or delete the wrong sidecar."
            )
    taus = [t for n, t in declared if n != "the encoder used now"]
    return taus[0] if taus else None


def warn_assumed_tau(
    tau: float, what: str, how: str = "--tau, or tau: in a config", why: str = "no .provenance.json sidecar"
) -> None:
    """Warn that ``tau`` (the CLIP value) is assumed for embeddings without provenance (``what`` names them).

    ``how`` says how the reader passes τ (the library's callers: ``tau=``), ``why`` why there is none. The warning
    points at the first caller outside lbee, wherever inside lbee it was raised.
    """
    from .._validation import caller_stacklevel

    warnings.warn(
        f"{what} carry no provenance ({why}), so lbee cannot know their encoder: "
        f"τ = {tau:g} (CLIP's) is assumed. Pass τ explicitly ({how}) for another encoder, or "
        "create the embeddings with `lbee embed`, which records it.",
        ProvenanceWarning,
        stacklevel=caller_stacklevel(),
    )
