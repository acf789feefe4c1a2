"""Plain-text views of a run: the Markdown report and the terminal table."""

from __future__ import annotations

import re
import secrets

import numpy as np

from .confirm_text import (  # noqa: F401  (named from here too)
    _group_test,
    confirmation_lines,
    confirmation_note,
    confirmed_statements_lines,
    ranked_statements,
    unconfirmed_line,
)
from .folded import FEW_IMAGES, calm_line, few_line  # noqa: F401  (named from here too)
from .metric_words import COMPOSE_METRICS_NOTE, metric_legend  # noqa: F401  (named from here too)
from .summary import summary_dict  # noqa: F401  (named from here too)
from .untested import untested_statement_lines


def _fmt(x):
    return "nan" if x is None or (isinstance(x, float) and np.isnan(x)) else f"{x:.3f}"


def group_order(hard_clusters, performance, conf=None):
    """The order hard groups are shown in, everywhere (terminal, ``report.md``, the HTML report).

    When the run's statements were confirmed on held-out images, the run's own order (confirmed groups first, then
    the others, each most harmful first: `lbee.run.confirm`). Otherwise by harm, (1 − mean ω) × size,
    the most harmful first: the failures before the groups of the least confident right images.

    Returns
    -------
    list of int
        Indices into ``hard_clusters``.
    """
    from ..core.explanation import harm_order

    if conf and conf.get("status") == "done":
        return list(range(len(hard_clusters)))
    return harm_order(hard_clusters, performance)


def unassigned_line(explanation):
    """The line on the hard images in no hypothesis (None when there are none): they are hard, in no group."""
    left = explanation.unassigned
    if left is None or not len(left):
        return None
    return (
        f"{len(left)} hard images are in no hypothesis (a hypothesis keeps what its description picks out): "
        "split hard, group -1 in assignments.parquet and images.parquet."
    )


def said_sentences(explanation, method, i):
    """Group ``i``'s sentences by ``method`` as text, or one line saying why it has none (``NO_SENTENCE``)."""
    from ..core.selection import NO_SENTENCE

    return [str(t) for t in explanation.cluster_sentences(i)] or [NO_SENTENCE.get(method, "(no sentence)")]


