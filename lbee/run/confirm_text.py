"""A run's confirmation on held-out images, in words: the terminal's, ``report.md``'s and the HTML report's lines."""

from __future__ import annotations

from ..core.confirmation import CONFIRM_Q, MIN_EFFECT
from .condition_words import condition_verdict, conditions_said, narrower_words
from .meaningless import meaningless_caveat


def adds_a_failure(statement):
    """Whether a confirmed statement adds a failure of its own: none stronger holds the failing images it adds.

    False for a companion (a condition that goes with a failure, or a restatement); the terminal, the reports and
    the service client all read this.
    """
    beyond = statement.get("beyond")
    return beyond is None or bool(beyond["confirmed"])


#: What a listed confirmed statement says (`ranked_statements`, the client's ``confirmed``).
STATEMENT_FIELDS = ("text", "n_in", "error_rate_in", "error_rate_out", "lift", "effect_low", "q_value")


def ranked_statements(conf):
    """A run's confirmed statements, strongest first, from its confirmation block (a dict).

    Each is a dict of `STATEMENT_FIELDS`, ``region`` (whose judgement "holds" is: 'relevance', the given Γ, or
    'encoder'), ``adds_failure`` (False for one that confirms only as a companion of a
    stronger statement, whose ``goes_with`` names the strongest) and ``conditions``: each condition's verdict
    (``{phrase: verdict}``) where the run tested them. [] when nothing confirmed or the run did not confirm.
    """
    statements = conf.get("statements") or []
    out = []
    for j in conf.get("ranked") or []:
        s = statements[j]
        entry = {k: s.get(k) for k in STATEMENT_FIELDS}
        entry["adds_failure"] = adds_a_failure(s)
        entry["region"] = "relevance" if s.get("region") == "relevance" else "encoder"  # whose "holds" (trial 39)
        if s.get("holds_for") is not None:  # every image it holds for (positions in the run's images)
            entry["holds_for"] = list(s["holds_for"])
        above = [] if entry["adds_failure"] else stronger_than(s, statements)
        if above:
            entry["goes_with"] = above[0]
        within = (s.get("beyond") or {}).get("within")
        if entry["adds_failure"] and within is not None:  # its images may be a stronger finding's, missed
            entry["may_be_misses_of"] = statements[within]["text"]
        if s.get("ablation"):  # the words the terminal and the reports say (trial 29 read two for one verdict)
            entry["conditions"] = {a.get("phrase") or a["condition"]: condition_verdict(a) for a in s["ablation"]}
        if may_need := narrower_words(s.get("narrower")):
            entry["may_need"] = may_need
        out.append(entry)
    return out


def plain_finding(statement, conf):
    """A confirmed statement's test in one plain sentence, for a reader new to lift and q-values.

    "The model is wrong on 17 of the 19 held-out images this holds for (89 %), against 4 % of the other held-out
    images." (trial 26 read "lift 21.4; q = 4.7e-12" first). With a performance that is not right / wrong, the
    outcome's words instead.
    """
    s = statement
    if conf.get("outcome") == "error rate" and s.get("errors_in") is not None:
        return (
            f"The model is wrong on {s['errors_in']} of the {s['n_in']} held-out images this holds for "
            f"({100 * s['error_rate_in']:.0f} %), against {100 * s['error_rate_out']:.0f} % of the other held-out "
            "images."
        )
    return (
        f"On the {s['n_in']} held-out images this holds for, the {conf.get('outcome', 'error rate')} is "
        f"{s['error_rate_in']:.2f}, against {s['error_rate_out']:.2f} on the other held-out images."
    )


def with_images(statements, ids):
    """`ranked_statements` entries, each with ``images``: the ids of the images it holds for (``ids``: the run's).

    A twenty-sixth user dug them out of the confirmation block; the library's and the client's ``confirmed()`` list
    them. Every entry has ``images`` and ``conditions``: a companion of a stronger finding, which holds for no
    images of its own and tests no condition, has them empty (a loop over the findings' images met a KeyError).
    """
    return [
        {
            **s,
            "images": [ids[i] for i in s.get("holds_for", ()) if 0 <= i < len(ids)],
            "conditions": s.get("conditions") or {},
        }
        for s in statements
    ]


