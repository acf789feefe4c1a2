"""One settings object for every analysis knob: its default, its choices and its validation.

[`RunSettings`][lbee.RunSettings] is the single place where a knob of an analysis run is
defined. The CLI builds its options from it (`settings_options`), the
YAML schema of ``lbee report`` validates against it
([`RunSettings.from_mapping`][lbee.run.settings.RunSettings.from_mapping]),
and the run layer (`lbee.run.pipeline`) reads it. The default *values*
themselves live with the step they belong to (``lbee.core.partition.DEFAULT_A``,
``lbee.core.selection.CLIP_TAU``, ``lbee.core.evaluation.DEFAULT_O``, ...), and
the lists of *choices* with the registry that implements them (``METHODS``,
``SLICERS``, ``WARD_METHODS``, ``CONFIDENCE_KINDS``, ``SPLIT_BY``, ``CLASS_SPLITS``).
"""

from __future__ import annotations

import dataclasses
import difflib
import inspect
import numbers
from dataclasses import dataclass, field

from .._validation import shown
from ..core.clustering import DEFAULT_WARD, TINY_GROUP, WARD_METHODS
from ..core.confirmation import DEFAULT_CONFIRM_FRACTION, MAX_CONFIRM_FRACTION, MIN_CONFIRM_IMAGES
from ..core.evaluation import DEFAULT_O
from ..core.partition import DEFAULT_A, DEFAULT_K, DEFAULT_N_CLUSTERS, DEFAULT_N_CLUSTERS_PER_CLASS
from ..core.selection import CLIP_TAU, DESCRIBERS, METHODS, resolve_tau
from ..scoring.confidence import DEFAULT_CONFIDENCE
from .limits import IGNORE_INDEX_RANGE, MAX_A, MAX_CLUSTERS, MAX_K, MAX_O
from .slicer_options import check_slicer_options

TASKS = ("classification", "segmentation")
#: Hard images per group below which the default number of groups is lowered (as the tiny-group warning advises).
IMAGES_PER_DEFAULT_GROUP = 2 * TINY_GROUP
#: φ from a region-sensitivity run (RIVAL10 §5): per-image iRFS or saliency / mask IoU, classification only.
SENSITIVITY_SPLITS = ("irfs", "saliency")


def _slicer_names():
    from ..slicers import SLICER_NAMES  # the names only: the slicer classes would import scikit-learn

    return SLICER_NAMES


def _choices(name):
    """The allowed values of a choice knob, read from the registry that implements it."""
    if name == "methods":
        return DESCRIBERS
    if name == "slicers":
        return _slicer_names()
    if name == "ward":
        return WARD_METHODS
    if name == "confidence_from":
        from ..scoring.confidence import CONFIDENCE_KINDS

        return CONFIDENCE_KINDS
    if name == "split_by":
        from ..scoring.segmentation import SPLIT_BY

        return SPLIT_BY + SENSITIVITY_SPLITS
    if name == "per_class":
        from ..analyses.per_class import CLASS_SPLITS

        return CLASS_SPLITS
    if name == "task":
        return TASKS
    return None


def _knob(
    default,
    help,
    *,
    kind,
    minimum=None,
    maximum=None,
    optional=False,
    many=False,
    flag=None,
    short=None,
    default_text=None,
    default_factory=None,
):
    meta = dict(help=help, kind=kind, minimum=minimum, maximum=maximum, optional=optional, many=many)
    meta.update(flag=flag, short=short, default_text=default_text)
    if default_factory is not None:
        return field(default_factory=default_factory, metadata=meta)
    return field(default=default, metadata=meta)


