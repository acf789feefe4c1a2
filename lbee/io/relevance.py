"""Reading a relevance matrix Γ (images × sentences) from disk, aligned to a run."""

from __future__ import annotations

import contextvars
import logging
from pathlib import Path

import numpy as np

from ..grammar import FALSE, PRESENCE, TRUE

logger = logging.getLogger("lbee")
#: Set while `check_relevance_table` reads a table the run reads again: its warnings would be said twice.
_QUIET = contextvars.ContextVar("lbee_relevance_quiet", default=False)


class _QuietWhileChecking(logging.Filter):
    def filter(self, record):
        return not (_QUIET.get() and record.levelno < logging.ERROR)


logger.addFilter(_QuietWhileChecking())


def load_relevance(path, image_ids, sentences, *, conditions=None, n_base=None, image_paths=None):
    """Load Γ aligned to ``image_ids`` (rows) and ``sentences`` (columns).

    Accepted files:

    - ``.npy``: a (n_images, n_sentences) boolean / 0-1 array in the run's order,
      or (n_images, n_base): the set's sentences only (see below);
    - CSV / parquet, long form: columns ``image``, ``sentence`` (text or integer
      index) and ``relevant`` (0/1; a missing pair counts as 0, with a warning
      when the table also lists 0 rows, which suggests it was meant complete);
    - CSV / parquet, wide form: column ``image`` and one column per sentence text.

    Tables are validated ([`lbee.io.schemas`][lbee.io.schemas]): ``relevant`` holds 1/0,
    true/false or yes/no; no blank cell; two rows giving one (image, sentence)
    pair different values are an error. Rows whose image or sentence matches
    nothing in the run are logged as a warning on the ``lbee`` logger with
    counts, and raise ``ValueError`` when no row matches (sentences match
    exactly, so a lower-cased copy of the set is caught instead of giving an
    ACR of 0). Image ids match as [`lbee.io.matching.IdMatcher`][lbee.io.matching.IdMatcher] says:
    exactly, or by a file name or path suffix that fits one image of the run
    only; an id that fits several raises ``ValueError`` naming them.

    The sentences ``compose`` wrote (``sentences[n_base:]``, conjunctions of
    the set's conditions) may be absent from the file, whatever its format: a
    Γ over the set's sentences gives each of their columns composed from its
    literals' columns ([`compose_columns`][lbee.io.relevance.compose_columns]: the AND of the columns of the
    set's sentences that state one of its conditions alone), and a log line
    says so. A column the file has is read as it is.

    Parameters
    ----------
    path : path-like
    image_ids : list of str
    sentences : list of str
        The run's sentences: the set's first, then those ``compose`` wrote.
    conditions : list, optional
        Each sentence's conditions (dicts ``{(subject, attribute): value}`` or
        their text ``'square.color=blue; circle.presence=false'``), needed to
        compose the columns of sentences ``compose`` wrote.
    n_base : int, optional
        How many of ``sentences`` are the set's (default: all of them).
    image_paths : list of str, optional
        The images' files: an id that is the path (or ``file:`` URL) of another existing file matches no image,
        as for a predictions table (another folder's Γ scored a run by its file names).

    Returns
    -------
    ndarray of bool, shape (n_images, n_sentences)
    """
    rel = _read_relevance(path, image_ids, sentences, conditions=conditions, n_base=n_base, image_paths=image_paths)
    if rel.size and not rel.any():  # every metric would be 0 and TPR undefined, with no word of why
        logger.warning(
            "Relevance %r holds no relevant (image, sentence) pair: no sentence is true of any image, so every "
            "metric of the run is 0 and TPR is undefined. Expected a Γ with the pairs that hold marked 1.",
            str(path),
        )
    return rel


def check_relevance_table(path, image_ids, sentences, image_paths=None):
    """Read a Γ table (CSV, TSV, parquet) as the run will, before any embedding, and raise what it would raise.

    Every check but one: whether it covers every image, which depends on the images that can be read (a wide
    table need not list an unreadable one). Says nothing a run would say again (the run's own read warns).
    An ``.npy`` Γ (rows in the run's order): its columns, its values, and no more rows than images.
    """
    if Path(path).suffix.lower() == ".npy":  # rows in the run's order, of the images read: their count is the run's
        from .arrays import load_npy

        rel = load_npy(path, "relevance")
        if rel.ndim != 2 or rel.shape[1] != len(sentences) or rel.shape[0] > len(image_ids):
            raise ValueError(
                f"Relevance {str(path)!r} has shape {rel.shape}; expected ({len(image_ids)}, {len(sentences)}) "
                f"(images of the run × its sentences){_transposed(rel.shape, len(image_ids), len(sentences))}."
            )
        if rel.dtype == object or (rel.dtype != bool and not np.all((rel == 0) | (rel == 1))):
            raise ValueError(f"Relevance {str(path)!r} must hold booleans or 0/1.")
        return
    token = _QUIET.set(True)  # this context's log lines only: another thread's are never dropped
    try:
        _read_relevance(path, image_ids, sentences, every_image=False, image_paths=image_paths)
    finally:
        _QUIET.reset(token)