def stronger_than(statement, statements):
    """The texts of the stronger confirmed statements ``statement`` was tested beyond.

    Those it shares the most held-out images with first (what it goes with), then the strongest first; strongest
    first alone for a run that recorded no shares.
    """
    beyond = statement.get("beyond") or {}
    above = list(beyond.get("above") or ())
    shared = beyond.get("shared")
    if shared is not None and len(shared) == len(above):
        order = sorted(range(len(above)), key=lambda k: -shared[k])  # stable: ties stay strongest first
        above = [above[k] for k in order]
    return [statements[k]["text"] for k in above]


def misses_caution(statement, statements, named=None):
    """A caution on a finding whose conditions are some of a stronger finding's ('' when none applies).

    Judged by the encoder, the failing images such a broader statement adds may be the stronger finding's that
    the encoder misses (`lbee.run.confirm_rank.within_a_stronger`); ``named``: how to name the stronger one
    (its quoted text by default).
    """
    k = (statement.get("beyond") or {}).get("within")
    if k is None or not 0 <= k < len(statements):
        return ""
    named = named or f'"{statements[k]["text"]}"'
    return (
        f"; caution: its conditions are some of {named}'s, so the images it adds may be that failure's as the "
        "encoder misses them (--relevance tells them apart)"
    )


def _weak(t):
    """Why a significant test still does not confirm: its effect's lower bound is under `MIN_EFFECT` ('' else)."""
    low = t.get("effect_low")
    if low is None or t.get("q_value", t["p_value"]) > CONFIRM_Q or low >= MIN_EFFECT:
        return ""
    shown = f"{low:.2f}" if low >= MIN_EFFECT - 0.05 else f"{low:.1f}"  # 1.97 shown as "2.0" read as enough
    return (
        f", but at least {shown}× as often as the rest (95 % sure), under the {MIN_EFFECT:g}× lbee asks: too weak "
        "to act on"
    )


def _judged_by(s):
    """Whose word says which held-out images a statement is true of: the given Γ, or the encoder's.

    A twelfth user took a confirmation without Γ for ground truth.
    """
    if s.get("region") == "relevance":
        return " by the given Γ"
    if s.get("conditions"):
        return " by the encoder (its atoms' composed relevance; give --relevance for ground truth)"
    return " by the encoder (similarity above τ; give --relevance for ground truth)"


def confirmation_note(conf):
    """One line on the run's confirmation when it was skipped or turned off (None when it ran, or no record)."""
    if not conf or conf.get("status") == "done":
        return None
    # said in the terminal and report.md (the HTML report says it once, in its overview): short (a thirty-fifth
    # user read its 60 words eight times)
    said = f"Confirmation on held-out images {conf['status']}: {conf.get('reason', '')}."
    return said + " Read each group as found, not confirmed."


