"""A confirmed statement's conditions, each dropped in turn on held-out images, in words (`lbee.core.confirmation`).

The terminal, ``report.md``, the HTML report and the library's ``conditions`` say them alike.
"""

from __future__ import annotations

#: A condition's verdict when dropping it keeps out no held-out image: it holds wherever the others do.
ADDS_NOTHING_SHORT = "adds nothing here"
ADDS_NOTHING = f"{ADDS_NOTHING_SHORT} (it holds wherever the others do)"


def condition_verdict(a, *, short=False):
    """The verdict of an ablated condition ``a`` in the words the terminal, the reports and the library say.

    `ADDS_NOTHING` when dropping it kept out no held-out image ("but no scratch" beside "a solder bridge", "a large
    square" in a world of large squares: a twenty-fourth user read "too few images to tell" as doubt about a
    condition that says nothing the others do not); else its verdict (`lbee.core.confirmation`), or with ``short``
    its one- or two-word form. "Too few images to tell" says about how many images would tell (`images_to_tell`:
    a thirty-seventh user's absence was undecided at 700 images, with no word of how many more).
    """
    from ..core.confirmation import NEEDED, NOT_NEEDED, UNCLEAR, UNDECIDED

    if not a.get("n_excluded"):
        return ADDS_NOTHING_SHORT if short else ADDS_NOTHING
    words = {NEEDED: "needed", NOT_NEEDED: "not needed", UNDECIDED: "too few images to tell", UNCLEAR: "not clear"}
    said = words.get(a["verdict"], a["verdict"]) if short else a["verdict"]
    if a["verdict"] == UNDECIDED and isinstance(a.get("images_to_tell"), int):
        said += f" (about {_rounded_up(a['images_to_tell']):,} images in all would)"
    return said


def _rounded_up(n):
    """``n`` rounded up to two significant digits (2,334 → 2,400): an estimate said as one."""
    step = 10 ** max(len(str(int(n))) - 2, 0)
    return -(-int(n) // step) * step


def conditions_said(s):
    """The ablation of a listed statement, as ``"; its conditions: 'A' needed, 'B' not clear"`` ("" without one).

    A twenty-second user found it only in explanation.json.
    """
    said = [
        f"'{a.get('phrase') or a['condition']}' {condition_verdict(a, short=True)}" for a in s.get("ablation") or ()
    ]
    more = f"; it may need '{s['narrower']['phrase']}' too" if narrower_words(s.get("narrower")) else ""
    return (f"; its conditions: {', '.join(said)}" if said else "") + more


def narrower_words(n):
    """A statement's `narrower` record in words: the condition its failure may need too (trial 38); '' for none.

    A record read back from a run's ``explanation.json`` is said only when whole (an older run has none).
    """
    text, number = (("phrase", "with"), ("n_left_out", "n", "error_rate_left_out", "error_rate", "p_value"))
    if not (
        isinstance(n, dict)
        and all(isinstance(n.get(k), str) for k in text)
        and all(isinstance(n.get(k), (int, float)) and not isinstance(n.get(k), bool) for k in number)
    ):
        return ""
    return (
        f"the failure may need '{n['phrase']}' too: the {n['n_left_out']} of its images without it fail at "
        f'{n["error_rate_left_out"]:.2f}, the {n["n"]} with it at {n["error_rate"]:.2f} ("{n["with"]}"), '
        f"p = {n['p_value']:.2g}"
    )