def render_markdown(result, metrics=None, n_examples=5):
    """``report.md``: per hard cluster its size, mean confidence, example images and each method's sentences."""
    exps = result.explanations
    first = next(iter(exps.values()))
    p = first.params
    from .identity import encoder_note, encoder_words, random_weights_banner, weights_words

    banner, note = random_weights_banner(result.encoder), encoder_note(result.encoder)
    mark = secrets.token_hex(8)  # brackets each code span below: no text of the user's holds it (sweep 32bc)
    lines = [
        "# lbee report",
        "",
        *([f"> **{banner}**", ""] if banner else []),
        *([f"> {note}", ""] if note else []),
        f"- encoder: {encoder_words(result.encoder)}, weights {weights_words(result.encoder)} "
        f"(`{result.encoder.get('weights', '')}`)",
        *([f"- split: {result.extra['split_criterion']}"] if result.extra.get("split_criterion") else []),
        f"- sentence set: `{result.sentence_set}` ({_sentence_count(result)})",
        f"- images: {p['n_images']} embedded ({p['n_hard']} hard, {p['n_easy']} easy), {len(result.failures)} skipped",
        *([f"- {unassigned_line(first)}"] if unassigned_line(first) else []),
        f"- a={p['a']}, clusters={_asked_formed(p, 'n_clusters', 'n_hard_clusters_formed')}"
        + (
            f" (the clustering's {p['n_slicer_groups']} groups merged into one hypothesis per failure)"
            if p.get("n_slicer_groups") not in (None, p.get("n_hard_clusters_formed"))
            else ""
        )
        + ", "
        f"easy clusters={_asked_formed(p, 'n_easy_clusters', 'n_easy_clusters_formed')}, k={p['k']}, "
        f"tau={p['tau']:.4g}",
        "",
    ]
    from .join import alike_groups

    # what holds for the whole run before any group, as the terminal and the HTML report say it (trial 33 found
    # the confirmation's caveat on the last lines, and the groups that read alike in the terminal only)
    note = confirmation_note(result.extra.get("confirmation"))
    lines += [f"> {said}\n" for said in ([note] if note else []) + alike_groups(result)]
    if metrics:
        lines += ["## Metrics", "", "| method | AHR | ACR | TPR | JI | |S*| |", "|---|---|---|---|---|---|"]
        for m, s in metrics.items():
            lines.append(
                f"| {m} | {_fmt(s['AHR'])} | {_fmt(s['ACR'])} | {_fmt(s['TPR'])} | {_fmt(s['JI'])} | "
                f"{s['n_failure_sentences']} |"
            )
        lines.append("")
    methods = list(exps)
    ranked = confirmed_statements_lines(result.extra.get("confirmation"), every=True, meaningless=banner is not None)
    if ranked:  # the findings before the groups they were found in (a twenty-second user read them last)
        items = [f"  - {t.strip()}" if t.startswith("    ") else t if t[:1].isdigit() else f"- {t}" for t in ranked[1:]]
        lines += ["## Confirmed statements", "", ranked[0], ""] + items + [""]
        lines += [f"{t}\n" for t in _unplaced_lines(result)]
    lines += ["## Hard groups", ""]
    for i in group_order(first.hard_clusters, result.performance, result.extra.get("confirmation")):
        c = first.hard_clusters[i]
        idx = c.indices
        err = (
            1.0 - float(np.mean(result.performance[idx])) if set(np.unique(result.performance)) <= {0.0, 1.0} else None
        )
        lines.append(
            f"### Hard group {i} ({len(idx)} image{'' if len(idx) == 1 else 's'}, mean confidence "
            f"{np.mean(result.confidence[idx]):.3f}"
            + (f", error rate {err:.2f}" if err is not None else "")
            + f", compared with easy cluster {c.easy_cluster})"
        )
        lines.append("")
        said = confirmation_lines(result.extra.get("confirmation"), i) + untested_statement_lines(result.extra, p, i)
        lines += [f"- {t}" for t in said] + ([""] if said else [])
        least = np.asarray(idx)[np.argsort(np.asarray(result.confidence)[idx], kind="stable")[:n_examples]]
        shown = [result.image_ids[j] for j in least]  # the clearest failures, as the HTML report's strip
        lines.append("Least confident: " + ", ".join(mark + _code(s) + mark for s in shown))
        lines.append("")
        lines.append("| rank | " + " | ".join(methods) + " |")
        lines.append("|---|" + "---|" * len(methods))
        for r in range(max(1, *(len(exps[m].hard_clusters[i].sentences) for m in methods))):
            cells = []
            for m in methods:  # a describer with none says why, as in the terminal (trial 42: an empty column)
                sent = said_sentences(exps[m], m, i)
                cells.append(re.sub(r"([\\[\]|])", r"\\\1", sent[r]) if r < len(sent) else "")  # no link (32bd N1)
            lines.append(f"| {r + 1} | " + " | ".join(cells) + " |")
        lines.append("")
    if result.failures:
        lines += ["## Skipped images", ""] + [f"- {mark}{_code(p)}{mark}: {r}" for p, r in result.failures] + [""]
    # ids, sentences and names are the user's text: no '<' of theirs opens raw HTML in a markdown viewer (sweep
    # 32au N4); lbee's own words hold none. A code span shows its '<' as typed: kept (sweep 32bb N8: "&lt;")
    parts = "\n".join(lines).split(mark)  # (text, span, text, ...)
    return "".join(t if k % 2 else t.replace("<", "&lt;") for k, t in enumerate(parts))


def _code(text):
    """``text`` as a code span (a fence longer than its backticks), a control character as its escape."""
    # a line break in a file name ended the span, and the rest was Markdown, raw HTML included (sweep 32bc)
    text = re.sub(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]", lambda m: repr(m.group())[1:-1], str(text))
    fence = "`" * (1 + max(map(len, re.findall("`+", text)), default=0))
    pad = " " if "`" in text else ""  # CommonMark strips one space each side when both are there
    return f"{fence}{pad}{text}{pad}{fence}"


def _columns(width=None):
    import shutil

    return width or max(60, shutil.get_terminal_size((100, 24)).columns)


def line_width():
    """The width the terminal's paragraphs are wrapped to: the terminal's ($COLUMNS), at most 100."""
    return min(_columns(), 100)


