"""A column of a predictions table that holds the true classes under another name: a label look-alike.

lbee reads the true classes only from a column named ``label``. Without them a run splits by the model's
uncertainty, where confident errors look easy; so a table with ``prob_<class>`` columns, no ``label``, and a column
that reads as the true classes is refused (`refuse_unlabelled_lookalike`), not passed over with a warning (trials
32, 34, 35). A column reads so by its name (`label_like`: ``ground truth``, ``gt_class``, ``TrueLabel``) or, under
any name, by its values: the classes' own names, not the model's most probable class on every row (``category``,
``gold``: sweep 32au B2).
"""

from __future__ import annotations

import re

import numpy as np

#: Words of a column name that say it holds the true classes (`label_like`), and of one that says it does not.
LABEL_WORDS = frozenset(
    {
        "label", "labels", "truth", "groundtruth", "gt", "target", "targets", "class", "classes", "cls", "gold",
        "ytrue", "truelabel", "truelabels", "trueclass", "gtlabel",
    }
)  # fmt: skip
#: Whole column names (`column_words` without '_') that hold the true classes, where a word of them alone would not
#: ('actual_size', 'y_offset'): 'y_true' / 'y_test', 'actual' (sweep 32ax N1).
LABEL_NAMES = frozenset({"ytrue", "ytest", "yval", "actual", "actualclass", "actuallabel"})
NOT_LABEL_WORDS = ("pred", "prob", "score", "conf", "logit", "output", "top", "argmax", "best", "max", "guess", "hat")
#: A word of a column name that says it holds the model's output: one of `NOT_LABEL_WORDS`, whole or inflected
#: ('preds', 'probability', 'top1'), not any word they begin ('topic', 'confirmed', 'problem', 'hatch': sweep 32av B4).
_MODEL_WORD = re.compile(
    r"(pred(s|icted|iction|ictions)?|prob(s|a|ability|abilities)?|scores?|conf(idence)?|logits?|outputs?"
    r"|top\d*|topk|argmax|best|max|guess|hat|yhat)"
)
#: The share of a column's values that must name the classes for it to read as the labels (`label_lookalike`): a
#: class absent from the ``prob_`` columns is a labelling problem, not a reason to pass the column by (sweep 32av B4).
CLASS_SHARE = 0.9


def column_words(name):
    """A column name as words in lower case joined by '_': 'Ground truth', 'true-class', 'TrueLabel', 'GTLabel'."""
    name = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", str(name).strip())  # camelCase: 'trueLabel' (sweep 32au B2)
    name = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", name)  # an acronym before a word: 'GTLabel'
    return re.sub(r"[\s.\-]+", "_", name.lower())


def label_like(words):
    """Whether a column name (`column_words`) reads as the true classes under another name.

    'label_name', 'gt_class', 'target_label', 'groundtruth' (sweep 32as B2), 'true_label' of 'trueLabel', but not
    'pred_class', 'class_prob' or 'top1_class' (the model's classes: sweep 32au N1).
    """
    named = any(w in LABEL_WORDS for w in words.split("_")) or words.replace("_", "") in LABEL_NAMES
    return named and not _names_the_model(words)


def _names_the_model(words):
    """Whether a column name (`column_words`) says it holds the model's output: 'pred_class', 'top1', 'class_hat'."""
    return any(_MODEL_WORD.fullmatch(w) for w in words.split("_") if w)