def confirmation_lines(conf, i):
    """Hard group ``i``'s leading statement tested on held-out images, and which of its conditions are needed."""
    if not conf or conf.get("status") != "done" or i >= len(conf.get("groups", ())):
        return []
    g = conf["groups"][i]
    if g["statement"] is None:
        return ["NOT CONFIRMED: no statement to test on the held-out images"]
    s = conf["statements"][g["statement"]]
    by = _judged_by(s)
    if not s["n_in"]:  # no held-out image to test it on: no error rate, no interval worth printing
        where = "the given Γ holds it for none" if s.get("region") == "relevance" else "the encoder holds it for none"
        return [
            f"its statement NOT CONFIRMED: it holds for none of the {conf['n_held_out']} held-out images ({where}): "
            "it cannot be tested there"
        ]
    lift = "∞" if s["lift"] is None else f"{s['lift']:.1f}"
    own = (
        f"on {conf['n_held_out']} held-out images: the images it is true of{by}, {s['n_in']}, "
        f"{conf['outcome']} {s['error_rate_in']:.2f} (95 % CI {s['ci'][0]:.2f}–{s['ci'][1]:.2f}) against "
        f"{s['error_rate_out']:.2f} outside, lift {lift}, q = {s['q_value']:.2g}{_weak(s)}"
    )
    b = g.get("beyond")
    # the statement is what is tested, not the group: a group of few errors can still hold a statement that
    # confirms, so the line says whose verdict it is
    if b is not None and not b["confirmed"] and not b["n_in"]:  # the same statement as a stronger group's, or
        # one within it: nothing of its own to test (a thirteenth user read 'NOT CONFIRMED' on the top statement)
        above = ", ".join(map(str, b["groups_above"]))
        lines = [
            f"its statement holds only where that of group{'s' if len(b['groups_above']) > 1 else ''} {above} does "
            f"(the same statement, or one within it), confirmed there: no failure of its own ({own})"
        ]
    elif b is not None and not b["confirmed"]:
        above = ", ".join(map(str, b["groups_above"]))
        said = "confirmed, but it adds" if s["confirmed"] else "NOT CONFIRMED: it adds"  # group_verdict's words
        lines = [
            f"its statement {said} no failure to group{'s' if len(b['groups_above']) > 1 else ''} "
            f"{above}, whose statements are stronger ({own}; but the {b['n_in']} of them those statements do not "
            "hold for fail at "
            f"{b['error_rate_in']:.2f}, against {b['error_rate_out']:.2f} for the rest, p = {b['p_value']:.2g}"
            f"{_weak(b)})"
        ]
    elif g.get("not_a_failure", "").startswith("its statement holds for") and s["confirmed"]:
        lines = [f"NOT CONFIRMED for this group: {g['not_a_failure']}; the statement is confirmed elsewhere {own}"]
    elif g.get("not_a_failure") and s["confirmed"]:  # the statement holds; this group is not where it fails
        lines = [f"NOT CONFIRMED as a failure of its own ({g['not_a_failure']}); its statement holds {own}"]
    else:
        lines = [f"its statement {'CONFIRMED' if g['confirmed'] else 'NOT CONFIRMED'} {own}"]
        companion = g["confirmed"] and not adds_a_failure(s)  # among all confirmed statements, beyond the stronger
        above = "" if b is None else ", ".join(map(str, b["groups_above"]))
        above = f"group{'s' if b is not None and len(b['groups_above']) > 1 else ''} {above}"
        if companion:  # one verdict: an eleventh and a twenty-first user read "of its own" and "adds no failure"
            first = next(iter(stronger_than(s, conf["statements"])), None)
            beyond = (
                ""
                if b is None
                else f"the {b['n_in']} of its images that the statements of {above} do not hold for fail at "
                f"{b['error_rate_in']:.2f} against {b['error_rate_out']:.2f}, but "
            )
            # the group is a failure: what fails in it is the stronger finding, which its statement adds a condition
            # to (a twenty-seventh user's failure group was told its statement "goes with that failure"), or leaves
            # one out of (trial 38's "walnut, wet" beside "walnut, on a roller conveyor, wet" was said to add one)
            lines.append(
                f"{beyond}what fails here is said by a stronger confirmed statement"
                + (f' ("{first}")' if first else "")
                + f": this group's statement {_beside(s, first, conf['statements'])} (the findings are listed first)"
            )
        elif b is not None:
            lines.append(
                f"beyond the statements of {above}: the {b['n_in']} images only it holds for fail at "
                f"{b['error_rate_in']:.2f} against {b['error_rate_out']:.2f}, p = {b['p_value']:.2g}: a failure of "
                f"its own{misses_caution(s, conf['statements'])}"
            )
    for a in s.get("ablation") or []:
        said = f"'{a['phrase']}'" if a.get("phrase") else a["condition"]
        kept = (
            "it kept out no image"  # the demo read "the 0 it kept out : too few images to tell" (trial 21)
            if not a["n_excluded"] or a["error_rate_excluded"] is None
            else f"the {a['n_excluded']} it kept out fail at {a['error_rate_excluded']:.2f}"
        )
        lines.append(f"without {said}: {a['n']} images, {a['error_rate']:.2f}; {kept}: {condition_verdict(a)}")
    if said := narrower_words(s.get("narrower")):
        lines.append(said)
    return lines


def _beside(statement, stronger, statements):
    """How a companion's statement stands to the stronger one it goes with, by their conditions (run-layer words)."""
    from ..grammar import parse_conditions

    def conditions(st):  # as `lbee.run.confirm_rank.within_a_stronger` reads them; none where unreadable
        try:
            return set(parse_conditions(st.get("conditions") or "").items()) if isinstance(st, dict) else set()
        except ValueError:
            return set()

    own = conditions(statement)
    other = next((conditions(st) for st in statements if st["text"] == stronger), set())
    if own and other and own < other:
        return "leaves out a condition of that one, so it holds beyond what fails"
    if own and other and not own > other:
        return "goes with that failure, with conditions of its own"
    return "adds a condition that goes with that failure"


