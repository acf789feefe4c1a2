"""The hypotheses of a run ranked by their held-out confirmation: confirmed failures first, each most harmful first.

`lbee.run.confirm` tests every statement on the held-out images; this module decides which groups stand for a
confirmed failure (a failure itself, whose statement confirms and adds failures beyond the groups above it) and in
which order the terminal, the reports, ``explanation.json`` and the service show them.
"""

from __future__ import annotations

import numpy as np

from ..core.confirmation import CONFIRM_Q, MIN_EFFECT, fisher_greater, is_confirmed, rank_key, region_test


def rank_groups(hard_clusters, statements, regions, leading, tests, plan, performance, rows, flag="confirmed"):
    """The groups in rank order and their ``explanation.json`` entries.

    Confirmed first, then the others, each most harmful first. Groups are tested strongest statement first, a
    broader statement raised above a narrower one when the narrower one's extra condition does not matter
    (`broader_first`). A group is a confirmed hypothesis only when it is a
    failure itself (a group of 1 image, or one the model gets right, whose statement confirms, ranked first and
    took the credit from the failure's own group), and when its statement adds failures beyond those of the groups
    whose statements are stronger (tested strongest first, `beyond_the_groups_above`; ``groups_above`` names
    those groups by their place in the order shown).

    Parameters
    ----------
    hard_clusters : list of HardCluster
    statements : list of dict
        The run's tested statements.
    regions : ndarray of bool, shape (n, S)
    leading : list of str or None
        Per group, its leading statement's text.
    tests : dict
        ``{text: (index into statements, statement)}``.
    plan : ConfirmationPlan
    performance : ndarray of float, shape (n,), or None
    rows : ndarray of int
        The held-out images counted.
    flag : {'confirmed', 'significant'}
        Which statements count as confirmed: the run's rule, or significance alone (q ≤ 0.05, no effect asked).

    Returns
    -------
    order : list of int
        The groups' indices, in rank order.
    groups : list of dict
        Per group in that order: ``images``, ``hypothesis_error_rate``, ``statement``, ``confirmed``, and
        ``not_a_failure`` / ``beyond`` where they apply.
    """
    harm = {i: r for r, i in enumerate(_harm_order(hard_clusters, performance))}
    own = _own_failure(hard_clusters, plan)
    holds = _holds_for_the_group(hard_clusters, leading, tests, regions)
    for i, (k, n) in holds.items():
        # a statement about other images ranked a ninth user's group of 2 errors first: it confirms, but not of
        # this group. Said only where Γ judges it: by a noisy encoder's guess (atoms of AUC 0.88) a failure's
        # own statement holds for few of its images, and 8 of 31 confirmed failures lost their confirmation
        if own[i] is None and k < HOLDS_MIN * n and tests[leading[i]][1].get("region") == "relevance":
            own[i] = f"its statement holds for {k} of its {n} images by the given Γ"

    def unconfirmed(i):  # 1 for a group whose statement does not confirm, or that is no failure of its own
        return 0 if own[i] is None and rank_key(tests.get(leading[i], (0, None))[1], flag)[0] == 0 else 1

    def strength(i):  # the lower end of its statement's held-out interval, negated (stronger first)
        return rank_key(tests.get(leading[i], (0, None))[1], flag)[1]

    # tested strongest statement first, shown most harmful first: tested in the order shown, a broad companion's
    # group ('a grainy, noisy image') above the failure's own ('a grainy pattern tilted diagonally') took its
    # confirmation, while the list of statements called the broad one the companion (a twelfth user)
    tested_order = sorted(range(len(hard_clusters)), key=lambda i: (unconfirmed(i), strength(i), harm.get(i, i), i))
    lead_of = {i: tests.get(leading[i], (None, None))[0] for i in tested_order}
    tested = [lead_of[i] if own[i] is None else None for i in tested_order]  # only failures stand above others
    raised = broader_first(tested, statements, regions, plan.failed, rows, flag)  # a condition that does not matter
    tested_order, tested = [tested_order[k] for k in raised], [tested[k] for k in raised]
    raised = explaining_first(tested, statements, regions, plan.failed, rows, flag)  # a statement explained away
    tested_order, tested = [tested_order[k] for k in raised], [tested[k] for k in raised]
    beyond_of = dict(zip(tested_order, beyond_the_groups_above(tested, statements, regions, plan.failed, rows, flag)))

    # a statement that adds nothing to those of stronger groups joins the others, by harm
    # (a tenth user's 5 random errors, whose statement was the most precise, led a 60-image failure ranked by it)
    def demoted(i):
        return unconfirmed(i) > 0 or (beyond_of[i] is not None and not beyond_of[i]["confirmed"])

    order = sorted(range(len(hard_clusters)), key=lambda i: (demoted(i), harm.get(i, i), i))
    position = {i: p for p, i in enumerate(order)}
    lead, beyond = [lead_of[i] for i in order], [beyond_of[i] for i in order]
    stronger = {i: [position[tested_order[k]] for k in (beyond_of[i] or {}).get("groups_above", ())] for i in order}
    groups = []
    for i, j, b in zip(order, lead, beyond):
        idx = hard_clusters[i].indices
        entry = {
            "images": int(len(idx)),
            "hypothesis_error_rate": round(float(plan.failed[idx].mean()), 4) if len(idx) else None,
            "statement": j,
            "confirmed": bool(
                j is not None and statements[j][flag] and (b is None or b["confirmed"]) and own[i] is None
            ),
        }
        if own[i] is not None:
            entry["not_a_failure"] = own[i]
        if b is not None:
            entry["beyond"] = {**b, "groups_above": sorted(stronger[i])}
        groups.append(entry)
    return order, groups