def run_header(run, width=None):
    """The terminal's first lines of a run: a framed banner on random weights, encoder, weights, τ, the split.

    Parameters
    ----------
    run : lbee.run.pipeline.RunResult
        A whole-dataset run.

    Returns
    -------
    (str or None, str)
        The banner (framed, for the caller to colour) and the other lines.
    """
    import textwrap

    from .identity import random_weights_banner, run_identity_lines

    result = run.main
    cols = _columns(width)
    lines = [
        textwrap.fill(line, cols, subsequent_indent="  ")
        for line in run_identity_lines(result.encoder, run.tau, result.extra.get("split_criterion"))
    ]
    banner = random_weights_banner(result.encoder)
    return (None if banner is None else frame_banner(banner, width)), "\n".join(lines)


def frame_banner(text, width=None):
    """``text`` between two rules of '!', wrapped to the terminal (at most 100 columns)."""
    import textwrap

    cols = min(_columns(width), 100)
    return "\n".join(["!" * cols, textwrap.fill(text, cols), "!" * cols])


def top_sentences(result, width=None):
    """Each hard group's top sentence per method: a block per group, a line per method (long sentences wrap).

    Groups come in the order of their evidence (`group_order`), as in the report; groups of fewer than
    `FEW_IMAGES` images share one line at the end.
    """
    import textwrap

    exps = result.explanations
    first = next(iter(exps.values()))
    cols = _columns(width)
    pad = max(len(m) for m in exps) + 6
    out, few = [], {}
    for i in group_order(first.hard_clusters, result.performance, result.extra.get("confirmation")):
        size = len(first.hard_clusters[i].indices)
        if size < FEW_IMAGES:
            few[i] = size
            continue
        out.append(f"  hard group {i} ({size} image{'' if size == 1 else 's'})")
        for m, e in exps.items():
            text = str((e.cluster_sentences(i) or ["(no sentence)"])[0])
            out.extend(textwrap.wrap(text, cols, initial_indent=f"    {m:<{pad - 4}}", subsequent_indent=" " * pad))
    if few:
        out.extend(textwrap.wrap(few_line(few), cols + pad, subsequent_indent="    "))
    return "\n".join(out)