def _transposed(shape, n, m, n_base=None):
    """The hint for a Γ of shape (sentences, images): a twelfth user saved Γ.T."""
    return "; is it transposed? Save Γ as images × sentences" if tuple(shape) in ((m, n), (n_base, n)) else ""


def _read_relevance(path, image_ids, sentences, *, conditions=None, n_base=None, every_image=True, image_paths=None):
    """`load_relevance` without its check of the whole: the file read and aligned.

    ``every_image``: refuse a wide table that misses an image of the run. ``image_paths``: the images' files, so
    that an id naming another existing file matches no image (`lbee.io.matching.IdMatcher`).
    """
    path = Path(path)
    n, m = len(image_ids), len(sentences)
    n_base = m if n_base is None else int(n_base)
    if path.suffix.lower() == ".npy":
        from .arrays import load_npy

        rel = load_npy(path, "relevance")
        if rel.shape not in ((n, m), (n, n_base)):
            also = "" if n_base == m else f" or ({n}, {n_base}) (the set's sentences; compose's {m - n_base} composed)"
            raise ValueError(
                f"Relevance {str(path)!r} has shape {rel.shape}; expected ({n}, {m}) "
                f"(images of the run × its sentences){also}{_transposed(rel.shape, n, m, n_base)}."
            )
        if rel.dtype == object or (rel.dtype != bool and not np.all((rel == 0) | (rel == 1))):
            raise ValueError(f"Relevance {str(path)!r} must hold booleans or 0/1.")
        full = np.zeros((n, m), dtype=bool)
        full[:, : rel.shape[1]] = rel.astype(bool)
        return _compose_missing(full, range(rel.shape[1], m), sentences, conditions, n_base, f"relevance {str(path)!r}")
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
    matcher = IdMatcher(image_ids, image_paths, source=src)  # exact ids, else a unique end match (never a guess)
    col_of = {str(s): j for j, s in enumerate(sentences)}
    folded = {str(s).casefold(): s for s in sentences}
    rel = np.zeros((n, m), dtype=bool)
    if {"sentence", "relevant"} <= set(table.columns):
        images, sents, values = validate_relevance(table)
        _refuse_numbers_that_are_sentences(sents, col_of, src)
        bad_img, bad_sent, near = [], [], []
        covered, has_negatives = np.zeros((n, m), dtype=bool), False
        named = np.zeros(m, dtype=bool)
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
            named[j] = True
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
        composed = [j for j in range(n_base, m) if not named[j]]  # compose's sentences the table never names
        rel = _compose_missing(rel, composed, sentences, conditions, n_base, src)
        covered[:, composed] = True
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
    composed = [j for j in range(n_base, m) if sentences[j] not in table.columns]
    missing = [s for j, s in enumerate(sentences) if s not in table.columns and j < n_base]
    if missing:
        import difflib

        extra = [str(c) for c in table.columns if c not in set(sentences) and c != "image"]
        near = difflib.get_close_matches(str(missing[0]), extra, 1, 0.8)  # a twelfth user's dropped comma
        hint = f" (did you mean its column {near[0]!r}? the sentence must match it exactly)" if near else ""
        raise ValueError(
            f"Wide relevance table {str(path)!r} lacks {len(missing)} sentence column(s), "
            f"first: {missing[:2]}{hint}; or use long form (image, sentence, relevant)."
        )
    images = text_column(table, "image", name)
    check_unique(table, "image", name, what="image id")
    values = np.zeros((len(table), m), dtype=bool)
    for j in sorted(set(range(m)) - set(composed)):
        values[:, j] = bool_column(table, sentences[j], name)
    seen_rows, unmatched = set(), []
    for img, row in zip(images, values):
        i = matcher.index(img)
        if i is None:
            unmatched.append(img)
            continue
        seen_rows.add(i)
        rel[i] = row
    report_unmatched(len(unmatched), len(images), what="image of the run", source=src, examples=unmatched)
    if every_image and len(seen_rows) < n:
        absent = [image_ids[i] for i in range(n) if i not in seen_rows][:3]
        raise ValueError(
            f"Relevance {str(path)!r} covers {len(seen_rows)} of the run's {n} images; missing e.g. {absent}."
        )
    return _compose_missing(rel, composed, sentences, conditions, n_base, src)