def holds_words(s):
    """A finding's size, then its test's sample ("holds for 82 of all the images (by the encoder); on the 25 ...").

    The size first (a thirty-sixth user read the held-out count as the failure's size), and whose (trial 37 read
    "holds for 82 images; on the 25 held out" beside a group of 52 as three counts of one set).
    """
    by = " (by the given Γ)" if s.get("region") == "relevance" else " (by the encoder)"
    holds = s.get("holds_for")
    if holds is None:
        return f"on the {s['n_in']} held-out images it holds for{by}, "
    return f"holds for {len(holds)} of all the images{by}; on the {s['n_in']} of them held out, "


#: Confirmed statements the terminal lists in full (those adding a failure of their own); explanation.json has all.
STATEMENTS_LISTED = 6


def confirmed_statements_lines(conf, *, every=False, meaningless=False):
    """The run's confirmed statements, strongest first, each tested beyond those above it (none: []).

    Those that add a failure of their own are listed (at most `STATEMENTS_LISTED`); those that add none, as a
    confounder beside the failure's own statement, are counted on one line that names a few. ``every``: list them
    all, each on its own line (``report.md`` and the HTML report: a file has room, an eleventh user missed 3 of 6).
    ``meaningless``: the run's sentences mean nothing (it has `lbee.run.identity.random_weights_banner`): the first
    line says what "confirmed" is worth then (`lbee.run.meaningless.meaningless_caveat`).
    """
    if not conf or conf.get("status") != "done" or not conf.get("ranked"):
        return []
    statements, ranked = conf["statements"], conf["ranked"]
    own = [j for j in ranked if adds_a_failure(statements[j])]
    listed = own if every else own[:STATEMENTS_LISTED]
    number = {j: k for k, j in enumerate(listed, 1)}
    lines = []
    for j in listed:
        s = statements[j]
        lift = "∞" if s["lift"] is None else f"{s['lift']:.1f}"
        said = f'{number[j]}. "{s["text"]}": {holds_words(s)}{conf["outcome"]} {s["error_rate_in"]:.2f} '
        said += f"against {s['error_rate_out']:.2f}, lift {lift}"
        b = s.get("beyond")
        if b is not None:
            said += (
                f"; the {b['n_in']} images only it holds for, beyond those above, fail at {b['error_rate_in']:.2f} "
                f"against {b['error_rate_out']:.2f} (p = {b['p_value']:.2g})"
            )
            k = b.get("within")
            said += misses_caution(s, statements, f"finding {number[k]}" if k in number else None)
        lines.append(said + conditions_said(s))
    if len(own) > len(listed):
        lines.append(f"and {len(own) - len(listed)} more that add a failure of their own (explanation.json)")
    goes_with = [j for j in ranked if j not in own]
    one = len(goes_with) == 1  # "1 more confirms ...: it goes with them" (a fifteenth user read "1 more confirm")
    more = (
        f"{len(goes_with)} more {'confirms' if one else 'confirm'} but {'adds' if one else 'add'} no failure beyond "
        f"those above: {'it goes' if one else 'they go'} with them (a condition that accompanies a failure, or a "
        "restatement)"
    )
    if goes_with and every:
        lines.append(more + ":")
        for j in goes_with:
            above = stronger_than(statements[j], statements)
            first = f', most of all "{above[0]}"' if len(above) > 1 else f': "{above[0]}"' if above else ""
            lines.append(f'    "{statements[j]["text"]}" (goes with {len(above)} stronger{first})')
    elif goes_with:
        named = "; ".join(f'"{statements[j]["text"]}"' for j in goes_with[:3])
        lines.append(f"{more}, e.g. {named}")
    head = f"Confirmed on {conf['n_held_out']} held-out images, strongest first, each tested beyond those above it"
    caveat = f"; but {meaningless_caveat([statements[j] for j in ranked])}:" if meaningless else ":"
    return [head + caveat] + lines


def _group_test(conf, i):
    """Hard group ``i``'s entry of the run's confirmation with its leading statement's test (None when none)."""
    if not conf or conf.get("status") != "done" or i >= len(conf.get("groups", ())):
        return None
    g = conf["groups"][i]
    return {
        **g,
        "statement": None if g["statement"] is None else conf["statements"][g["statement"]],
        "verdict": group_verdict(conf, i),
    }


#: A hard group's verdicts on held-out images (`group_verdict`), in the words every view uses.
VERDICTS = ("confirmed", "goes with", "not confirmed")


