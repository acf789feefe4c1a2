"""The warning for one bare embeddings array beside one that has its provenance record (`lbee.io.provenance`)."""

from __future__ import annotations

import warnings

from .provenance import ProvenanceWarning, _describe


def warn_one_bare(image, sentence, image_name, sentence_name, *, rows_checked=False):
    """Warn when one of two embeddings files has its provenance record and the other is a bare array.

    A twenty-first user's bare sentence file passed unsaid beside images with their record: nothing checks that
    it comes from the same encoder, nor (without a sentences file beside it) that it embeds the run's sentences.
    ``rows_checked``: the bare sentence rows were checked against the ``sentences.txt`` beside them.
    """
    from .._validation import caller_stacklevel

    if (image is None) == (sentence is None):
        return
    bare, known_name, record = (
        (sentence_name, image_name, image) if sentence is None else (image_name, sentence_name, sentence)
    )
    what = "that they embed the run's sentences, in order, nor " if sentence is None and not rows_checked else ""
    warnings.warn(
        f"{bare} carry no provenance (no .provenance.json sidecar): lbee cannot check {what}that they come "
        f"from {_describe(record)}, as {known_name} do. Write them with their record (`lbee embed`, or "
        "lbee.io.provenance.write_embeddings).",
        ProvenanceWarning,
        stacklevel=caller_stacklevel(),
    )