def terminal_blocks(result, width=None, *, others=True):
    """One block per hard group: size, error rate, easy twin, and the methods' K sentences, wrapped to fit.

    Groups of fewer than `FEW_IMAGES` images, and unconfirmed ones failing no more often than all images, share a
    line at the end. ``others=False``: the describer to read first (`first_method`) alone (no ``-v``).
    """
    import textwrap

    from .join import others_agree

    exps = result.explanations
    first = next(iter(exps.values()))
    cols = _columns(width)
    omega = np.asarray(result.performance, dtype=float)
    binary = np.isin(omega, (0.0, 1.0)).all()
    groups = (result.extra.get("confirmation") or {}).get("groups") or ()
    rate_all = 1 - omega.mean()
    out, few, calm = [], {}, {}
    for i in group_order(first.hard_clusters, result.performance, result.extra.get("confirmation")):
        c = first.hard_clusters[i]
        if len(c.indices) < FEW_IMAGES:  # folded into one line, as the demo and the HTML report fold them
            few[i] = len(c.indices)
            continue
        confirmed = i < len(groups) and bool(groups[i].get("confirmed"))
        rate_g = 1 - omega[c.indices].mean()
        if binary and not confirmed and rate_g <= rate_all < 0.5:  # an eighteenth user read blocks of groups at
            calm[i] = (len(c.indices), rate_g)  # error rates 0.00-0.09: the least confident right images
            continue
        what = result.extra.get("performance")  # ω as a number means little without what it is (−entropy)
        wrong, n_wrong = int(round((1 - omega[c.indices]).sum())), int(round((1 - omega).sum()))
        held = " (held-out images included)" if first.params.get("n_held_out") else ""  # trial 41: 81 hard, 115 errors
        rate = (  # and its share of the errors: with labels every hard image is wrong, and 1.00 said nothing (trial 29)
            f", error rate {1 - omega[c.indices].mean():.2f} ({wrong} of the {n_wrong} errors in all images{held})"
            if binary
            else f", mean performance {omega[c.indices].mean():.3f}" + (f" (performance = {what})" if what else "")
        )
        size = f"{len(c.indices)} image" + ("" if len(c.indices) == 1 else "s")
        head = f"Hard group {i}: {size}{rate}, compared with easy cluster {c.easy_cluster}"
        out.extend(textwrap.wrap(head, cols, subsequent_indent="  "))
        lead = first_method(exps)[0]
        for m, e in sorted(exps.items(), key=lambda item: item[0] != lead):
            if not others and m != lead:
                continue
            # the best, then the others as such: "A · B · C" read as one statement of three conditions (trial 20)
            said = said_sentences(e, m, i)
            text = said[0] + (f" (also: {' · '.join(said[1:])})" if len(said) > 1 else "")
            out.extend(textwrap.wrap(text, cols, initial_indent=f"  {m:<8} ", subsequent_indent=" " * 11))
        agreed = None if others else others_agree(exps, lead, i)
        if agreed:
            out.extend(textwrap.wrap(agreed, cols, initial_indent=f"  {'others':<8} ", subsequent_indent=" " * 11))
        said = confirmation_lines(result.extra.get("confirmation"), i)
        if not others and not confirmed and said:  # one line (a twenty-second user read three per lead); -v: all
            said = [unconfirmed_line(result.extra["confirmation"], i)]
        for line in said + untested_statement_lines(result.extra, first.params, i):
            out.extend(textwrap.wrap(line, cols, initial_indent="  ", subsequent_indent=" " * 4))
        out.append("")
    if few:
        line = few_line(few).strip()  # a line of its own, as the blocks' "Hard group N:" headings
        out += textwrap.wrap(line[0].upper() + line[1:], cols, subsequent_indent="  ") + [""]
    if calm:
        out += textwrap.wrap(calm_line(calm, rate_all), cols, subsequent_indent="  ") + [""]
    note = confirmation_note(result.extra.get("confirmation"))
    conf = result.extra.get("confirmation") or {}
    from .identity import means_nothing

    ranked = confirmed_statements_lines(conf, meaningless=means_nothing(getattr(result, "encoder", None)))
    # the findings first: a twenty-second user read five unconfirmed groups before the one confirmed statement
    top = []
    if ranked:  # a ninth user found the failure's own sentence, and a confounder beside it, only in the JSON
        top += textwrap.wrap("Findings. " + ranked[0], cols)
        top += [x for t in ranked[1:] for x in textwrap.wrap(t, cols, initial_indent="  ", subsequent_indent="     ")]
        top += [x for t in _unplaced_lines(result) for x in textwrap.wrap(t, cols)]
        top += textwrap.wrap("The hard groups they were found in, and the others:", cols) + [""]
    elif conf.get("status") == "done":
        said = f"No statement confirmed on the {conf.get('n_held_out')} held-out images: the groups below are leads."
        top += textwrap.wrap(said, cols) + [""]
    elif note:  # untested: said before the groups, each of them a lead (a twenty-seventh user read it last)
        top, note = textwrap.wrap(note, cols) + [""], None
    out = top + out
    from .join import alike_groups

    out += [line for said in alike_groups(result) for line in textwrap.wrap(said, cols) + [""]]
    return "\n".join(out + (textwrap.wrap(note, cols) if note else [])).rstrip()


def _sentence_count(result):
    """``153 sentences`` (``+ 1 composed by compose``), as the HTML report counts them (trial 31 read 154 and 153)."""
    n = len(result.sentences)
    base = min((int(e.params.get("n_base_sentences", n)) for e in result.explanations.values()), default=n)
    return f"{base} sentences" + (f", + {n - base} composed by compose" if n > base else "")


def _unplaced_lines(result):
    """A line per finding no hard group states, saying where its images lie (`lbee.run.finding_places`)."""
    from .finding_places import unplaced_findings, unplaced_line

    first = next(iter(result.explanations.values()))
    conf = result.extra.get("confirmation")
    return [unplaced_line(p) for p in unplaced_findings(conf, first.hard_clusters, first.unassigned)]