def group_verdict(conf, i):
    """Hard group ``i``'s verdict on the held-out images, said the same way by the terminal, the reports and JSON.

    A twenty-sixth user read "confirm but add no failure" of a statement in the findings, "not confirmed" of the same
    statement in its group, and ``statement.confirmed: true`` beside ``confirmed: false``: a statement that confirms
    but adds no failure beyond a stronger group's is neither.

    Returns
    -------
    dict or None
        ``verdict``: 'confirmed' (its statement confirms as a failure), 'goes with' (its statement confirms, but the
        images it adds beyond stronger groups' statements fail no more than the rest: it goes with their failure) or
        'not confirmed'; ``finding``: the statement that says what fails here (for a confirmed statement that goes
        with a stronger confirmed one, that one: the failure without the condition that goes with it);
        ``groups_above``: the stronger groups ('goes with'). None when the run tested nothing.
    """
    if not conf or conf.get("status") != "done" or i >= len(conf.get("groups", ())):
        return None
    g = conf["groups"][i]
    s = None if g.get("statement") is None else conf["statements"][g["statement"]]
    if s is None:
        return {"verdict": "not confirmed", "finding": None, "groups_above": []}
    if g.get("confirmed"):
        above = [] if adds_a_failure(s) else stronger_than(s, conf["statements"])
        return {"verdict": "confirmed", "finding": above[0] if above else s["text"], "groups_above": []}
    b = g.get("beyond")
    if s["confirmed"] and b is not None and not b["confirmed"] and not g.get("not_a_failure"):
        return {"verdict": "goes with", "finding": s["text"], "groups_above": list(b["groups_above"])}
    return {"verdict": "not confirmed", "finding": s["text"], "groups_above": []}


def verdict_words(verdict):
    """A verdict in a few words: 'confirmed', 'goes with group 0' or 'not confirmed' ('' for an untested run)."""
    if verdict is None:
        return ""
    if verdict["verdict"] == "goes with":
        above = verdict["groups_above"]
        return f"confirmed, goes with group{'s' if len(above) > 1 else ''} {', '.join(map(str, above))}"
    return verdict["verdict"]


def unconfirmed_line(conf, i):
    """Hard group ``i``'s statement in one line when the group is not a confirmed failure of its own."""
    g = conf["groups"][i]
    s = None if g.get("statement") is None else conf["statements"][g["statement"]]
    if s is None or not s.get("n_in"):
        return "not confirmed: its statement holds for no held-out image (lbee -v describe says more)"
    rates = f"fail at {s['error_rate_in']:.2f}, the rest at {s['error_rate_out']:.2f}"
    tested = f"the {s['n_in']} its statement holds for {rates}"
    verdict = group_verdict(conf, i)
    if verdict is not None and verdict["verdict"] == "goes with":
        b = g["beyond"]
        # why its own images are no failure: chance, or too small an effect (a twenty-seventh user read "not beyond
        # chance (p = 0.0056)" of one that failed the 2× rule)
        why = _weak(b) or f", not beyond chance (p = {b['p_value']:.2g})"
        rest = (
            f"the {b['n_in']} of them that stronger groups' statements do not hold for fail at "
            f"{b['error_rate_in']:.2f} against {b['error_rate_out']:.2f}{why}"
            if b["n_in"]
            else "stronger groups' statements hold for every one of them"  # not "the 0 of them fail at 0.00" (28)
        )
        return (
            f"{verdict_words(verdict)}: on the held-out images {tested} (confirmed), but {rest}: it adds no failure "
            "of its own (lbee -v describe says more)"
        )
    if g.get("not_a_failure", "").startswith("its statement holds for"):  # said first: "the 1 it holds for" was
        return (  # read as too few held-out images, not as a statement that misdescribes its group (trial 31)
            f"not confirmed: {g['not_a_failure']}, so it does not describe this group; on the held-out images "
            f"{tested} (lbee -v describe says more)"
        )
    return f"not confirmed on the held-out images: {tested} (lbee -v describe says more)"


def per_class_limits(grammar=False):
    """What a per-class run does not do, in words: the terminal's and the per-class page's one sentence.

    ``grammar``: the sentences are a grammar's, so a whole-dataset run would lead with 'compose' (a twenty-third user
    found it silently dropped per class, and the confounder named instead of the failure).
    """
    said = (
        "Per class, lbee does not confirm statements on held-out images (a class's images are too few to hold some "
        "out): each class's statements are found on all its images"
    )
    if grammar:
        said += (
            ", and 'compose' does not run (nor the merging of groups into one hypothesis per failure): the "
            "describers are the four of the paper and Domino's"
        )
    return said + ". A whole-dataset run (without --per-class) does both and names each failure in one statement."