def _as_conditions(value, where):
    """One sentence's conditions as a dict (given as a dict, or as the text of a ``.conditions.tsv`` cell)."""
    from ..grammar import parse_conditions

    return dict(value) if isinstance(value, dict) else parse_conditions(str(value), source=where)


def compose_columns(base, base_conditions, conditions, *, names=None, source="Γ"):
    """Γ columns of conjunctions from a Γ over the set's sentences: the AND of their literals' columns.

    A conjunction holds for an image when each of its conditions does (the
    product over its literals, `lbee.core.atoms`; for a 0/1 Γ the AND).
    The column of a condition is that of the set's sentence stating it alone
    (the first such sentence); what a condition presupposes (an attribute of
    X implies X present) is part of that sentence's truth already. An absence
    no sentence states alone is where its subject's presence does not hold.

    Parameters
    ----------
    base : ndarray of bool, shape (n, n_base)
        Γ over the set's sentences.
    base_conditions : list of length n_base
        The set's sentences' conditions (dicts, or their text).
    conditions : list
        The conjunctions (dicts, or their text).
    names : list of str, optional
        The conjunctions' sentences (for messages).
    source : str
        How messages name Γ.

    Returns
    -------
    ndarray of bool, shape (n, len(conditions))

    Raises
    ------
    ValueError
        A condition that no sentence of the set states alone (its column
        cannot be composed), naming the sentence and the condition.
    """
    base = np.asarray(base, dtype=bool)
    alone = {}
    for j, c in enumerate(base_conditions):
        if c is None:
            continue
        c = _as_conditions(c, f"{source}, sentence {j + 1}")
        if len(c) == 1:
            alone.setdefault(next(iter(c.items())), j)
    out = np.ones((base.shape[0], len(conditions)), dtype=bool)
    for k, c in enumerate(conditions):
        c = _as_conditions(c, f"{source}, composed sentence {k + 1}")
        for (subj, attr), value in c.items():
            j = alone.get(((subj, attr), value))
            present = alone.get(((subj, attr), TRUE)) if attr == PRESENCE and value == FALSE else None
            if j is None and present is not None:  # "no circle" holds exactly where "a circle" does not
                out[:, k] &= ~base[:, present]
                continue
            if j is None:
                said = repr(names[k]) if names is not None else f"composed sentence {k + 1}"
                raise ValueError(
                    f"{source} has no column for {said}, and it cannot be composed: no sentence of the set states "
                    f"its condition {subj}.{attr}={value} alone; expected a Γ with a column for every sentence of "
                    "the run (the set's and those compose wrote)."
                )
            out[:, k] &= base[:, j]
    return out


def _compose_missing(rel, columns, sentences, conditions, n_base, source):
    """``rel`` with ``columns`` (sentences compose wrote that the file lacks) composed from the set's columns."""
    columns = list(columns)
    if not columns:
        return rel
    if conditions is None or len(conditions) != len(sentences):
        raise ValueError(
            f"{source} has no column for {len(columns)} sentence(s) compose wrote (first: "
            f"{sentences[columns[0]]!r}), and without each sentence's conditions they cannot be composed; "
            "expected a Γ with a column for every sentence of the run."
        )
    rel = rel.copy()
    rel[:, columns] = compose_columns(
        rel[:, :n_base],
        conditions[:n_base],
        [conditions[j] for j in columns],
        names=[sentences[j] for j in columns],
        source=source,
    )
    logger.info(
        "%s has no column for the %d sentence(s) compose wrote; each is composed from its conditions' columns "
        "(an image is relevant when every condition's sentence is).",
        source,
        len(columns),
    )
    return rel


def _refuse_numbers_that_are_sentences(sents, col_of, src):
    """A number in the sentence column is an index; refused when the set also has sentences written as numbers.

    A table whose sentence column holds only digits is read by pandas as integers: with the sentences ``['1',
    'x']`` the rows of sentence "1" marked "x" (index 1). Which one the table means cannot be known.
    """
    numeric = [t for t in col_of if t.strip().lstrip("+-").replace(".", "", 1).isdigit()]
    if numeric and any(isinstance(v, int) for v in sents):
        raise ValueError(
            f"{src}: its sentence column holds numbers, which lbee reads as sentence indices, but the sentence set "
            f"also has sentences written as numbers ({numeric[0]!r}); which one a row means cannot be known. Use "
            "the .npy form of Γ, or a wide table (one column per sentence)."
        )
