"""Combining backends' answers and comparing pseudo ground truth with real ground truth (LBEE Table 4)."""

from __future__ import annotations

import numpy as np

COMBINATIONS = ("and", "or", "majority")


def combine(answers, how="and"):
    """Combine per-backend boolean matrices.

    Parameters
    ----------
    answers : dict of str to array-like of bool, shape (n_images, n_sentences)
    how : {'and', 'or', 'majority'}, default='and'
        'and' is the paper's default (fewer false positives); 'majority' needs
        more than half of the backends.

    Returns
    -------
    ndarray of bool
    """
    if how not in COMBINATIONS:
        raise ValueError(f"`combine` must be one of {list(COMBINATIONS)}; received {how!r}.")
    if not answers:
        raise ValueError("`answers` is empty; expected at least one backend's answers.")
    mats = [np.asarray(a, dtype=bool) for a in answers.values()]
    if len({m.shape for m in mats}) != 1:
        raise ValueError(f"Backends' answers differ in shape: {[m.shape for m in mats]}.")
    stack = np.stack(mats)
    if how == "and":
        return stack.all(0)
    if how == "or":
        return stack.any(0)
    return stack.sum(0) * 2 > len(mats)


def agreement(pseudo, truth):
    """Accuracy and TP / TN / FP / FN rates of a pseudo Γ against a ground-truth Γ.

    Rates are per class: TP = TP/P, FN = FN/P, TN = TN/N, FP = FP/N (so TP + FN = 1
    and TN + FP = 1, as in the paper's Table 4).

    Returns
    -------
    dict
    """
    p = np.asarray(pseudo, dtype=bool)
    t = np.asarray(truth, dtype=bool)
    if p.shape != t.shape:
        raise ValueError(f"`pseudo` {p.shape} and `truth` {t.shape} must have the same shape.")
    pos, neg = t.sum(), (~t).sum()
    tp, tn = (p & t).sum(), (~p & ~t).sum()
    nan = float("nan")
    return {
        "accuracy": float((p == t).mean()) if t.size else nan,
        "TP": tp / pos if pos else nan,
        "TN": tn / neg if neg else nan,
        "FP": ((p & ~t).sum()) / neg if neg else nan,
        "FN": ((~p & t).sum()) / pos if pos else nan,
    }


def agreement_table(backend_answers, truth):
    """Rows (name, accuracy, TP, TN, FP, FN) for each backend and each combination of all backends."""
    rows = [{"name": name, **agreement(a, truth)} for name, a in backend_answers.items()]
    if len(backend_answers) > 1:
        sep = {"and": " & ", "or": " | ", "majority": " maj "}
        for how in COMBINATIONS:
            rows.append({"name": sep[how].join(backend_answers), **agreement(combine(backend_answers, how), truth)})
    return rows
