"""The declared schema of every kind of user table, and the validators that apply them.

One validator per kind (predictions, manifest, Γ, VQA metadata, ω) reads its
table through the typed column checks of [`lbee.io.table_reader`][lbee.io.table_reader]: column
names, dtypes, allowed values, no missing cells and unique ids. Every failure
raises ``ValueError`` naming the file, the row(s), the column, what was
received and what is expected.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field

import numpy as np

from .matching import match_table_rows, report_unmatched
from .predictions import validate_predictions
from .table_reader import (
    bool_column,
    cells_written,
    check_no_missing,
    check_not_empty,
    check_unique,
    class_column,
    float_column,
    padded_digits,
    parse_number,
    require_columns,
    row_labels,
    table_source,
    text_column,
)


@dataclass(frozen=True)
class TableSchema:
    """Declared shape of one kind of user table.

    Attributes
    ----------
    name : str
        How messages call the table.
    required : tuple of str
        Columns that must exist (``ID`` means one of `ID_COLUMNS`).
    optional : tuple of str
        Columns read when present.
    dtypes : dict of str to str
        ``'text'``, ``'bool'``, ``'float'``, ``'probability'``, ``'class'``.
    unique : tuple of str
        Columns whose values must not repeat.
    """

    name: str
    required: tuple
    optional: tuple = ()
    dtypes: dict = field(default_factory=dict)
    unique: tuple = ()


SCHEMAS = {
    "predictions": TableSchema(
        "predictions table",
        ("ID",),
        ("confidence", "prob_<class>", "label", "pred", "performance"),
        {
            "ID": "text",
            "confidence": "float",
            "prob_<class>": "probability",
            "label": "class",
            "pred": "class",
            "performance": "float",
        },
        ("ID",),
    ),
    "manifest": TableSchema("manifest", ("path",), ("label",), {"path": "text", "label": "class"}, ("path",)),
    "relevance": TableSchema(
        "relevance table",
        ("image", "sentence", "relevant"),
        (),
        {"image": "text", "sentence": "text or index", "relevant": "bool"},
    ),
    "metadata": TableSchema(
        "metadata table",
        ("image", "sentence", "relevant"),
        (),
        {"image": "text", "sentence": "text", "relevant": "bool"},
    ),
    "performance": TableSchema(
        "performance table", ("performance",), ("image",), {"image": "text", "performance": "float"}, ("image",)
    ),
}


def validate_table(table, kind, **kwargs):
    """Validate ``table`` against the schema ``kind`` (see `SCHEMAS`); returns what the validator returns."""
    validators = {
        "predictions": validate_predictions,
        "manifest": validate_manifest,
        "relevance": validate_relevance,
        "metadata": validate_metadata,
        "performance": validate_performance,
    }
    if kind not in validators:
        raise ValueError(f"`kind` must be one of {sorted(validators)}; received {kind!r}.")
    return validators[kind](table, **kwargs)


def validate_manifest(table):
    """Validate an image manifest; returns (paths as in the table, labels or None).

    ``path`` must be filled and unique; ``label`` (optional) must be filled and
    hold non-negative integer class indices, or class names (returned as an
    object array of str), which the predictions' ``prob_<class>`` columns turn
    into indices (`lbee.run.scores.model_scores`).
    """
    name = "manifest"
    check_not_empty(table, name)
    require_columns(table, ["path"], name)
    paths = text_column(table, "path", name)
    check_unique(table, "path", name, what="path")
    labels = None
    if "label" in table.columns:
        check_no_missing(table, "label", name)
        raw = table["label"].tolist()
        cells = cells_written(table, "label")
        written = None if cells is None else [str(v).strip() for v in cells]
        if written is not None and any(padded_digits(w) for w in written):
            raw = written  # "01", "00": names as written, which pandas had read as the numbers 1 and 0
        if not any(_is_number(v) for v in raw) or raw is written:  # names: indices from the prob_<class> columns
            labels = np.asarray([str(v).strip() for v in raw], dtype=object)
        else:
            labels = class_column(table, "label", None, name)
    return paths, labels


def _is_number(value):
    return not math.isnan(parse_number(value))


def validate_relevance(table, *, image_ids=None, sentences=None):
    """Validate a long-form relevance table (``image``, ``sentence``, ``relevant``).

    Returns
    -------
    images : list of str
    sentences : list of (str or int)
        The sentence text, or an integer index when the cell is an integer.
    relevant : ndarray of bool
    """
    name = "relevance table"
    check_not_empty(table, name)
    require_columns(table, ["image", "sentence", "relevant"], name)
    images = text_column(table, "image", name)
    check_no_missing(table, "sentence", name)
    sents = []
    for v in table["sentence"].tolist():
        if isinstance(v, numbers.Integral) and not isinstance(v, (bool, np.bool_)):
            sents.append(int(v))
        elif isinstance(v, float) and v.is_integer():
            sents.append(int(v))
        else:
            sents.append(str(v).strip())
    relevant = bool_column(table, "relevant", name)
    _check_conflicts(table, images, sents, relevant, name)
    return images, sents, relevant


def validate_metadata(table):
    """Validate a VQA metadata table (``image``, ``sentence``, ``relevant``); returns {(image, sentence): bool}."""
    name = "metadata table"
    check_not_empty(table, name)
    require_columns(table, ["image", "sentence", "relevant"], name)
    images = text_column(table, "image", name)
    sents = text_column(table, "sentence", name)
    relevant = bool_column(table, "relevant", name)
    _check_conflicts(table, images, sents, relevant, name)
    return dict(zip(zip(images, sents), relevant.tolist()))


def _check_conflicts(table, images, sents, relevant, name):
    first = {}
    for i, key in enumerate(zip(images, sents)):
        if key in first and relevant[first[key]] != relevant[i]:
            a, b = row_labels(table, [first[key], i])
            raise ValueError(
                f"{table_source(table, name)}: {a} and {b} give the pair (image {key[0]!r}, sentence "
                f"{key[1]!r}) conflicting 'relevant' values ({bool(relevant[first[key]])} and "
                f"{bool(relevant[i])}); expected one value per pair."
            )
        first.setdefault(key, i)


def validate_performance(table, *, image_ids=None, image_paths=None):
    """ω from a table with a ``performance`` column, aligned to ``image_ids`` when the table has an ``image`` column.

    ``image_paths``: the images' files, so that an id naming another existing file matches none.

    Without an ``image`` column the rows must already be in the run's order
    (and, with ``image_ids``, there must be exactly one row per image).

    Returns
    -------
    ndarray of float64, shape (n,)
    """
    name = "performance table"
    check_not_empty(table, name)
    require_columns(table, ["performance"], name)
    omega = float_column(table, "performance", name)
    if "image" not in table.columns:
        if image_ids is not None and len(omega) != len(image_ids):
            raise ValueError(
                f"{table_source(table, name)} has {len(omega)} rows but the run has {len(image_ids)} "
                "images; add an 'image' column or give one row per image in the run's order."
            )
        return omega
    ids = text_column(table, "image", name)
    check_unique(table, "image", name, what="image id")
    if image_ids is None:
        return omega
    rows, unmatched = match_table_rows(ids, image_ids, image_paths, source=table_source(table, name))
    missing = [iid for iid, r in zip(image_ids, rows) if r < 0]
    if missing:
        raise ValueError(
            f"{table_source(table, name)} has no row for {len(missing)} of the run's {len(image_ids)} "
            f"images, e.g. {missing[:3]}."
        )
    report_unmatched(
        len(unmatched), len(ids), what="image of the run", source=table_source(table, name), examples=unmatched
    )
    return omega[rows]