#: The share of a group's images its leading statement must hold for, by the given Γ, to stand for the group: a
#: quarter (a statement that misses one condition of the failure, or adds a wrong one, still holds for about half).
HOLDS_MIN = 1 / 4


def _holds_for_the_group(hard_clusters, leading, tests, regions):
    """Per group with a tested leading statement: (images of the group it holds for, images of the group)."""
    out = {}
    for i, c in enumerate(hard_clusters):
        test = tests.get(leading[i])
        idx = np.asarray(c.indices)
        if test is not None and idx.size:
            out[i] = (int(regions[idx, test[0]].sum()), int(idx.size))
    return out


def _own_failure(hard_clusters, plan):
    """Per group, None when it is a failure itself, else why not.

    Not a failure: fewer than `FEW_IMAGES` images, or images that fail no more often than the rest of the
    discovery images, or not significantly more often (one-sided Fisher at `CONFIRM_Q`).
    """
    from .text import FEW_IMAGES

    rest = plan.counted & ~plan.mask
    base = float(plan.failed[rest].mean()) if rest.any() else 0.0
    out = []
    for c in hard_clusters:
        idx = np.asarray(c.indices)
        rate = float(plan.failed[idx].mean()) if idx.size else 0.0
        others = rest.copy()
        others[idx] = False
        k, n = int(plan.failed[idx].sum()), int(idx.size)
        # more often by chance? 2 errors of 11 against 0.13 led a ninth user's run (Fisher p = 0.5)
        p = fisher_greater(k, n, int(plan.failed[others].sum()), int(others.sum())) if n else 1.0
        if idx.size < FEW_IMAGES:
            out.append(f"{idx.size} image{'' if idx.size == 1 else 's'}: too few to be a failure of its own")
        elif rate <= base:
            out.append(f"its images fail at {rate:.2f}, no more often than the others ({base:.2f})")
        elif p > CONFIRM_Q:
            out.append(
                f"its images fail at {rate:.2f} ({k} of {n}), not significantly more often than the others "
                f"({base:.2f}, p = {p:.2g})"
            )
        else:
            out.append(None)
    return out


def _harm_order(hard_clusters, performance):
    """The groups most harmful first ((1 − mean ω) × size), or as they are without ω."""
    if performance is None:
        return list(range(len(hard_clusters)))
    from ..core.explanation import harm_order

    return harm_order(hard_clusters, performance)


