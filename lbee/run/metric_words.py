"""The words printed under a run's AHR / ACR / TPR / JI: what each measures, and what they count."""

from __future__ import annotations

from .folded import FEW_IMAGES

#: Under the metrics when 'compose' is among the methods: its TPR and JI count the sentences it returns.
COMPOSE_METRICS_NOTE = (
    "compose returns one sentence a group (or two), where the others return K, so its TPR and JI, which count the "
    "failure sentences found, are low by design; read its AHR, and its sentence itself"
)


def metric_legend(methods=(), few=()):
    """The AHR / ACR / TPR / JI legend every command prints under its metrics, wrapped to `line_width`.

    With 'compose' among ``methods``, a note that its TPR and JI are low by design (an eleventh user read its one
    exact sentence, scored lowest, as the worst). ``few``: the sizes of the hard groups of fewer than `FEW_IMAGES`
    images, which the terminal folds into one line and the averages count as much as any other (trial 41 read
    compose's AHR 0.50 on an exact finding beside a 4-image group).
    """
    import textwrap

    from ..core.evaluation import METRIC_WORDS
    from .text import line_width

    said = [f"({key}: {words})" for key, words in METRIC_WORDS.items()]
    if "compose" in methods:
        said.append(f"({COMPOSE_METRICS_NOTE})")
    if len(few):
        one = len(few) == 1
        said.append(
            f"(each hard group counts once in AHR and ACR: the {len(few)} group{'' if one else 's'} of fewer than "
            f"{FEW_IMAGES} images ({', '.join(map(str, few))} images) {'counts' if one else 'count'} as much as the "
            "others)"
        )
    return "\n".join(textwrap.fill(t, line_width(), initial_indent="  ", subsequent_indent="   ") for t in said)
