"""The ``confirmation`` and ``hypotheses`` blocks of a stored ``explanation.json``, checked field by field.

A run's content digest catches an edit made without recomputing it; these checks catch a block that no lbee
could have written even when the digest was recomputed (the algorithm is public): indices out of range or
repeated, ``ranked`` naming an unconfirmed statement, rates outside [0, 1], a count that disagrees with its list.
The loader (`lbee.run.stored.load_explanations`), the service and the Python client read the blocks through it.
"""

from __future__ import annotations

import math

#: The states a run's confirmation can be in (`lbee.run.confirm.ConfirmationPlan`).
CONFIRMATION_STATES = ("done", "skipped", "off")
#: Fields of a tested statement (and of its ``beyond`` test) that are rates or probabilities: in [0, 1] or null.
RATE_FIELDS = ("error_rate_in", "error_rate_out", "p_value", "q_value")
#: Fields that count images: non-negative integers.
COUNT_FIELDS = ("n_in", "errors_in", "n_out", "errors_out")


#: What a confirmation that did not run records (`lbee.run.confirm.ConfirmationPlan.header`).
NOT_RUN_FIELDS = ("status", "fraction", "seed", "reason")


def check_confirmation_record(payload, where, n_groups=None, sizes=None):
    """Refuse a ``confirmation`` / ``hypotheses`` block lbee did not write; returns nothing.

    Parameters
    ----------
    payload : dict
        A parsed ``explanation.json``.
    where : str
        The file or answer, as the message names it.
    n_groups : int, optional
        The run's number of hard groups (``groups`` and ``hypotheses`` must have one entry each).
    sizes : list of int, optional
        Each hard group's number of images (what ``groups`` and ``hypotheses`` record of them).

    Raises
    ------
    ValueError
        Naming the first field that is wrong, what it holds and what was expected.
    """
    n = len(payload.get("images") or ())
    texts = payload.get("sentences") or []
    conf = payload.get("confirmation")
    params = payload.get("params") if isinstance(payload.get("params"), dict) else {}
    if conf is not None:
        _check_confirmation(conf, where, n, n_groups, texts)
        _sizes(conf.get("groups") or [], sizes, where, "confirmation.groups")
        _agree_with_params(conf, params, where)
    hyps = payload.get("hypotheses")
    if hyps is not None:
        _list(hyps, where, "hypotheses", n_groups)
        made = (payload.get("params") or {}).get("n_slicer_groups")
        for i, h in enumerate(hyps):
            field = f"hypotheses[{i}]"
            _dict(h, where, field)
            _count(h.get("images"), where, f"{field}.images")
            _count(h.get("pieces"), where, f"{field}.pieces")
            if type(made) is int and h["pieces"] > made:
                _bad(where, f"{field}.pieces", h["pieces"], f"at most the {made} groups the slicer made")
            for key in ("error_concentration", "lower_bound", "p_value", "hypothesis_error_rate"):
                _rate(h.get(key), where, f"{field}.{key}")
            low, rate = h.get("lower_bound"), h.get("error_concentration")
            if _number(low) and _number(rate) and low > rate + 1e-4:
                _bad(where, f"{field}.lower_bound", low, f"at most its error_concentration ({rate})")
        _sizes(hyps, sizes, where, "hypotheses")
        groups = (conf or {}).get("groups") or []
        for i, (h, g) in enumerate(zip(hyps, groups)):  # one group's images, one error rate
            a, b = h.get("hypothesis_error_rate"), g.get("hypothesis_error_rate")
            if a is not None and b is not None and abs(a - b) > 1e-3:
                _bad(where, f"hypotheses[{i}].hypothesis_error_rate", a, f"{b}, as confirmation.groups[{i}] says")
    if "n_sentences" in params and params["n_sentences"] != len(texts):
        _bad(where, "params.n_sentences", params["n_sentences"], f"{len(texts)}, the number of its sentences")
    for key, low, high in (("tau", -1.0, 1.0), ("a", 0.0, 10.0)):  # a cosine; the split's margin (MAX_A)
        if key in params and params[key] is not None and not (_number(params[key]) and low <= params[key] <= high):
            _bad(where, f"params.{key}", params[key], f"a number in [{low:g}, {high:g}]")
    if "n_images" in params and params["n_images"] != n:
        _bad(where, "params.n_images", params["n_images"], f"{n}, the number of its images")


def _sizes(entries, sizes, where, field):
    """Each entry's ``images`` equal to its hard group's size."""
    if sizes is None:
        return
    for i, (entry, size) in enumerate(zip(entries, sizes)):
        if entry.get("images") != size:
            _bad(where, f"{field}[{i}].images", entry.get("images"), f"{size}, the size of hard group {i}")