@dataclass(frozen=True)
class RunSettings:
    """Every analysis knob of a run, validated; the defaults are the LBEE paper's.

    Parameters
    ----------
    a : float, default=0.2
        How far from the mean confidence an image must be to count as hard or
        easy, in standard deviations: hard below mean − a·std, easy above
        mean + a·std (the LBEE paper's first step).
    clusters : int or None, default=None
        Groups the hard images are clustered into; None means 15 (the LBEE
        paper's setting), fewer below 150 hard images (one group per 10 of
        them), and 5 per class in a per-class run.
    easy_clusters : int or None, default=None
        Groups the easy images are clustered into; None means as many as
        the hard ones.
    k : int, default=3
        Sentences kept per hard group (3 in the LBEE paper).
    tau : float or None, default=None
        Similarity threshold of SetDiff / FPDiff (an image shows a sentence
        above it); None means the encoder's own threshold, else CLIP's 0.25
        ([`resolved_tau`][lbee.RunSettings.resolved_tau]).
    o : float, default=0.2
        Severity of the failure sentences, β = o·std(ω).
    methods : tuple of str, default=('tops', 'setdiff', 'pdiff', 'fpdiff', 'domino')
        The describers (all of them but 'compose').
    slicers : tuple, default=('ward',)
        How the hard images are grouped: 'ward', 'domino', 'planespot' (see
        `lbee.slicers`); in YAML an entry may also be ``{name: {options}}``.
        The first one is the main result.
    ward : str, default='auto'
    confidence_from : {'auto', 'entropy', 'max', 'true_class'}, default='auto'
        How φ is derived from class probabilities: 'auto' is the probability
        of the true class when the predictions carry labels (every error is
        hard, a confident one too), else minus the entropy of the
        prediction.
    task : {'classification', 'segmentation'}, default='classification'
    split_by : {'entropy', 'pixel_accuracy', 'miou', 'irfs', 'saliency'}, default='entropy'
        Segmentation: the per-image score the split uses (entropy, pixel
        accuracy or mean IoU, as in the LBEE paper). Classification: 'irfs' /
        'saliency' take it from a region-sensitivity run (low means the model
        leans on the background, as in the RIVAL10 paper), else the confidence.
    ignore_index : int or None, default=255
        Segmentation: mask value left out of pixel accuracy and mIoU.
    per_class : str or None, default=None
        'errors' or 'probability': analyse each class separately; its hard
        images are the misclassified ones ('errors') or those with a low
        true-class probability ('probability').
    join : tuple of tuple of int, default=()
        Hard groups to join into one before describing, numbered as a run
        without it prints them: ``((1, 2, 3),)``.
    confirm : float, default=0.3
        Share of the images held out (stratified, seeded) to test every
        statement on; 0 turns it off. Skipped, and said so, below 500
        images.
    """

    a: float = _knob(
        DEFAULT_A,
        "How far from the mean confidence an image must be to count as hard or easy, in standard deviations "
        "(a: hard below mean − a·std, easy above mean + a·std).",
        kind=float,
        minimum=0.0,
        maximum=MAX_A,
    )
    clusters: int | None = _knob(
        None,
        "Number of groups the hard images are split into.",
        kind=int,
        minimum=1,
        maximum=MAX_CLUSTERS,
        optional=True,
        default_text=f"{DEFAULT_N_CLUSTERS}; one per {IMAGES_PER_DEFAULT_GROUP} hard images below "
        f"{DEFAULT_N_CLUSTERS * IMAGES_PER_DEFAULT_GROUP}; {DEFAULT_N_CLUSTERS_PER_CLASS} per class, fewer likewise",
    )
    easy_clusters: int | None = _knob(
        None,
        "Number of groups of easy images, the look-alikes each hard group is compared with.",
        kind=int,
        minimum=1,
        maximum=MAX_CLUSTERS,
        optional=True,
        default_text="as many as the hard groups",
    )
    k: int = _knob(DEFAULT_K, "Sentences kept per hard cluster.", kind=int, minimum=1, maximum=MAX_K, flag="-k")
    tau: float | None = _knob(
        None,
        "The cosine similarity above which a sentence counts as true of an image, for the SetDiff and FPDiff "
        "describers (τ).",
        kind=float,
        minimum=-1.0,
        maximum=1.0,
        optional=True,
        default_text=f"the encoder's τ, else {CLIP_TAU:g} (CLIP)",
    )
    o: float = _knob(
        DEFAULT_O,
        "How much worse than average the images of a sentence must do for it to count as a failure sentence, in "
        "standard deviations of the per-image performance (o).",
        kind=float,
        minimum=0.0,
        maximum=MAX_O,
    )
    methods: tuple = _knob(
        None,
        "How each group's sentences are picked (the describer); repeat the option, or 'all' (the five, and "
        "compose too when the sentences come from a grammar).",
        kind=str,
        many=True,
        flag="--method",
        default_factory=lambda: tuple(METHODS),
    )
    slicers: tuple = _knob(
        None,
        "Where the hard groups come from; repeat for several (the first is the main result).",
        kind=str,
        many=True,
        flag="--slicer",
        default_factory=lambda: ("ward",),
    )
    ward: str = _knob(
        DEFAULT_WARD,
        "How images are grouped: exact Ward clustering, or a faster approximation for many images ('auto' picks).",
        kind=str,
    )
    confidence_from: str = _knob(
        DEFAULT_CONFIDENCE,
        "How φ (the easy / hard split's confidence) comes from class probabilities; 'auto': the true "
        "class's probability when the predictions carry labels, else −entropy.",
        kind=str,
    )
    task: str = _knob("classification", "What the model does; segmentation scores per-pixel outputs.", kind=str)
    split_by: str = _knob(
        "entropy",
        "What ranks images from easy to hard: for a segmentation model, the entropy, pixel accuracy or mean IoU "
        "of its output; for a classifier, 'entropy' means its confidence, computed as --confidence-from says (the "
        "true class's probability when there are labels), or how much it leans on the background according to a "
        "`lbee sensitivity` run (irfs, saliency).",
        kind=str,
    )
    ignore_index: int | None = _knob(
        255,
        "Segmentation: mask value left out of pixel accuracy and mIoU.",
        kind=int,
        minimum=IGNORE_INDEX_RANGE[0],
        maximum=IGNORE_INDEX_RANGE[1],
        optional=True,
    )
    per_class: str | None = _knob(
        None,
        "Analyse each class on its own: 'errors' (hard = the class's wrong predictions, easy = its right ones) or "
        "'probability' (split by the predicted probability of the class).",
        kind=str,
        optional=True,
    )
    join: tuple = _knob(
        None,
        "Hard groups to join into one, numbered as a run without it prints them (1,2,3): pieces of one failure "
        "that the clustering cut apart; repeat for several.",
        kind=int,
        many=True,
        default_factory=tuple,
    )
    confirm: float = _knob(
        DEFAULT_CONFIRM_FRACTION,
        f"Share of the images held out to confirm each statement on (0: off; skipped below {MIN_CONFIRM_IMAGES} "
        "images).",
        kind=float,
        minimum=0.0,
        maximum=MAX_CONFIRM_FRACTION,
    )

    def __new__(cls, *args, **kwargs):  # a misspelled keyword gets the CLI's and the YAML's suggestion
        for key in kwargs:
            if key not in cls.knobs():
                raise TypeError(_unknown(key, cls.knobs(), "RunSettings()").replace("unknown key", "unknown keyword"))
        return super().__new__(cls)

    def __post_init__(self):
        for f in dataclasses.fields(self):
            object.__setattr__(self, f.name, _check(f, getattr(self, f.name)))
        if self.join and (self.per_class or len(self.slicers) > 1):
            other = "`per_class`" if self.per_class else f"{len(self.slicers)} `slicers`"
            raise ValueError(f"`join` names the groups of a whole-dataset run with one slicer; received {other}.")
        if self.per_class and self.task == "segmentation":
            raise ValueError("`per_class` is for classification; received task='segmentation'.")
        if self.split_by in SENSITIVITY_SPLITS and self.task == "segmentation":
            raise ValueError(
                f"`split_by` {self.split_by!r} takes φ from a region-sensitivity run of a classifier; "
                "received task='segmentation'."
            )
        if self.split_by not in SENSITIVITY_SPLITS + ("entropy",) and self.task == "classification":
            raise ValueError(
                f"`split_by` {self.split_by!r} is for task='segmentation'; a classifier splits by "
                f"its confidence (confidence_from) or by {' / '.join(SENSITIVITY_SPLITS)}."
            )

    # -- derived values: each rule written once
    @property
    def n_clusters(self):
        """C^h: ``clusters``, else 15, or 5 per class."""
        if self.clusters is not None:
            return self.clusters
        return DEFAULT_N_CLUSTERS_PER_CLASS if self.per_class else DEFAULT_N_CLUSTERS

    def n_clusters_for(self, n_hard):
        """Hard groups for ``n_hard`` hard images: ``clusters`` if given, else 15, or 5 per class (the paper's).

        Fewer than 15 when that would leave under `IMAGES_PER_DEFAULT_GROUP` images a group (51 hard images in 15
        groups: 6 single images, a planted failure over 6 groups).
        """
        if self.clusters is not None or self.per_class:
            return self.n_clusters
        return min(DEFAULT_N_CLUSTERS, max(1, int(n_hard) // IMAGES_PER_DEFAULT_GROUP))

    @property
    def images_per_group_per_class(self):
        """Per class, ``clusters`` not given: one group per `IMAGES_PER_DEFAULT_GROUP` hard images, at most 5."""
        return IMAGES_PER_DEFAULT_GROUP if self.clusters is None else None

    @property
    def slicer_names(self):
        """The slicer names, in order (YAML ``{name: options}`` entries give their name)."""
        return [next(iter(s)) if isinstance(s, dict) else s for s in self.slicers]

    def resolved_tau(self, encoder_tau=None):
        """τ of the run: ``tau``, else the encoder's declared τ, else the CLIP value."""
        return resolve_tau(self.tau, encoder_tau)

    def replace(self, **changes):
        """A copy with some knobs changed (validated again)."""
        return dataclasses.replace(self, **changes)

    def to_dict(self):
        return {
            f.name: (list(v) if isinstance(v := getattr(self, f.name), tuple) else v) for f in dataclasses.fields(self)
        }

    @classmethod
    def knobs(cls):
        """The knob names, in order."""
        return [f.name for f in dataclasses.fields(cls)]

    @classmethod
    def from_mapping(cls, mapping, *, base=None, where="settings"):
        """Settings from a mapping (a YAML ``defaults`` block or dataset entry).

        Parameters
        ----------
        mapping : dict
            Knob names to values; other keys raise.
        base : RunSettings, optional
            Values for the knobs the mapping does not set.
        where : str
            Names the mapping in error messages.

        Raises
        ------
        ValueError
            Naming the key, the value received and what is expected.
        """
        known = cls.knobs()
        changes = {}
        for key, value in mapping.items():
            if key not in known:
                raise ValueError(_unknown(key, known, where))
            changes[key] = value
        return dataclasses.replace(base or cls(), **changes)


def _unknown(key, known, where):
    """``unknown key 'n_cluster' in WHERE (did you mean 'clusters'?); expected one of ...``."""
    hint = "".join(f" (did you mean {near!r}?)" for near in difflib.get_close_matches(str(key), known, n=1))
    return f"unknown key {shown(key)} in {where}{hint}; expected one of {', '.join(known)}."


_INIT = inspect.signature(RunSettings.__init__)  # help() and the docs show the fields, not __new__'s *args, **kwargs
RunSettings.__signature__ = _INIT.replace(parameters=list(_INIT.parameters.values())[1:])  # type: ignore[attr-defined]


def check_knob(name, value):
    """Validate one knob alone (rules between knobs are checked when the [`RunSettings`][lbee.RunSettings] is built)."""
    fields = {f.name: f for f in dataclasses.fields(RunSettings)}
    if name not in fields:
        raise ValueError(f"unknown knob {shown(name)}; expected one of {', '.join(fields)}.")
    return _check(fields[name], value)


def _check(f, value):
    """One knob's validation: the rule for API, CLI and YAML alike."""
    m = f.metadata
    name, kind = f.name, m["kind"]
    choices = _choices(name)
    received = value
    if name == "join" and isinstance(value, tuple) and len(value) == 1 and isinstance(value[0], str):
        received = value[0]  # the command line's one --join, as typed ('1', not ('1',))

    def bad(expected):  # the value cut before it is built: it can be megabytes long
        return ValueError(f"`{name}` is {shown(received)}; expected {expected}.")

    low, high = m["minimum"], m["maximum"]
    low_, high_ = (f"{b:g}" if isinstance(b, float) else str(b) for b in (low, high))
    span = f" in [{low_}, {high_}]" if None not in (low, high) else f" >= {low_}" if low is not None else ""

    if value is None or (name == "per_class" and value is False):
        if m["optional"]:
            return None
        raise bad("a value (it has no 'none')")
    if name == "join":
        from .join import parse_join

        return parse_join(value, bad)
    if m["many"]:
        items = [value] if isinstance(value, (str, dict)) else value
        if not isinstance(items, (list, tuple)) or not items:
            raise bad(f"a non-empty list of {', '.join(choices)}")
        if name == "methods" and "all" in items:
            items = list(METHODS)  # 'compose' joins them, first, when the sentence set is a grammar's
        names = []
        for item in items:
            item_name = next(iter(item), None) if isinstance(item, dict) and len(item) == 1 else item
            if item_name not in choices:
                raise bad(
                    f"a list of {', '.join(choices)}"
                    + (" (or {name: {options}})" if name == "slicers" else "")
                    + f"; {shown(item_name)} is not one"
                )
            if isinstance(item, dict) and not isinstance(next(iter(item.values())) or {}, dict):
                raise bad("{name: {options}} with a mapping of options")
            if isinstance(item, dict) and next(iter(item.values())):
                check_slicer_options(item_name, next(iter(item.values())), bad)
            names.append(item_name)
        if len(set(names)) != len(names):
            raise bad("each entry at most once")
        return tuple(dict(item) if isinstance(item, dict) else item for item in items)
    if choices is not None:
        if value not in choices:
            raise bad(f"one of {', '.join(choices)}")
        return value
    if kind is int:
        if isinstance(value, bool) or not isinstance(value, numbers.Integral):
            raise bad("an integer" + span)
        value = int(value)
    elif kind is float:
        if (
            isinstance(value, bool)
            or not isinstance(value, numbers.Real)
            or value != value
            or value in (float("inf"), float("-inf"))
        ):
            raise bad("a finite number" + span)
    # compared before float(): an integer too large for a float (10**400) is out of range, not an OverflowError
    if (low is not None and value < low) or (high is not None and value > high):
        raise bad(("an integer" if kind is int else "a number") + span)
    return float(value) if kind is float else value