def beyond_the_groups_above(lead, statements, regions, failed, rows, flag="confirmed"):
    """Whether each confirmed leading statement adds failures to those of the confirmed statements above it.

    A statement found on a fragment of a failure, or one that a broader statement holds for, confirms on its own:
    its region holds the failure's images. Tested on the held-out images that no statement above it holds for
    (a sequential covering, as a rule list is read), it adds a failure only when its error rate there still
    exceeds that of the rest of those images by the confirmation's rule (`lbee.core.confirmation.is_confirmed`:
    one-sided Fisher at its level, at least `MIN_EFFECT` times as often), on at least `FEW_IMAGES` images. A
    statement that adds nothing is not confirmed: it restates the groups above it.

    Parameters
    ----------
    lead : list of int or None
        Per group, in rank order, the index of its leading statement.
    statements : list of dict
        With ``confirmed`` (the run's rule) and ``significant`` (q alone) from the statement's own test.
    regions : ndarray of bool, shape (n, S)
    failed : ndarray of bool, shape (n,)
    rows : ndarray of int
        The held-out images counted.
    flag : {'confirmed', 'significant'}
        The rule: the run's (`lbee.core.confirmation.is_confirmed`), or significance alone (p <= `CONFIRM_Q`).

    Returns
    -------
    list of dict or None
        Per group: None for the first confirmed one (nothing is above it) and for an unconfirmed statement; else
        the test on the images the groups above do not cover (`RegionTest.to_dict`), ``groups_above`` (their
        positions in ``lead``) and ``confirmed``.
    """
    covered = np.zeros(regions.shape[0], dtype=bool)
    above: list[int] = []
    out: list[dict | None] = []
    for k, j in enumerate(lead):
        if j is None or not statements[j][flag]:
            out.append(None)
            continue
        if not above:
            out.append(None)
        else:
            t = region_test(regions[:, j], failed, rows[~covered[rows]])
            out.append({**t.to_dict(), "groups_above": list(above), "confirmed": _adds(t, flag)})
            if not out[-1]["confirmed"]:
                continue
        covered |= regions[:, j]
        above.append(k)
    return out


#: A statement counts as containing another when the other's held-out region lies in its own at least this much.
CONTAINS = 0.9


def broader_first(lead, statements, regions, failed, rows, flag="confirmed"):
    """``lead`` (statement indices, strongest first) with a broader statement raised above a narrower one it holds.

    Ranked by precision, a failure's statement with a condition that merely goes with it ('at night' and 'a city
    street') can rank above the failure's own ('at night'): it holds for fewer images and, by chance, fails a
    little more often. Tested in that order, the narrow one stands and the failure's own is said only to add the
    rest. So when a confirmed statement A holds at least `CONTAINS` of a stronger confirmed statement B's held-out
    region, holds more images, and the images it adds (at least `FEW_IMAGES`) fail not significantly less often
    than B's (one-sided Fisher at `CONFIRM_Q`): B's extra condition does not matter, and A is placed just above B.
    A broad statement that holds B and other failures ('a square' above 'two squares below the centre') adds
    images that fail less often, and stays below. And when A states B's conditions less one or more and adds
    fewer than `FEW_IMAGES` images, the held-out images cannot tell B's extra condition from the failure: the
    shorter statement goes first (a twenty-ninth user's "on a dark belt" held for 55 of the failure's 56 images and
    led the finding, the exact statement said to go with it).

    Parameters
    ----------
    lead : list of int or None
        Statement indices in rank order (None: no statement).
    statements : list of dict
        With the ``flag`` field.
    regions : ndarray of bool, shape (n, S)
    failed : ndarray of bool, shape (n,)
    rows : ndarray of int
        The held-out images counted.
    flag : {'confirmed', 'significant'}

    Returns
    -------
    list of int
        A permutation of ``range(len(lead))``: the new order.
    """
    from .text import FEW_IMAGES

    sub = regions[rows]
    fails = np.asarray(failed, dtype=bool)[rows]

    def broader(lower, upper):  # the lower one holds the upper's region and more, failing as often
        ra, rb = sub[:, lower], sub[:, upper]
        n_b, extra = int(rb.sum()), ra & ~rb
        if not n_b or (ra & rb).sum() < CONTAINS * n_b:
            return False
        if extra.sum() < FEW_IMAGES:  # as good as the same images: the shorter statement, if it is one, goes first
            shorter = _conditions(statements[lower])
            return bool(shorter) and shorter < _conditions(statements[upper])
        if ra.sum() <= n_b:
            return False
        # B's images fail significantly more often than those A adds: B's condition matters
        return fisher_greater(int(fails[rb].sum()), n_b, int(fails[extra].sum()), int(extra.sum())) > CONFIRM_Q

    # each move raises a larger region above a smaller one
    return _raised(lead, statements, flag, broader)


def _conditions(statement):
    """A statement's conditions as a set of ``'subject.attribute=value'`` (empty for a sentence without them)."""
    conds = statement.get("conditions") or {}
    if isinstance(conds, str):  # as the sidecar writes them (`lbee.grammar.format_conditions`)
        return {c.strip() for c in conds.split(";") if c.strip()}
    return {f"{s}.{a}={v}" for (s, a), v in conds.items()}