def _agree_with_params(conf, params, where):
    """The run's settings and the confirmation say the same share and number of held-out images, and its rule."""
    from ..core.confirmation import CONFIRM_Q, CONFIRM_SEED, MIN_EFFECT

    for key, value in (("q_level", CONFIRM_Q), ("min_effect", MIN_EFFECT), ("seed", CONFIRM_SEED)):
        if key in conf and conf[key] != value:
            _bad(where, f"confirmation.{key}", conf[key], f"{value}, the rule every run applies")
    if conf.get("status") == "done":
        for key, field in (("confirm", "fraction"), ("n_held_out", "n_held_out")):
            if key in params and params[key] != conf.get(field):
                _bad(where, f"params.{key}", params[key], f"{conf.get(field)}, as confirmation.{field} says")


def _check_confirmation(conf, where, n, n_groups, texts):
    n_sentences = len(texts)
    _dict(conf, where, "confirmation")
    if conf.get("status") not in CONFIRMATION_STATES:
        _bad(where, "confirmation.status", conf.get("status"), f"one of {', '.join(CONFIRMATION_STATES)}")
    fraction = conf.get("fraction")
    if not _number(fraction) or not 0 <= fraction < 1:
        _bad(where, "confirmation.fraction", fraction, "a number in [0, 1)")
    if conf["status"] != "done":  # a confirmation that did not run records why, and nothing it would have found
        extra = [k for k in conf if k not in NOT_RUN_FIELDS]
        if extra:
            _bad(where, f"confirmation.{extra[0]}", conf[extra[0]], f"nothing: the confirmation is {conf['status']}")
        return
    held = conf.get("held_out")
    _indices(held, where, "confirmation.held_out", n)
    if conf.get("n_held_out") != len(held):
        _bad(where, "confirmation.n_held_out", conf.get("n_held_out"), f"{len(held)}, the length of 'held_out'")
    statements = conf.get("statements")
    _list(statements, where, "confirmation.statements")
    for j, s in enumerate(statements):
        field = f"confirmation.statements[{j}]"
        _dict(s, where, field)
        if not isinstance(s.get("text"), str):
            _bad(where, f"{field}.text", s.get("text"), "a sentence")
        for key in ("confirmed", "significant"):
            if key in s and not isinstance(s[key], bool):
                _bad(where, f"{field}.{key}", s[key], "true or false")
        j = s.get("sentence")
        if j is not None and not (type(j) is int and 0 <= j < n_sentences):
            _bad(where, f"{field}.sentence", j, f"null or a sentence index in [0, {n_sentences})")
        _test(s, where, field)
        _verdict(s, where, field)
        for k, a in enumerate(s.get("ablation") or []):
            _dict(a, where, f"{field}.ablation[{k}]")
            for key in ("n", "n_excluded"):
                _count(a.get(key), where, f"{field}.ablation[{k}].{key}")
            for key in ("error_rate", "error_rate_excluded", "p_value"):
                _rate(a.get(key), where, f"{field}.ablation[{k}].{key}")
        if "holds_for" in s:  # a finding's images: as many of the held-out ones as its test counted, at least
            _indices(s["holds_for"], where, f"{field}.holds_for", n)
            if s.get("confirmed") is not True:
                _bad(where, f"{field}.holds_for", "a list", "none: the statement is not confirmed")
            inside = len(set(s["holds_for"]) & set(held))  # every held-out image counts in an error rate's test
            exact = conf.get("outcome") == "error rate"
            if _number(s.get("n_in")) and (inside != s["n_in"] if exact else inside < s["n_in"]):
                _bad(
                    where,
                    f"{field}.holds_for",
                    f"a list of {inside} held-out images",
                    f"{'exactly' if exact else 'at least'} its n_in ({s['n_in']}), the held-out images of its test",
                )
        if s.get("beyond") is not None:
            _dict(s["beyond"], where, f"{field}.beyond")
            _test(s["beyond"], where, f"{field}.beyond")
            _indices(s["beyond"].get("above", []), where, f"{field}.beyond.above", len(statements))
            shared = s["beyond"].get("shared")
            if shared is not None:  # held-out images shared with each statement above (older runs: none)
                _list(shared, where, f"{field}.beyond.shared", len(s["beyond"].get("above", [])))
                for k, c in enumerate(shared):
                    _count(c, where, f"{field}.beyond.shared[{k}]")
    tested = {
        (s.get("n_in", 0) + s.get("n_out", 0), s.get("errors_in", 0) + s.get("errors_out", 0)) for s in statements
    }
    if len(tested) > 1:  # every statement is tested on the same held-out images, with the same failures among them
        _bad(where, "confirmation.statements", f"{len(tested)} different totals", "one (n_in + n_out, errors)")
    if tested and conf.get("outcome") == "error rate" and next(iter(tested))[0] != conf.get("n_held_out"):
        _bad(where, "confirmation.statements[0].n_in", statements[0].get("n_in"), "n_in + n_out = n_held_out")
    ranked = conf.get("ranked")
    _indices(ranked, where, "confirmation.ranked", len(statements))
    confirmed = [j for j, s in enumerate(statements) if s.get("confirmed") is True]
    if sorted(ranked) != confirmed:
        _bad(where, "confirmation.ranked", ranked, "each confirmed statement once (and no other)")
    groups = conf.get("groups")
    _list(groups, where, "confirmation.groups", n_groups)
    for i, g in enumerate(groups):
        field = f"confirmation.groups[{i}]"
        _dict(g, where, field)
        j = g.get("statement")
        if j is not None and not (type(j) is int and 0 <= j < len(statements)):
            _bad(where, f"{field}.statement", j, f"null or a statement index in [0, {len(statements)})")
        if not isinstance(g.get("confirmed"), bool):
            _bad(where, f"{field}.confirmed", g.get("confirmed"), "true or false")
        if g["confirmed"] and (j is None or statements[j].get("confirmed") is not True):
            _bad(where, f"{field}.confirmed", True, "false: its statement is not confirmed")
        _count(g.get("images"), where, f"{field}.images")
        _rate(g.get("hypothesis_error_rate"), where, f"{field}.hypothesis_error_rate")
        if g.get("beyond") is not None:
            _dict(g["beyond"], where, f"{field}.beyond")
            _test(g["beyond"], where, f"{field}.beyond")
            _indices(g["beyond"].get("groups_above", []), where, f"{field}.beyond.groups_above", len(groups))


