"""The predictions table: a model's outputs per image (φ from probabilities or a confidence, ω, labels).

[`validate_predictions`][lbee.io.predictions.validate_predictions] is the one reader of a user's predictions table
(``lbee describe --predictions``, a report entry's ``predictions``, the
service): probabilities or logits in ``prob_<class>`` columns, or a
``confidence`` column; optional ``label``, ``pred`` and ``performance``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

# label_lookalike and refuse_unlabelled_lookalike lived here: kept importable from here
from .label_lookalike import column_words, label_like, label_lookalike, refuse_unlabelled_lookalike  # noqa: F401
from .probabilities import check_probabilities, without_misnamed
from .table_reader import (
    ID_COLUMNS,
    _is_missing,
    cell_text,
    check_not_empty,
    check_unique,
    class_column,
    float_column,
    logger,
    row_labels,
    table_source,
    text_column,
)


def id_column_of(table, id_column=None, default="predictions table"):
    """The image-id column: ``id_column`` or the first of ``path``, ``image``, ``image_id``, ``id``."""
    cols = list(table.columns)
    if id_column is None:
        id_column = next((c for c in ID_COLUMNS if c in cols), None)
        if id_column is None:
            from .._validation import shown

            hint = ""
            if len(cols) == 1 and any(sep in str(cols[0]) for sep in (",", "\t", ";")):  # one column holding them all
                hint = (
                    " The header is one cell holding separators: is the file's separator not its suffix's (a comma "
                    "in a .tsv, or the reverse)?"
                )
            else:
                likely = [c for c in cols if any(w in str(c).lower() for w in ("file", "name", "img", "image", "path"))]
                if likely:
                    hint = f" Rename {shown(str(likely[0]))} to 'image' if it holds the images' ids."
            raise ValueError(
                f"{table_source(table, default)} needs an image id column ('path', 'image', "
                f"'image_id' or 'id'); found columns {shown(cols)}.{hint}"
            )
    elif id_column not in cols:
        raise ValueError(f"{table_source(table, default)} lacks the id column {id_column!r}; found columns {cols}.")
    return id_column


def check_id_columns_agree(table, idc, default="predictions table"):
    """Refuse a table whose id columns (two of ``path``, ``image``, ``image_id``, ``id``) name different images.

    The id is read from ``idc`` (the first present); another id column beside
    it must name the same image in every row (equal, or one a path ending with
    the other at a folder boundary), or lbee would match rows by one of two
    disagreeing ids without a word. Blank cells of the other column are not
    compared.
    """
    from .matching import same_image_id

    ids = table[idc].tolist()
    for other in (c for c in ID_COLUMNS if c != idc and c in table.columns):
        for r, (a, b) in enumerate(zip(ids, table[other].tolist())):
            if _is_missing(b) or _is_missing(a):
                continue
            if not same_image_id(cell_text(a), cell_text(b)):
                (row,) = row_labels(table, [r])
                raise ValueError(
                    f"{table_source(table, default)}: at {row}, column {idc!r} is {cell_text(a)!r} but column "
                    f"{other!r} is {cell_text(b)!r}; expected the id columns to name the same image (lbee reads the "
                    f"id from {idc!r}, the first of {list(ID_COLUMNS)}): keep one id column, or make them agree."
                )


@dataclass
class Predictions:
    """A validated predictions table.

    Attributes
    ----------
    ids : list of str
    probs : ndarray of shape (n, C) or None
        Probabilities (softmax applied when the table held logits).
    class_names : list of str or None
    confidence, performance : ndarray of shape (n,) or None
    labels, preds : ndarray of int64, shape (n,), or None
    columns_used : dict of str to str
        What was read for the image id, φ and ω (``{'id': ..., 'phi': ..., 'omega': ...}``).
    """

    ids: list
    probs: np.ndarray | None = None
    class_names: list | None = None
    confidence: np.ndarray | None = None
    performance: np.ndarray | None = None
    labels: np.ndarray | None = None
    preds: np.ndarray | None = None
    columns_used: dict = field(default_factory=dict)


def validate_predictions(table, *, id_column=None, probabilities="probabilities", tolerance=None):
    """Validate a predictions table and return its typed columns as [`Predictions`][lbee.io.predictions.Predictions].

    Parameters
    ----------
    table : pandas.DataFrame
    id_column : str, optional
    probabilities : {'probabilities', 'logits'}, default='probabilities'
        What the ``prob_<class>`` columns hold; logits get a row-wise softmax.
    tolerance : float, optional
        Allowed |row sum − 1| of probabilities (see `check_probabilities`).
    """
    name = "predictions table"
    if probabilities not in ("probabilities", "logits"):
        raise ValueError(f"`probabilities` must be 'probabilities' or 'logits'; received {probabilities!r}.")
    check_not_empty(table, name)
    idc = id_column_of(table, id_column, name)
    ids = text_column(table, idc, name)
    check_unique(table, idc, name, what="image id")
    if id_column is None:  # an id column chosen by lbee: the others present must agree with it
        check_id_columns_agree(table, idc, name)
    cols = list(table.columns)
    prob_cols = [c for c in cols if str(c).startswith("prob_")]
    out = Predictions(ids)
    if prob_cols:
        names = [str(c)[len("prob_") :] for c in prob_cols]
        if not all(n.strip() for n in names):  # a class named '' would be listed, scored and shown as nothing
            raise ValueError(
                f"{table_source(table, name)} has a column 'prob_' with no class name; "
                "expected 'prob_<class>' such as 'prob_cat'."
            )
        if len(set(names)) != len(names):
            raise ValueError(f"{table_source(table, name)} repeats a prob_<class> column; found {prob_cols}.")
        check_class_names(names, table_source(table, name))
        out.class_names = names
        if probabilities == "logits":
            from scipy.special import softmax

            out.probs = softmax(np.column_stack([float_column(table, c, name) for c in prob_cols]), axis=1)
        else:
            try:
                out.probs = check_probabilities(table, prob_cols, name, tolerance=tolerance)
            except ValueError as exc:  # a class column misnamed ('probcircle'): that, not logits, is the cause
                misnamed = _probability_lookalikes(cols, prob_cols, suffixes=True)
                if not misnamed:
                    raise
                more = f" and {len(misnamed) - 3:,} more" if len(misnamed) > 3 else ""  # 50,000: a 1.45 MB error
                raise ValueError(
                    f"{table_source(table, name)}: column(s) {', '.join(map(repr, misnamed[:3]))}{more} are not "
                    f"read as class probabilities (did you mean {', '.join(_as_prob(c) for c in misnamed[:3])}? "
                    f"rename them); without them, {without_misnamed(exc)}"
                ) from None
        if "confidence" in cols:
            logger.warning(
                "%s has both 'confidence' and %s; φ comes from the probabilities and the "
                "'confidence' column is ignored.",
                table_source(table, name),
                prob_cols,
            )
    elif "confidence" in cols:
        out.confidence = float_column(table, "confidence", name)
    else:
        near = [c for c in cols if isinstance(c, str) and c.lower().startswith(PROBABILITY_LOOKALIKES)]
        hint = f" (did you mean prob_{near[0].split('_', 1)[1]} for {near[0]!r}? rename the columns)" if near else ""
        raise ValueError(
            f"{table_source(table, name)} needs a 'confidence' column or class probability columns "
            f"'prob_<class>'{hint}; found columns {cols}."
        )
    # classes named by digits that are not their positions (prob_1, prob_0): a cell '1' is the class named '1'
    moved = [c for k, c in enumerate(out.class_names or ()) if c.isascii() and c.isdigit() and c != str(k)]
    for col in ("label", "pred"):
        if col in cols:
            setattr(out, col + "s", class_column(table, col, out.class_names, name))
            if moved:  # names win (documented), but a reader who meant indices would be silently wrong: say so
                logger.warning(
                    "%s: classes are named by digits that differ from their column positions (%s); a %r cell "
                    "such as %r is read as the class named %r (prob_%s), not as the index %s. Name the classes "
                    "with words, or order the prob_<class> columns so that prob_<k> is column k.",
                    table_source(table, name),
                    ", ".join(f"prob_{c} is column {out.class_names.index(c)}" for c in moved[:5]),
                    col,
                    moved[0],
                    moved[0],
                    moved[0],
                    moved[0],
                )
    if out.probs is not None and out.preds is not None:
        differ = np.flatnonzero(out.preds != out.probs.argmax(1))
        if differ.size:  # a thresholded model may mean it; say so rather than pick silently
            logger.warning(
                "%s: 'pred' differs from the most probable class in %d of %d rows (first: row %d, "
                "id %r); lbee takes 'pred' as the model's prediction.",
                table_source(table, name),
                differ.size,
                len(ids),
                int(differ[0]) + 1,
                ids[int(differ[0])],
            )
    if "performance" in cols:
        out.performance = float_column(table, "performance", name)
        _warn_performance_against_labels(out, table, name, ids)
    out.columns_used = _columns_used(idc, prob_cols, out)
    _warn_unread_columns(table, name, cols, idc, prob_cols, out.columns_used)
    return out


def _warn_performance_against_labels(out, table, name, ids):
    """A 0/1 ``performance`` that says right where label and prediction differ (or the reverse) is named."""
    if out.labels is None or (out.preds is None and out.probs is None):
        return
    perf = np.asarray(out.performance, dtype=float)
    if not np.isin(perf, (0.0, 1.0)).all():
        return  # a score (IoU, accuracy) is not correctness
    pred = out.preds if out.preds is not None else out.probs.argmax(1)
    differ = np.flatnonzero(perf != (pred == out.labels))
    if differ.size:
        logger.warning(
            "%s: 'performance' (1 = right) disagrees with 'label' and the prediction in %d of %d rows (first: row %d, "
            "id %r); lbee takes 'performance' as the model's correctness, as documented.",
            table_source(table, name),
            differ.size,
            len(ids),
            int(differ[0]) + 1,
            ids[int(differ[0])],
        )


#: Column names that probably mean one lbee reads under another name (checked case-insensitively).
#: Column prefixes that look like ``prob_`` (``p_circle``, ``proba_cat``): the error suggests the rename.
PROBABILITY_LOOKALIKES = ("p_", "proba_", "probs_", "probability_", "prob-", "softmax_")
#: ... and as a suffix: 'crack_prob' (trial 33: a renamed class column was read as rows summing to 0.92)
PROBABILITY_SUFFIXES = ("_prob", "-prob", " prob", "_proba", "_probs", "_probability", "_softmax")
LIKELY_NAMES = {
    "label": (
        "true_label",
        "target",
        "targets",
        "gt",
        "ground_truth",
        "y",
        "y_true",
        "true",
        "truth",
        "class",
        "label_id",
        "true_class",
        "labels",
        "class_id",
        "gt_label",
    ),
    "pred": (
        "predicted",
        "prediction",
        "predictions",
        "pred_label",
        "y_pred",
        "predicted_label",
        "preds",
        "predicted_class",
        "pred_class",
        "pred_id",
    ),
    "confidence": ("score", "conf", "prob", "probability", "max_prob", "certainty", "confidence_score"),
    "performance": ("correct", "is_correct", "accuracy", "omega", "perf"),
}


def _probability_lookalikes(cols, prob_cols, *, suffixes=False):
    """Columns not read that look like a ``prob_<class>`` one: 'probcircle', 'Prob_cat', 'p_dog'.

    With ``suffixes``, also 'crack_prob': asked only when the probabilities do not add up, since a table may well
    carry a 'max_prob' column of its own.
    """
    read = set(prob_cols)  # a set: 50,000 columns against 50,000 took 200 s as a list (sweep 23)
    return [
        c
        for c in cols
        if isinstance(c, str)
        and c not in read
        and (c.lower().startswith(("prob", *PROBABILITY_LOOKALIKES)) or (suffixes and _suffix_stem(c)))
        and c.lower() not in ("prob", "probability", "probs")
    ]


def _suffix_stem(c):
    """The class of a ``<class>_prob`` column ('crack' of 'crack_prob'), or ''."""
    low = c.lower()
    suffix = next((x for x in sorted(PROBABILITY_SUFFIXES, key=len, reverse=True) if low.endswith(x)), None)
    return "" if suffix is None else c[: -len(suffix)].strip(" _-.")


def _as_prob(c):
    """The ``prob_<class>`` name a lookalike column probably means."""
    low = c.lower()
    for prefix in sorted(("prob", *PROBABILITY_LOOKALIKES), key=len, reverse=True):
        if low.startswith(prefix):
            return repr("prob_" + c[len(prefix) :].lstrip("_- ."))  # "prob ok", "prob-ok", "prob.ok"
    stem = _suffix_stem(c)
    return repr("prob_" + stem) if stem else repr(c)


def _columns_used(idc, prob_cols, out):
    """What each column was read as: {role: description} (the same words the warnings use)."""
    used = {"id": repr(idc)}
    used["phi"] = f"{len(prob_cols)} prob_<class> columns" if prob_cols else "'confidence'"
    if out.performance is not None:
        used["omega"] = "'performance'"
    elif out.labels is not None and (out.preds is not None or out.probs is not None):
        used["omega"] = "correctness: 'label' against " + (
            "'pred'" if out.preds is not None else "the most probable class"
        )
    else:
        used["omega"] = "−entropy of the probabilities (no 'label')" if prob_cols else "φ itself (no 'label')"
    return used


def _unread_lookalikes(cols, idc, prob_cols):
    """``(column, what it looks like)`` for each column lbee does not read that looks like one it does, in order.

    What it looks like is a quoted name (``"'label'"``) or a ``prob_<class>`` spelling.
    """
    import difflib

    read = {idc, "confidence", "label", "pred", "performance", *prob_cols}
    have = set(cols)
    missing = [t for t in LIKELY_NAMES if t not in have]
    lookalikes = set(_probability_lookalikes(cols, prob_cols)) if prob_cols else set()
    for c in cols:
        if c in read or not isinstance(c, str):
            continue
        low = column_words(c)  # 'ground truth', 'true-class', 'TrueLabel': the listed names
        target = next((t for t in missing if low in LIKELY_NAMES[t] or low == t), None)  # 'Label' too
        if target is None and "label" in missing and label_like(low):
            target = "label"  # 'label_name', 'gt_class', 'target_label' (sweep 32as B2)
        if target is None:  # a misspelling ('lable' made an eleventh user's run split by entropy, unsaid)
            near = difflib.get_close_matches(low, missing, 1, 0.75)
            target = repr(near[0]) if near else (_as_prob(c) if c in lookalikes else None)
        else:
            target = repr(target)
        if target is not None:
            yield c, target


def _warn_unread_columns(table, name, cols, idc, prob_cols, used):
    """Warn about columns lbee does not read but that look like ones it does (``true_label`` for ``label``).

    Linear in the columns (sets, and the targets missing worked out once): 50,000 columns took 200 s (sweep 23).
    """
    hints, n_hints = [], 0
    for c, target in _unread_lookalikes(cols, idc, prob_cols):
        n_hints += 1
        if len(hints) < 5:
            hints.append(f"{c!r} (did you mean {target}? rename the column to use it)")
    if hints:
        logger.warning(
            "%s: column(s) %s are not read. lbee read: image id from %s, φ from %s, ω = %s.",
            table_source(table, name),
            ", ".join(hints) + (f" and {n_hints - len(hints):,} more" if n_hints > len(hints) else ""),
            used["id"],
            used["phi"],
            used["omega"],
        )


def check_class_names(names, source):
    """Raise unless every class name is visible text on one line and no two are said alike (NFKC, case-folded).

    The rule of ``--classes`` files, for the names a ``prob_<class>`` header gives: a name is printed on the
    terminal and written into tables, and "cat" with a zero-width space would be a second class that looks like
    the first.
    """
    from ..grammar import INVISIBLE, line_break_in, said_alike

    seen = {}
    for c in names:
        bad = line_break_in(c)
        if bad is not None:
            raise ValueError(
                f"{source}: column {'prob_' + c!r} names a class holding the character U+{ord(bad):04X} "
                f"({INVISIBLE}); expected class names of visible text."
            )
        if said_alike(c) in seen:
            first = "prob_" + seen[said_alike(c)]
            raise ValueError(
                f"{source}: columns {ascii(first)} and {ascii('prob_' + c)} name one class "
                "(compared NFKC-normalised and case-folded); expected distinct class names."
            )
        seen[said_alike(c)] = c
