"""Folder names of datasets, models and slicers: file-system safe, and never two alike."""

from __future__ import annotations


def unique_slugs(names):
    """`slug` of each name, made unique in order ("run A" and "run/A" -> "run_A", "run_A-2")."""
    taken, out = set(), []  # names already given, lower-cased: "a b", "a_b" and "a_b-2" are three folders
    for name in names:
        s = candidate = slug(name)
        n = 1
        while candidate.lower() in taken:
            n += 1
            candidate = f"{s}-{n}"
        taken.add(candidate.lower())
        out.append(candidate)
    return out


def slug(name):
    """A file-system-safe folder name for a dataset, model or slicer name."""
    import re

    s = re.sub(r"[^A-Za-z0-9._-]+", "_", str(name)).strip("._")
    return s or "unnamed"