def label_lookalike(table):
    """The first column of a predictions table without a ``label`` column that looks like one, or None.

    Named like one (`label_like`, and the names `lbee.io.predictions` suggests 'label' for) with values that can
    be classes (text or whole numbers: not 'label_noise' or 'has_label'); or, whatever its name, text naming the
    ``prob_<class>`` columns' classes in any case (`CLASS_SHARE` of its values, at least two classes), and not the
    most probable class on every row; or whole numbers naming the classes (``prob_0``, ``prob_1``, ..., or the
    named classes by column order, as ``label`` reads indices) that agree with the most probable class on at least
    half of the rows but not on all, and more often than chance (`CHANCE_ALPHA`): the labels of a useful model.
    """
    from .predictions import ID_COLUMNS, _unread_lookalikes

    # a name twice is the readers' to refuse; here each is read once, as one column
    counts = table.columns.value_counts()
    cols = [c for c in table.columns if isinstance(c, str) and counts[c] == 1]
    if "label" in table.columns:
        return None
    if not table.index.is_unique:  # a library caller's table: rows are compared by position, not by a label twice
        table = table.reset_index(drop=True)
    idc = next((c for c in ID_COLUMNS if c in cols), None)
    prob_cols = [c for c in cols if c.startswith("prob_")]
    named = [c for c, target in _unread_lookalikes(cols, idc, prob_cols) if target == "'label'"]
    found = next((c for c in named if _could_be_classes(table[c])), None)
    if found is not None or len(prob_cols) < 2:
        return found
    classes = [c[len("prob_") :].lower() for c in prob_cols]  # 'SPORTS' names prob_sports (sweep 32av B4)
    top = _most_probable(table, prob_cols, classes)
    read = {idc, "confidence", "pred", "performance", *prob_cols}
    # the chance test is made of every column of whole numbers: Bonferroni over them (a table of three 0/1 flags
    # was refused one time in nine at 5 % each: review of sweep 32aw's fix)
    n_tested = sum(table[c].dtype.kind in "iuf" and _could_be_classes(table[c]) for c in cols if c not in read)
    for c in cols:
        kind = table[c].dtype.kind
        if c in read or not _could_be_classes(table[c]) or _names_the_model(column_words(c)):
            continue  # a 'pred_label' or 'top1' column may name classes other than the most probable's
        values = table[c].dropna()
        if kind == "f":  # class indices with a blank cell are read as floats: 1.0 names prob_1
            values, kind = values.astype(np.int64), "i"
        if kind in "iu":  # class indices, by column order as 'label' reads them (prob_00..: sweep 32ax N2)
            values = _names_of_indices(values, classes)  # (as 'label' reads them)
        values = values.astype(str).str.strip().str.lower()
        named = values.isin(classes)
        if not len(values) or named.mean() < CLASS_SHARE or values[named].nunique() < 2:
            continue
        agree = None if top is None else float((values == top[values.index]).mean())
        if kind in "iu":  # class indices: a 'fold' or 'seed' holds such numbers too; the labels agree with the
            # model on most rows, not on all, and beyond chance (a 0/1 'fold' agreed with a binary model's argmax
            # on half of the rows by chance: sweep 32aw N2)
            if agree is not None and 0.5 <= agree < 1 and _beyond_chance(values, top[values.index], agree, n_tested):
                return c
        elif agree is None or agree < 1:
            return c
    return None


def _names_of_indices(values, classes):
    """The class each index names (``classes[v]``), or the index as text where it names none; same index."""
    import pandas as pd

    v = values.to_numpy()
    inside = (v >= 0) & (v < len(classes))
    out = v.astype(str).astype(object)
    out[inside] = np.asarray(classes, dtype=object)[v[inside].astype(np.int64)]
    return pd.Series(out, index=values.index)


#: The level of the one-sided binomial test that a column of class indices agrees with the argmax beyond chance.
CHANCE_ALPHA = 0.05


def _beyond_chance(values, top, agree, n_tested=1):
    """Whether ``values`` agree with ``top`` (the most probable classes) more often than independent columns would."""
    from scipy.special import bdtrc  # P(X >= k), as lbee.core.binomial.at_least (a later layer) computes it

    n, k = len(values), int(round(agree * len(values)))
    chance = float((values.value_counts(normalize=True) * top.value_counts(normalize=True)).fillna(0).sum())
    return k > 0 and (chance <= 0 or float(bdtrc(k - 1, n, min(chance, 1.0))) <= CHANCE_ALPHA / max(n_tested, 1))


def _could_be_classes(column):
    """Text, or whole numbers: what a class column holds (a float share or a bool flag does not)."""
    kind = column.dtype.kind
    if kind in "OSUiu":
        return True
    if kind == "f":
        values = column.dropna().to_numpy()
        return bool(len(values)) and bool(np.all(np.isfinite(values) & (values == np.round(values))))
    return False


def _most_probable(table, prob_cols, classes):
    """Per row, the class of the largest probability (a pandas Series of text), or None where they are not numbers."""
    import pandas as pd

    try:
        probs = table[prob_cols].to_numpy(dtype=float)
    except (TypeError, ValueError):
        return None
    if not np.isfinite(probs).all():
        return None
    return pd.Series(np.asarray(classes, dtype=object)[probs.argmax(axis=1)], index=table.index)


def refuse_unlabelled_lookalike(lookalike, kind, has_probs, has_labels):
    """Raise when the default split would go by uncertainty because the labels' column is named otherwise.

    ``lookalike`` is `label_lookalike`'s column (or None), ``kind`` the confidence_from setting. Trials 32, 34
    and 35 each passed a warning by, and kept a run split by uncertainty, where confident errors look easy.
    """
    if kind == "auto" and has_probs and not has_labels and lookalike is not None:
        raise ValueError(
            f"the predictions carry no 'label' column, and their {lookalike!r} looks like one: lbee reads the true "
            "classes only from a column named 'label'; without them it splits by the model's uncertainty, and "
            "confident errors land among the easy images. Rename the column 'label', or ask for that split: "
            "--confidence-from entropy (confidence_from: entropy in a report config or a job)."
        )
