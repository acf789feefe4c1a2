"""A run's confirmation on held-out images: the split before slicing, the tests after describing.

`confirmation_plan` holds a seeded, stratified share of the images out before the partition is fitted
(`lbee.core.partition.Partition` ``fit(..., held_out=)``); `confirm_run` tests every statement the
describers returned on those images (`lbee.core.confirmation`), orders the hypotheses by their confirmed
lower bound and returns what ``explanation.json`` records under ``confirmation`` and ``hypotheses``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..core.confirmation import (
    CONFIRM_Q,
    CONFIRM_SEED,
    MIN_CONFIRM_FAILURES,
    MIN_CONFIRM_IMAGES,
    MIN_EFFECT,
    ablation,
    bh_qvalues,
    failure_outcome,
    held_out,
    is_confirmed,
    narrowing,
    rank_key,
    region_test,
    split_strata,
)
from .confirm_rank import beyond_the_groups_above, broader_first, explaining_first, rank_groups, within_a_stronger


@dataclass
class ConfirmationPlan:
    """Which images are held out, and why not when none are.

    Attributes
    ----------
    mask : ndarray of bool, shape (n,), or None
        The held-out images; None when confirmation is off or skipped.
    status : {'done', 'skipped', 'off'}
    reason : str
        Why it was skipped or off ('' when done).
    fraction : float
    failed, counted : ndarray of bool, shape (n,), or None
        `lbee.core.confirmation.failure_outcome`.
    outcome : str
        What the rate is.
    """

    mask: np.ndarray | None
    status: str
    reason: str = ""
    fraction: float = 0.0
    failed: np.ndarray | None = field(default=None, repr=False)
    counted: np.ndarray | None = field(default=None, repr=False)
    outcome: str = ""
    hard: np.ndarray | None = field(default=None, repr=False)

    @property
    def n_hard_discovery(self):
        """Hard images the slicer sees (those not held out): what the default number of groups is sized by."""
        hard = self.hard if self.mask is None else self.hard & ~self.mask
        return int(hard.sum())

    def header(self):
        """What ``explanation.json`` records of the plan."""
        out = {"status": self.status, "fraction": self.fraction, "seed": CONFIRM_SEED}
        if self.reason:
            out["reason"] = self.reason
        if self.mask is not None:
            out.update(
                outcome=self.outcome,
                q_level=CONFIRM_Q,
                min_effect=MIN_EFFECT,
                n_held_out=int(self.mask.sum()),
                held_out=np.flatnonzero(self.mask).tolist(),
            )
        return out


def confirmation_plan(inputs, scores, settings):
    """Hold out ``settings.confirm`` of the images (stratified by hard / easy / neutral, seeded), or say why not.

    Returns
    -------
    ConfirmationPlan
    """
    from ..core.split import split_by_confidence

    fraction = float(settings.confirm)
    if scores.split is not None:
        hard, easy = (np.asarray(m, dtype=bool) for m in scores.split)
    else:
        hard, easy = split_by_confidence(scores.confidence, a=settings.a)
    failed, counted, outcome = failure_outcome(scores.performance, hard, easy)
    if fraction == 0:
        return ConfirmationPlan(None, "off", "turned off (confirm = 0)", 0.0, failed, counted, outcome, hard=hard)
    n = int(np.shape(inputs.embeddings)[0])
    if n < MIN_CONFIRM_IMAGES:
        why = (
            f"{n} images, under the {MIN_CONFIRM_IMAGES} that confirmation needs, whatever share is held out "
            f"({fraction:.0%} held out would be {round(n * fraction)} images)"
        )
        return ConfirmationPlan(None, "skipped", why, fraction, failed, counted, outcome, hard=hard)
    mask = held_out(split_strata(hard, easy), fraction)
    n_failed = int((failed & counted & mask).sum())
    if n_failed < MIN_CONFIRM_FAILURES or not (hard & ~mask).any() or not (easy & ~mask).any():
        why = (
            f"{n_failed} failures among the {int(mask.sum())} held-out images: confirmation needs at least "
            f"{MIN_CONFIRM_FAILURES}"
        )
        return ConfirmationPlan(None, "skipped", why, fraction, failed, counted, outcome, hard=hard)
    return ConfirmationPlan(mask, "done", "", fraction, failed, counted, outcome, hard=hard)


def _regions(part, index, tau, statements, relevance=None):
    """(n, S) bool: each statement's region, by composed relevance of its conditions or similarity above τ.

    A sentence of the run's set without conditions is true where a given ``relevance`` Γ (n, N) says it is: the
    ground truth (or VQA's pseudo ground truth), not the encoder's guess; a statement of conditions, where Γ's
    columns of the sentences stating each condition alone all hold (`lbee.io.relevance.compose_columns`).
    """
    n = part.embeddings_.shape[0]
    out = np.zeros((n, len(statements)), dtype=bool)
    conds = [s.get("conditions") for s in statements]
    by_conditions = [i for i, c in enumerate(conds) if c is not None]
    if by_conditions:
        out[:, by_conditions] = part.composed_relevance(index, [conds[i] for i in by_conditions], tau=tau)[1]
        if relevance is not None and index.conditions is not None:  # the user's Γ over the grammar's sentences:
            # each condition's column (the sentence stating it alone), ANDed, rather than the encoder's guess
            from ..io.relevance import compose_columns

            base = list(index.conditions[: relevance.shape[1]])
            for i in by_conditions:
                try:
                    out[:, i] = compose_columns(relevance, base, [conds[i]])[:, 0]
                except ValueError:  # a condition no sentence of the set states alone: the encoder's
                    continue
                statements[i]["region"] = "relevance"
    by_similarity = [i for i, c in enumerate(conds) if c is None]
    if by_similarity:
        rows = [statements[i]["sentence"] for i in by_similarity]
        out[:, by_similarity] = part.embeddings_ @ index.embeddings[rows].T > tau
        if relevance is not None:
            given = [(i, r) for i, r in zip(by_similarity, rows) if r < relevance.shape[1]]
            for i, r in given:
                out[:, i] = np.asarray(relevance[:, r], dtype=bool).ravel()
                statements[i]["region"] = "relevance"
    return out


def _statements(exps, index):
    """The run's unique statements (by text), each with its sentence row or its conditions."""
    found = {}
    for e in exps.values():
        n_base = e.params.get("n_base_sentences", index.n_sentences)
        for c in e.hard_clusters:
            for r, s in enumerate(c.sentences):
                text = e.sentence_texts[s] if e.sentence_texts is not None else f"sentence {int(s)}"
                if text in found:
                    continue
                entry = {"text": text, "sentence": int(s)}
                if c.details and r < len(c.details) and c.details[r]:
                    entry["conditions"] = dict(c.details[r]["conditions"])
                elif index.conditions is not None and index.grammar is not None and s < n_base:
                    entry["conditions"] = dict(index.conditions[s])
                found[text] = entry
    return list(found.values())


def _judged_regions(part, index, tau, statement, condition_sets, relevance):
    """The regions of ``condition_sets``, shape (n, len(condition_sets)), judged as ``statement``'s region was.

    By the given Γ when the statement's region came from Γ, else by the encoder's composed relevance.
    """
    if statement.get("region") == "relevance" and relevance is not None and index.conditions is not None:
        from ..io.relevance import compose_columns

        return compose_columns(relevance, list(index.conditions[: relevance.shape[1]]), condition_sets)
    return part.composed_relevance(index, condition_sets, tau=tau)[1]


def _ablate(part, index, tau, plan, statement, region, rows, relevance=None):
    """Drop each of a composed statement's conditions in turn (`lbee.core.confirmation.ablation`).

    The wider regions are judged as the statement's was: by the given Γ when its region came from Γ.
    """
    from ..grammar import format_conditions

    conds = statement.get("conditions") or {}
    if len(conds) < 2:
        return None
    rests = [{k: v for k, v in conds.items() if k != key} for key in conds]
    wider = _judged_regions(part, index, tau, statement, rests, relevance)
    out = ablation(region, list(wider.T), plan.failed, rows)
    for entry, key, rest in zip(out, conds, rests):
        entry["condition"] = format_conditions({key: conds[key]})
        entry["phrase"] = index.grammar.phrase(key, conds[key])  # "two squares": what a reader is told
        entry["without"] = index.grammar.render(rest)
    return out


#: Candidate conditions whose regions `_narrow` holds at once.
NARROW_BLOCK = 64


def _narrow(part, index, tau, plan, statement, region, rows, relevance=None):
    """The condition a composed statement most surely lacks (`lbee.core.confirmation.narrowing`), or None.

    Every value of every key of the grammar the statement leaves open is a candidate (absences too); its region
    is judged as the statement's was.
    """
    from ..grammar import format_conditions

    conds, grammar = statement.get("conditions") or {}, index.grammar
    if not conds or grammar is None:
        return None
    said = grammar.canonical(conds)
    extra = []
    for key, values in grammar.keys():
        for value in values if key not in conds else ():
            narrowed = {**conds, key: value}
            if grammar.contradiction(grammar.implied(narrowed)) is None and grammar.canonical(narrowed) != said:
                extra.append((key, value, narrowed))
    best = None
    for start in range(0, len(extra), NARROW_BLOCK):  # (n, block) regions at a time: a million images, any grammar
        block = [w for *_, w in extra[start : start + NARROW_BLOCK]]
        regions = _judged_regions(part, index, tau, statement, block, relevance)
        found = narrowing(region, list(regions.T), plan.failed, rows)
        if found is not None:
            found["index"] += start
            rank = (found["error_rate_left_out"], found["p_value"])
            best = found if best is None or rank < (best["error_rate_left_out"], best["p_value"]) else best
    if best is not None:
        key, value, narrowed = extra[best.pop("index")]
        best.update(condition=format_conditions({key: value}), phrase=grammar.phrase(key, value))
        best["with"] = grammar.render(narrowed)
    return best


def confirm_run(plan, part, exps, index, tau, performance=None, relevance=None):
    """Test every statement on the held-out images, rank the hypotheses, and return what the run records.

    The explanations' hard clusters are reordered in place: confirmed hypotheses first, then the others, each
    part most harmful first ((1 − mean ω) × size: ranked by their statement's precision, a group of 5 random errors
    led a 60-image failure). The leading statement of a merged hypothesis (a grammar's sentences) is its own description
    (`lbee.core.hypotheses`, tested beside the describers' statements), so the order does not depend on which
    describers ran; without merging it is the first sentence of the describer read first
    (`lbee.run.text.first_method`). A sentence's region is where the run's Γ says it holds, when one is given
    (``relevance``), else where its similarity passes τ; a composed statement's is its composed relevance.

    Without held-out images, the hard clusters are ordered by harm instead (`lbee.run.text.group_order`, with
    ``performance`` ω), so that a group's number is its place everywhere.

    Returns
    -------
    dict
        ``confirmation`` (always) and ``hypotheses`` (when the groups were merged), for ``explanation.json``.
    """
    out = {"confirmation": plan.header()}
    hyps = list(part.hypotheses_) if part.hypotheses_ is not None else None
    first = next(iter(exps.values()))
    order = list(range(len(first.hard_clusters)))
    tests = {}
    if plan.mask is not None:
        rows = np.flatnonzero(plan.mask & plan.counted)
        statements = _statements(exps, index)
        if hyps is not None:  # each hypothesis's own description leads it
            leading = [index.grammar.render(h.description.conditions) for h in hyps]
            known = {st["text"] for st in statements}
            for h, text in zip(hyps, leading):
                if text not in known:
                    known.add(text)
                    statements.append({"text": text, "sentence": None, "conditions": dict(h.description.conditions)})
        else:
            from .text import first_method

            lead = exps[first_method(exps)[0]]
            leading = [(lead.cluster_sentences(i) or [None])[0] for i in order]
        regions = _regions(part, index, tau, statements, relevance)
        found = [region_test(regions[:, j], plan.failed, rows) for j in range(len(statements))]
        q = bh_qvalues([t.p_value for t in found])
        for j, (s, t) in enumerate(zip(statements, found)):
            s.update(t.to_dict(), q_value=float(f"{q[j]:.3g}"), confirmed=is_confirmed(q[j], t.effect_low))
            s["significant"] = bool(q[j] <= CONFIRM_Q)  # q alone, without the effect asked (issue 33's definition)
            if s["confirmed"]:
                s["ablation"] = _ablate(part, index, tau, plan, s, regions[:, j], rows, relevance)
                s["narrower"] = _narrow(part, index, tau, plan, s, regions[:, j], rows, relevance)
            if "conditions" in s:
                from ..grammar import format_conditions

                s["conditions"] = format_conditions(s["conditions"])
        tests = {s["text"]: (j, s) for j, s in enumerate(statements)}
        # every confirmed statement, strongest first, tested beyond those above it: one that goes with a stronger
        # one (a confounder: 'foggy, at night' beside 'at night in the rain') adds no failure of its own
        ranked = sorted(
            (j for j, st in enumerate(statements) if st["confirmed"]), key=lambda j: rank_key(statements[j])
        )
        ranked = [ranked[k] for k in broader_first(ranked, statements, regions, plan.failed, rows)]
        ranked = [ranked[k] for k in explaining_first(ranked, statements, regions, plan.failed, rows)]
        for j, b in zip(ranked, beyond_the_groups_above(ranked, statements, regions, plan.failed, rows)):
            if b is not None:
                above = [ranked[k] for k in b.pop("groups_above")]
                # the held-out images it shares with each: a companion is said to go with the one it shares most
                # with, not the strongest (trial 30: "a hand, tilted" named beside the glare failure, not the hand's)
                shared = [int(np.count_nonzero(regions[rows, j] & regions[rows, k])) for k in above]
                statements[j]["beyond"] = {**b, "above": above, "shared": shared}
                if b["confirmed"] and (k := within_a_stronger(j, above, statements)) is not None:
                    statements[j]["beyond"]["within"] = k  # its images may be that one's, as the encoder misses them
        from .confirm_text import adds_a_failure

        for j in ranked:  # every image a finding holds for, found on or held out: the report's browser of it
            if adds_a_failure(statements[j]):
                statements[j]["holds_for"] = np.flatnonzero(regions[:, j]).tolist()
            else:  # a companion's conditions are not tested: its extra one (a confounder) read "needed" (trial 23)
                statements[j].pop("ablation", None)
        out["confirmation"]["ranked"] = ranked
        args = (first.hard_clusters, statements, regions, leading, tests, plan, performance, rows)
        order, groups = rank_groups(*args)
        # the same ranking by significance alone (q <= CONFIRM_Q, no effect asked): issue 33's definition of a
        # confirmed hypothesis, which the benches report beside the run's (never instead)
        by_q = dict(zip(*rank_groups(*args, flag="significant")))
        for i, g in zip(order, groups):
            g["confirmed_at_q"] = by_q[i]["confirmed"]
        for e in exps.values():
            e.hard_clusters = [e.hard_clusters[i] for i in order]
            e.params["confirm"] = plan.fraction
            e.params["n_held_out"] = int(plan.mask.sum())
        out["confirmation"].update(statements=statements, groups=groups)
    else:
        if performance is not None:  # no held-out ranking: the most harmful first, numbered as they are shown
            from .text import group_order

            order = group_order(first.hard_clusters, performance)
            for e in exps.values():
                e.hard_clusters = [e.hard_clusters[i] for i in order]
        for e in exps.values():
            e.params["confirm"] = plan.fraction
    if hyps is not None:
        out["hypotheses"] = [_hypothesis_entry(hyps[i], plan) for i in order]
        if plan.mask is None and relevance is not None:
            _untested_by_relevance(out["hypotheses"], [hyps[i] for i in order], part, index, tau, relevance)
    return out


def _untested_by_relevance(entries, hyps, part, index, tau, relevance):
    """Untested hypotheses: the hard and easy images their description holds for by the given Γ, counted.

    The line a run that tested nothing shows read the search's soft counts only, with a Γ given: "33 % are hard"
    where by Γ 88 % were (trial 28).
    """
    statements = [{"text": "", "sentence": None, "conditions": dict(h.description.conditions)} for h in hyps]
    regions = _regions(part, index, tau, statements, relevance)
    for entry, st, region in zip(entries, statements, regions.T):
        if st.get("region") == "relevance":
            entry["relevance_counts"] = [int((region & part.hard_mask_).sum()), int((region & part.easy_mask_).sum())]


def _hypothesis_entry(h, plan):
    """A merged hypothesis: its images' error rate beside its description's region statistics, each named."""
    entry = {
        "pieces": h.pieces,
        "images": int(len(h.indices)),
        # the description's region on the discovery images (where it was chosen: biased upward)
        "error_concentration": round(h.concentration, 4),
        "lower_bound": round(h.lower_bound, 4),
        "p_value": float(f"{h.p_value:.3g}"),
    }
    if plan.failed is not None and len(h.indices):
        entry["hypothesis_error_rate"] = round(float(plan.failed[h.indices].mean()), 4)
    return entry