def groups_line(params, n_groups, settings=None, in_groups=None, held=0):
    """``2000 images: 403 hard, 986 easy; 5 hard groups.``, saying so when the slicer's groups were merged.

    With the run's ``settings`` it also says where the number of groups came from (the default for this many hard
    images, or ``--clusters``), and which groups ``--join`` joined. ``held``: of the hard images in no hypothesis,
    how many a hypothesis's statement holds for by the given Γ (`lbee.reports.other_images.unassigned_holding`).
    """
    line = f"{params['n_images']} images: {params['n_hard']} hard, {params['n_easy']} easy{_neither(params)}; "
    made, joined = params.get("n_slicer_groups"), params.get("joined")
    from .join import joined_words

    said = joined_words(joined)
    before = n_groups + sum(len(e) - 1 for e in joined or ())  # the groups a run without --join shows
    if made is not None and made != before:
        left = params["n_hard"] - in_groups if in_groups is not None else 0
        return line + (
            f"{made} hard groups from the clustering, merged into {_count(before, 'hypothesis', 'hypotheses')} "
            "(groups that one description covers are taken as pieces of one failure and merged)"
            + (f", with groups {said} joined (--join): {n_groups}" if joined else "")
            + (
                f"; {_count(left, 'hard image is', 'hard images are')} in none of them (a hypothesis keeps what its "
                "description picks out, as the encoder sees it"
                + (f"; by the given Γ, a hypothesis's statement holds for {held} of them)." if held else ").")
                if left > 0
                else "."
            )
        )
    why = ""
    if settings is not None and settings.clusters is None and settings.slicer_names[0] == "ward":
        asked = params.get("n_clusters")
        why = (
            f"the default for {params['n_hard']} hard images, one per {_per_group()} below "
            f"{settings.n_clusters * _per_group()}"
            if asked != settings.n_clusters
            else "the default"
        ) + "; --clusters sets it"
    why += "; " * bool(why) + "not merged into hypotheses: the sentences mean nothing" if params.get("unmerged") else ""
    if joined:
        why = f" ({why})" if why else ""
        return line + f"{n_groups} hard groups: the clustering's {before}{why}, with groups {said} joined (--join)."
    return line + f"{n_groups} hard groups" + (f" ({why})." if why else ".")


def _count(n, one, many):
    """``1 hypothesis``, ``3 hypotheses``: a count with its noun (and verb) in the right number."""
    return f"{n} {one if n == 1 else many}"


def _per_group():
    from .settings import IMAGES_PER_DEFAULT_GROUP

    return IMAGES_PER_DEFAULT_GROUP


def first_method(methods, shown=True):
    """The describer to read first, and a line saying so (None when only one ran); ``shown``: the others are too."""
    from ..core.selection import COMPOSE

    methods = list(methods)
    lead = COMPOSE if COMPOSE in methods else "fpdiff" if "fpdiff" in methods else methods[0]
    if len(methods) < 2:
        return lead, None
    why = (
        "a statement per group composed from the grammar's conditions, its best first, then its alternatives"
        if lead == COMPOSE
        else "lbee's default and the LBEE paper's choice: sentences true of a group's images and not of its easy twin's"
        if lead == "fpdiff"
        else "the first asked for"
    )
    return lead, (
        f"Read {lead} first ({why}); the other describers are shown for comparison: a condition several of them "
        "name is the safer reading."
        if shown
        else f"Shown: {lead} ({why}). The other describers' sentences, for comparison, are in report.md and the HTML "
        "report, and here with lbee -v describe."
    )


def order_line(conf, performance=None):
    """The order the groups are listed in, in words (`group_order`).

    ``performance`` (ω, shape (n,)) that is not right / wrong (no labels: ω = −entropy, say) has no error rate,
    and the line says what the order is then.
    """
    if conf and conf.get("status") == "done":
        return (
            "Groups in order of evidence: confirmed on held-out images first, then the others; each most harmful "
            "first (error rate × size)."
        )
    if performance is not None and not np.isin(np.asarray(performance, dtype=float), (0.0, 1.0)).all():
        return (
            "Groups in order of (1 − mean performance) × size, the lowest performance first (without labels there "
            "is no error rate)."
        )
    return "Groups in order of harm: error rate × size, the most harmful first."


def _neither(params):
    """``, 611 in neither (600 held out to confirm the statements, 11 between the two)``, or ''."""
    rest = params["n_images"] - params["n_hard"] - params["n_easy"]
    if rest <= 0:
        return ""
    held = int(params.get("n_held_out") or 0)
    if held >= rest:  # only held-out images: "180 in neither (180 held out ...)" read as a riddle (trial 16)
        return f", {held} held out to confirm the statements"
    parts = ([f"{held} held out to confirm the statements"] if held else []) + [f"{rest - held} of middling confidence"]
    return f", {rest} in neither ({', '.join(parts)})"


def _asked_formed(params, asked, formed):
    """``15``, or ``5000 asked, 607 formed`` when the split was smaller than the clusters asked for."""
    a, f = params.get(asked), params.get(formed)
    return f"{a}" if f is None or f == a else f"{a} asked, {f} formed"
