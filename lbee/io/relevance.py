"""Reading a relevance matrix Γ (images × sentences) from disk, aligned to a run."""

from __future__ import annotations

from pathlib import Path

import numpy as np


def load_relevance(path, image_ids, sentences):
    """Load Γ aligned to ``image_ids`` (rows) and ``sentences`` (columns).

    Accepted files:

    - ``.npy``: a (n_images, n_sentences) boolean / 0-1 array in the run's order;
    - CSV / parquet, long form: columns ``image``, ``sentence`` (text or integer
      index) and ``relevant`` (0/1; a missing pair counts as 0);
    - CSV / parquet, wide form: column ``image`` and one column per sentence text.

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
            raise ValueError(f"Relevance {str(path)!r} has shape {rel.shape}; expected ({n}, {m}) "
                             "(images of the run × sentences of its set).")
        if rel.dtype != bool and not np.all((rel == 0) | (rel == 1)):
            raise ValueError(f"Relevance {str(path)!r} must hold booleans or 0/1.")
        return rel.astype(bool)
    from .images import read_table

    table = read_table(path)
    if "image" not in table.columns:
        raise ValueError(f"Relevance table {str(path)!r} needs an 'image' column; found {list(table.columns)}.")
    row_of = {iid: i for i, iid in enumerate(image_ids)}
    row_of.update({Path(iid).name: i for i, iid in enumerate(image_ids)})
    col_of = {s: j for j, s in enumerate(sentences)}
    rel = np.zeros((n, m), dtype=bool)
    seen_rows = set()
    if {"sentence", "relevant"} <= set(table.columns):
        for img, sent, val in zip(table["image"].astype(str), table["sentence"], table["relevant"]):
            i = row_of.get(img, row_of.get(Path(img).name))
            j = col_of.get(sent) if isinstance(sent, str) else int(sent)
            if i is None or j is None or not 0 <= j < m:
                continue
            rel[i, j] = bool(val)
        return rel  # long form: an absent (image, sentence) pair is 0
    else:
        missing = [s for s in sentences if s not in table.columns]
        if missing:
            raise ValueError(f"Wide relevance table {str(path)!r} lacks {len(missing)} sentence column(s), "
                             f"first: {missing[:2]}; or use long form (image, sentence, relevant).")
        for img, values in zip(table["image"].astype(str), table[list(sentences)].to_numpy()):
            i = row_of.get(img, row_of.get(Path(img).name))
            if i is not None:
                seen_rows.add(i)
                rel[i] = values.astype(bool)
    if len(seen_rows) < n:
        absent = [image_ids[i] for i in range(n) if i not in seen_rows][:3]
        raise ValueError(f"Relevance {str(path)!r} covers {len(seen_rows)} of the run's {n} images; "
                         f"missing e.g. {absent}.")
    return rel
