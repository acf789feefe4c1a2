"""A slicer's options from a config or a job (``slicers: [{domino: {n_slices: 8}}]``).

Checked as `lbee.run.limits.SLICER_OPTIONS` says: the API, the CLI, the YAML config and the service share this rule.
"""

from __future__ import annotations


def check_slicer_options(name, options, bad):
    """A slicer's options: those a config may give it (`lbee.run.limits.SLICER_OPTIONS`), numbers in range, seeds."""
    import math
    import numbers

    from .._validation import check_seed, shown
    from ..slicers import create_slicer
    from .limits import MAX_EM_WORK, SLICER_OPTIONS

    allowed = SLICER_OPTIONS.get(name, {})
    for key, value in options.items():
        where = f"slicers.{name}.{key}"
        if key not in allowed:
            takes = ", ".join(allowed) or "none"
            raise bad(f"options that slicer {name!r} takes from a config ({takes}); {key!r} is not one")
        rule = allowed[key]
        if rule == "seed":
            if value is not None:
                check_seed(value, where)
        elif rule is not None and value is not None:
            low, high = rule
            integral = isinstance(low, int)
            kind = numbers.Integral if integral else numbers.Real
            ok = not isinstance(value, bool) and isinstance(value, kind) and math.isfinite(value)
            if not (ok and low <= value <= high):
                what = "an integer" if integral else "a number"
                raise ValueError(f"`{where}` is {shown(value)}; expected {what} in [{low:g}, {high:g}].")
    try:
        slicer = create_slicer(name, **options)
    except TypeError as exc:
        raise bad(f"options that slicer {name!r} takes ({exc})") from None
    if hasattr(slicer, "check_params"):  # its choices and the relations between its options, before any fit
        slicer.check_params()
    if name == "domino" and slicer.max_iter * slicer.n_mixture_components > MAX_EM_WORK:
        raise ValueError(
            f"`slicers.domino` asks for {slicer.max_iter:,} EM iterations of {slicer.n_mixture_components:,} "
            f"components; expected at most {MAX_EM_WORK:,} component-iterations (max_iter × n_mixture_components; "
            "the default is 100 × 25)."
        )