def _raised(lead, statements, flag, raises):
    """A permutation of ``range(len(lead))``, statements raised while ``raises(lower, upper)`` says one belongs above.

    Each move puts a statement just above the first one it belongs above, until none moves (bounded all the same);
    an unconfirmed or missing statement never moves.
    """
    order = list(range(len(lead)))

    def usable(j):
        return j is not None and statements[j][flag]

    def raise_one():
        for a in range(len(order)):
            lower = lead[order[a]]
            if not usable(lower):
                continue
            for b in range(a):
                upper = lead[order[b]]
                if usable(upper) and upper != lower and raises(lower, upper):
                    order.insert(b, order.pop(a))
                    return True
        return False

    for _ in range(len(order) ** 2):
        if not raise_one():
            break
    return order


def _adds(t, flag):
    """Whether a region test on the images others leave passes `beyond_the_groups_above`'s rule."""
    from .folded import FEW_IMAGES

    passes = t.p_value <= CONFIRM_Q if flag == "significant" else is_confirmed(t.p_value, t.effect_low)
    # a failure of its own has images of its own: 1 wrong of the 3 only a confounder held made "a gear and
    # a ruler" a second failure (a nineteenth user's run, p = 0.034), as no group of 3 images is one
    return bool(passes and t.n_in >= FEW_IMAGES)


def adds_beyond(j, other, regions, failed, rows, flag="confirmed"):
    """Whether statement ``j`` adds failures beyond statement ``other`` (`_adds` on the images ``other`` leaves)."""
    return _adds(region_test(regions[:, j], failed, rows[~regions[rows, other]]), flag)


def explaining_first(lead, statements, regions, failed, rows, flag="confirmed"):
    """``lead`` (statement indices, strongest first) with a statement raised above one it explains away.

    Ranked by the lower end of its interval, a small region with a condition that goes with a failure and one
    that fails by chance ('a pair of chopsticks, with motion blur', 27 held-out images at 0.41, in a twentieth
    user's run) outranked the failure's own statement ('a bowl of soup, seen from directly above', 69 at 0.29),
    which was then said to go with it. A lower statement is raised just above an upper one when the upper adds no
    failure beyond the lower, the lower adds failures beyond the upper (`adds_beyond`, both ways), and the upper's
    images fail less than `MIN_EFFECT` times as often as the lower's (the effect confirmation asks of a failure
    over the rest; if they fail that much more often, the upper is the sharper statement of a failure the lower
    holds with others, as 'two large squares but no circle' (1.00) beside 'a square' (0.45), and it stays first).
    A lower statement that holds the upper one's region (`CONTAINS`) is left to `broader_first`, whose test asks
    whether the condition the lower one drops matters: a twenty-first user's exact statement ('rust spots, seen
    from the underside, in low light', 0.93) was raised under 'rust spots, in low light' (0.66) by this rule,
    although the images the broader one adds fail far less often (0.55).

    Parameters and Returns as `broader_first`.
    """
    fails = np.asarray(failed, dtype=bool)
    sub, held = regions[rows], fails[rows]

    def explains(lower, upper):
        up, low = sub[:, upper], sub[:, lower]
        if (up & low).sum() >= CONTAINS * up.sum():  # the lower holds the upper: `broader_first` decides
            return False
        if adds_beyond(upper, lower, regions, fails, rows, flag):
            return False
        if not adds_beyond(lower, upper, regions, fails, rows, flag):
            return False
        return held[up].mean() < MIN_EFFECT * held[low].mean()  # else the upper is the sharper one: it stays

    # a move never undoes itself (the raised one adds failures beyond the other)
    return _raised(lead, statements, flag, explains)


def within_a_stronger(j, above, statements):
    """The stronger statement among ``above`` whose conditions include all of statement ``j``'s, or None.

    Such a statement is a broader form of the stronger one, and when the encoder judges where statements hold, the
    failing images it adds may be the stronger one's that the encoder misses (an atom that fails on some of them):
    a thirty-fifth user's "white tablets, in a clear plastic foil" added 22 images failing at 0.50, 24 of its 80
    images being the planted "white oval tablets, clear foil, strong glare" failure the encoder missed. Judged by a
    given Γ, it is a failure of its own. Indices into ``statements``; None for a statement without conditions.
    """
    from ..grammar import parse_conditions

    if statements[j].get("region") == "relevance" or not statements[j].get("conditions"):
        return None
    own = set(parse_conditions(statements[j]["conditions"]).items())
    for k in above:
        if statements[k].get("conditions") and own < set(parse_conditions(statements[k]["conditions"]).items()):
            return k
    return None
