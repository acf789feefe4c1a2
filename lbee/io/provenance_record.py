"""A provenance record's rule: what makes a dict a record lbee writes beside embeddings (`lbee.io.provenance`)."""

from __future__ import annotations

FORMAT = 1
KINDS = ("image_embeddings", "sentence_embeddings")
#: The keys an encoder identity must hold, in a record written and read alike.
IDENTITY_KEYS = ("encoder", "weights")


def is_identity(identity):
    """Whether ``identity`` is an encoder identity a record holds: a dict whose `IDENTITY_KEYS` are text.

    Its words reach every report (sweep 32au N3: weights given as a list, an encoder as a number, were carried).
    """
    return isinstance(identity, dict) and all(isinstance(identity.get(k), str) for k in IDENTITY_KEYS)


def record_problems(record):
    """What makes ``record`` no provenance record lbee writes, each in words ([] for a valid one).

    The one rule for a sidecar read from disk (`read_provenance`) and a record handed to `lbee.audit`.
    """
    problems = []
    if not isinstance(record, dict) or record.get("lbee_provenance") != FORMAT:
        found = record.get("lbee_provenance") if isinstance(record, dict) else record
        problems.append(f"'lbee_provenance' is {found!r}, expected {FORMAT}")
    else:
        if record.get("kind") not in KINDS:
            problems.append(f"'kind' is {record.get('kind')!r}, expected one of {list(KINDS)}")
        if not is_identity(record.get("encoder")):
            problems.append("'encoder' is not an encoder identity (encoder, model, weights: text)")
        tau = record.get("tau")
        if tau is not None and (isinstance(tau, bool) or not isinstance(tau, (int, float)) or not -1 <= tau <= 1):
            problems.append(f"'tau' is {tau!r}, expected null or a number in [-1, 1]")
        shape = record.get("shape")
        if not (isinstance(shape, list) and len(shape) == 2 and all(type(v) is int and v >= 0 for v in shape)):
            problems.append(f"'shape' is {shape!r}, expected [rows, d]")
        folder = record.get("images_folder")
        if folder is not None and not (isinstance(folder, str) and folder.startswith("/") and "\x00" not in folder):
            problems.append(f"'images_folder' is {str(folder)[:80]!r}, expected the absolute path of a folder")
        digest = record.get("data_sha256")
        if not _hex64(digest):  # without it, a replaced .npy would pass unseen
            problems.append(f"'data_sha256' is {digest!r}, expected the 64-hex-digit digest of the rows")
        ids = record.get("ids_sha256", "0" * 64)  # absent in a record of lbee before 0.x: not checked then
        if not _hex64(ids):
            problems.append(f"'ids_sha256' is {str(ids)[:80]!r}, expected the 64-hex-digit digest of ids.txt")
        if record.get("kind") == "sentence_embeddings" and not isinstance(record.get("sentences_sha256"), str):
            problems.append("'sentences_sha256' is missing (sentence embeddings record their sentence list)")
    return problems


def _hex64(text):
    """Whether ``text`` is a SHA-256 hex digest (64 hex digits): "z" * 64 is none (sweep 32au N3)."""
    return isinstance(text, str) and len(text) == 64 and all(c in "0123456789abcdef" for c in text.lower())