def _verdict(s, where, field):
    """``confirmed`` and ``significant`` as the statement's own q-value and effect say (rounded as written)."""
    from ..core.confirmation import CONFIRM_Q, MIN_EFFECT

    q, effect = s.get("q_value"), s.get("effect_low")
    if s.get("significant") is True and _number(q) and q > CONFIRM_Q * 1.01:
        _bad(where, f"{field}.significant", True, f"false: its q-value is {q}")
    if s.get("confirmed") is True and (
        (_number(q) and q > CONFIRM_Q * 1.01) or (_number(effect) and effect < MIN_EFFECT * 0.999)
    ):
        _bad(where, f"{field}.confirmed", True, f"false: q = {q}, effect_low = {effect}")
    rin, rout, lift = s.get("error_rate_in"), s.get("error_rate_out"), s.get("lift")
    if (
        _number(lift)
        and _number(rin)
        and _number(rout)
        and rout >= 0.01
        and abs(lift - rin / rout) > 0.02 * lift + 0.02
    ):
        _bad(where, f"{field}.lift", lift, f"about {rin / rout:.3g}, its rates' ratio")


def _test(t, where, field):
    for key in RATE_FIELDS:
        _rate(t.get(key), where, f"{field}.{key}")
    for key in COUNT_FIELDS:
        if key in t:
            _count(t[key], where, f"{field}.{key}")
    for key in ("lift", "effect_low"):
        v = t.get(key)
        if v is not None and not (_number(v) and v >= 0):
            _bad(where, f"{field}.{key}", v, "null or a non-negative number")
    for inside, total, rate in (("errors_in", "n_in", "error_rate_in"), ("errors_out", "n_out", "error_rate_out")):
        if inside in t and total in t and t[inside] > t[total]:
            _bad(where, f"{field}.{inside}", t[inside], f"at most {total} ({t[total]})")
        if inside in t and total in t and t[total] and t.get(rate) is not None:  # written rounded to 4 places
            if abs(t[rate] - t[inside] / t[total]) > 1e-3:
                _bad(where, f"{field}.{rate}", t[rate], f"{t[inside]} / {t[total]}, its counts' ratio")
    ci, rate = t.get("ci"), t.get("error_rate_in")
    if ci is not None and not (
        isinstance(ci, list) and len(ci) == 2 and all(_number(v) and 0 <= v <= 1 for v in ci) and ci[0] <= ci[1]
    ):
        _bad(where, f"{field}.ci", ci, "[low, high] with 0 <= low <= high <= 1")
    if ci is not None and _number(rate) and not ci[0] - 1e-3 <= rate <= ci[1] + 1e-3:
        _bad(where, f"{field}.ci", ci, f"an interval around its error_rate_in ({rate})")


def _number(v):
    return type(v) in (int, float) and math.isfinite(v)


def _rate(v, where, field):
    if v is not None and not (_number(v) and 0 <= v <= 1):
        _bad(where, field, v, "null or a number in [0, 1]")


def _count(v, where, field):
    if not (type(v) is int and v >= 0):
        _bad(where, field, v, "a non-negative integer")


def _dict(v, where, field):
    if not isinstance(v, dict):
        _bad(where, field, v, "an object")


def _list(v, where, field, length=None):
    if not isinstance(v, list):
        _bad(where, field, v, "a list")
    if length is not None and len(v) != length:
        _bad(where, field, f"{len(v)} entries", f"{length}, one per hard group")


def _indices(v, where, field, n):
    _list(v, where, field)
    if not all(type(i) is int and 0 <= i < n for i in v) or len(set(v)) != len(v):
        _bad(where, field, v, f"distinct indices in [0, {n})")


def _bad(where, field, value, expected):
    from .._validation import shown

    raise ValueError(
        f"{where}: '{field}' is {shown(value)}; expected {expected} (the file lbee wrote: an edit is refused)."
    )
