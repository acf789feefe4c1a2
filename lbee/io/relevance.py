"""Reading a relevance matrix Γ (images × sentences) from disk, aligned to a run."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np

logger = logging.getLogger("lbee")


def load_relevance(path, image_ids, sentences):
    """Load Γ aligned to ``image_ids`` (rows) and ``sentences`` (columns).

    Accepted files:

    - ``.npy``: a (n_images, n_sentences) boolean / 0-1 array in the run's order;
    - CSV / parquet, long form: columns ``image``, ``sentence`` (text or integer
      index) and ``relevant`` (0/1; a missing pair counts as 0, with a warning
      when the table also lists 0 rows, which suggests it was meant complete);
    - CSV / parquet, wide form: column ``image`` and one column per sentence text.

    Tables are validated (:mod:`lbee.io.schemas`): ``relevant`` holds 1/0,
    true/false or yes/no; no blank cell; two rows giving one (image, sentence)
    pair different values are an error. Rows whose image or sentence matches
    nothing in the run are logged as a warning on the ``lbee`` logger with
    counts, and raise ``ValueError`` when no row matches (sentences match
    exactly, so a lower-cased copy of the set is caught instead of giving an
    ACR of 0). Image ids match as :class:`lbee.io.matching.IdMatcher` says:
    exactly, or by a file name or path suffix that fits one image of the run
    only; an id that fits several raises ``ValueError`` naming them.

    Returns
    -------
    ndarray of bool, shape (n_images, n_sentences)
    """
    path = Path(path)
    n, m = len(image_ids), len(sentences)
    if path.suffix.lower() == ".npy":
        try:
            rel = np.load(path)
        except (OSError, ValueError) as exc:
            raise ValueError(f"Cannot read relevance {str(path)!r}: {exc}") from None
        if rel.shape != (n, m):
            raise ValueError(
                f"Relevance {str(path)!r} has shape {rel.shape}; expected ({n}, {m}) "
                "(images of the run × sentences of its set)."
            )
        if rel.dtype == object or (rel.dtype != bool and not np.all((rel == 0) | (rel == 1))):
            raise ValueError(f"Relevance {str(path)!r} must hold booleans or 0/1.")
        return rel.astype(bool)
    from .matching import IdMatcher, report_unmatched
    from .schemas import validate_relevance
    from .table_reader import bool_column, check_unique, read_table, require_columns, table_source, text_column

    table = read_table(path)
    name = "relevance table"
    src = table_source(table, name)
    require_columns(
        table,
        ["image"],
        name,
        hint="Long form: image, sentence, relevant; wide form: image and one column per sentence.",
    )
    matcher = IdMatcher(image_ids, source=src)  # exact ids, else a unique file-name match (never a guess)
    col_of = {str(s): j for j, s in enumerate(sentences)}
    folded = {str(s).casefold(): s for s in sentences}
    rel = np.zeros((n, m), dtype=bool)
    if {"sentence", "relevant"} <= set(table.columns):
        images, sents, values = validate_relevance(table)
        bad_img, bad_sent, near = [], [], []
        covered, has_negatives = np.zeros((n, m), dtype=bool), False
        for img, sent, val in zip(images, sents, values):
            i = matcher.index(img)
            j = (sent if 0 <= sent < m else None) if isinstance(sent, int) else col_of.get(sent)
            if i is None:
                bad_img.append(img)
            if j is None:
                bad_sent.append(sent)
                if isinstance(sent, str) and sent.casefold() in folded:
                    near.append((sent, folded[sent.casefold()]))
            if i is None or j is None:
                continue
            rel[i, j] = bool(val)
            covered[i, j] = True
            has_negatives |= not val
        hint = ""
        if near:
            hint = (
                f"Sentences match exactly (case and spacing included): {near[0][0]!r} differs from the set's "
                f"{near[0][1]!r}."
            )
        report_unmatched(
            len(bad_sent), len(sents), what="sentence of the set", source=src, examples=bad_sent, hint=hint
        )
        report_unmatched(len(bad_img), len(images), what="image of the run", source=src, examples=bad_img)
        if has_negatives and not covered.all():
            # A table that lists negatives looks meant to be complete: say what the gaps become.
            i, j = np.argwhere(~covered)[0]
            logger.warning(
                "%s lists relevant = 0 rows but covers %d of the %d (image, sentence) pairs; the %d "
                "absent pairs count as not relevant (first: %r, %r).",
                src,
                int(covered.sum()),
                n * m,
                int((~covered).sum()),
                str(image_ids[i]),
                str(sentences[j]),
            )
        return rel  # long form: an absent (image, sentence) pair is 0
    missing = [s for s in sentences if s not in table.columns]
    if missing:
        raise ValueError(
            f"Wide relevance table {str(path)!r} lacks {len(missing)} sentence column(s), "
            f"first: {missing[:2]}; or use long form (image, sentence, relevant)."
        )
    images = text_column(table, "image", name)
    check_unique(table, "image", name, what="image id")
    values = np.column_stack([bool_column(table, s, name) for s in sentences]) if m else np.zeros((len(table), 0), bool)
    seen_rows, unmatched = set(), []
    for img, row in zip(images, values):
        i = matcher.index(img)
        if i is None:
            unmatched.append(img)
            continue
        seen_rows.add(i)
        rel[i] = row
    report_unmatched(len(unmatched), len(images), what="image of the run", source=src, examples=unmatched)
    if len(seen_rows) < n:
        absent = [image_ids[i] for i in range(n) if i not in seen_rows][:3]
        raise ValueError(
            f"Relevance {str(path)!r} covers {len(seen_rows)} of the run's {n} images; missing e.g. {absent}."
        )
    return rel
