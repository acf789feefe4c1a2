"""Hard groups the terminal folds into one line: too small to tell, or failing no more often than all images."""

from __future__ import annotations

#: Hard groups of fewer images are listed in one line by the demo's summaries, not read out: too few to be a failure.
FEW_IMAGES = 5


def few_line(sizes):
    """One line for the groups too small to read out, ``{group: size}``: '' when there are none."""
    if not sizes:
        return ""
    names = ", ".join(str(i) for i in sizes)
    counts = ", ".join(str(n) for n in sizes.values())
    if len(sizes) == 1:
        n = next(iter(sizes.values()))
        return (
            f"  hard group {names} ({n} image{'' if n == 1 else 's'}): fewer than {FEW_IMAGES} images, too few to "
            "tell a failure from stray errors; the report shows it"
        )
    return (
        f"  hard groups {names} ({counts} images): fewer than {FEW_IMAGES} images each, too few to tell a failure "
        "from stray errors; the report shows them"
    )


def calm_line(calm, overall):
    """One line for the unconfirmed hard groups that fail no more often than all images, ``{group: (size, rate)}``."""
    names = ", ".join(str(i) for i in calm)
    sizes = ", ".join(str(n) for n, _ in calm.values())
    rates = sorted(r for _, r in calm.values())
    low, high = f"{rates[0]:.2f}", f"{rates[-1]:.2f}"
    said = low if low == high else f"{low}–{high}"
    one = len(calm) == 1
    return (
        f"Hard group{'' if one else 's'} {names} ({sizes} images): error rate{'' if one else 's'} {said}, no higher "
        f"than the {overall:.2f} of all images, and not confirmed: not a failure (the least confident of the images "
        f"the model gets right); report.md and the HTML report show {'it' if one else 'them'}."
    )
