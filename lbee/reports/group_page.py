"""One page of a hard group's images from the per-image table: what ``lbee serve``'s group page shows."""

from __future__ import annotations

from .browse import BROWSE_PAGE_SIZE, BROWSE_SORTS
from .pairs import pair_text


def group_page(table, group, *, page=1, sort="confidence", page_size=BROWSE_PAGE_SIZE, pair=None):
    """One page of a hard group's images from a per-image table (``lbee serve``'s browser).

    Parameters
    ----------
    table : pandas.DataFrame
        `images_table` / `stored_images_table`.
    group : int
        The hard group.
    page : int, default=1
        1-based; a page past the last is refused.
    sort : {'confidence', '-confidence', 'name', 'label', 'prediction'}, default='confidence'
    pair : str, optional
        Only the images of one ``label → prediction`` of the group.

    Returns
    -------
    dict
        ``rows`` (list of dict: the table's columns but ``path``, with ``index``: the row of ``table``, and
        ``name``: the id without the folder prefix all the run's images share),
        ``page``, ``n_pages``, ``n`` (images in the
        group, or of its ``pair``), ``first`` (the 1-based rank of the page's first image), ``sentence``, ``pairs``
        (each label → prediction of the group with its count, the most frequent first) and ``pair``.

    Raises
    ------
    ValueError
        An unknown sort, a group with no image, or a page out of range.
    """
    if sort not in BROWSE_SORTS:
        raise ValueError(f"`sort` is {sort!r}; expected one of {', '.join(BROWSE_SORTS)}.")
    members = table[(table["split"] == "hard") & (table["group"] == int(group))]
    if members.empty:
        groups = sorted(set(table.loc[table["split"] == "hard", "group"].tolist()))
        left = int(((table["split"] == "hard") & (table["group"] == -1)).sum())
        said = ", ".join(str(g) for g in groups if g >= 0) or "(none)"
        raise ValueError(
            f"`group` is {group}; this run has hard groups {said}"
            + (f" (and -1: the {left} hard images in no hypothesis)." if left else ".")
        )
    import pandas as pd

    said = [
        None if pd.isna(lab) else pair_text(lab, "?" if pd.isna(pred) else pred)
        for lab, pred in zip(members["label"], members["prediction"])
    ]
    counts = pd.Series([x for x in said if x is not None], dtype=object).value_counts(sort=False)
    pairs = sorted(((str(k), int(v)) for k, v in counts.items()), key=lambda kv: (-kv[1], kv[0]))
    if pair:  # one label → prediction of the group (the report's filter)
        if pair not in dict(pairs):
            raise ValueError(f"`pair` is not one of group {group}'s label → prediction pairs ({len(pairs)} of them).")
        members = members[[x == pair for x in said]]
    if sort in ("label", "prediction"):  # grouped by it (as text), the least confident first within
        members = members.assign(_by=members[sort].astype(str))
        members = members.sort_values(["_by", "confidence", "image"], kind="stable").drop(columns="_by")
    else:
        key, ascending = ("image", True) if sort == "name" else ("confidence", sort == "confidence")
        members = members.sort_values([key, "image"], ascending=[ascending, True], kind="stable")
    n_pages = max(1, -(-len(members) // page_size))
    if not (isinstance(page, int) and 1 <= page <= n_pages):
        raise ValueError(f"`page` is {page!r}; group {group} has pages 1 to {n_pages}.")
    chunk = members.iloc[(page - 1) * page_size : page * page_size].drop(columns=["path"])  # a file on the server
    from .page import short_names

    # the id without the prefix every image of the run shares, as the report's browser names it ("circle/075.png")
    name = dict(zip(table["image"].astype(str), short_names(table["image"].astype(str).tolist())))
    rows = [
        {"index": int(i), "name": name[str(r["image"])], **{k: _plain(v) for k, v in r.items()}}
        for i, r in chunk.iterrows()
    ]
    return {
        "rows": rows,
        "page": page,
        "n_pages": n_pages,
        "n": len(members),
        "first": (page - 1) * page_size + 1,
        "sentence": None if pd.isna(members["sentence"].iloc[0]) else members["sentence"].iloc[0],  # -1: none
        "pairs": pairs,
        "pair": pair or None,
    }


def _plain(v):
    """A JSON / template value: None for a missing one (NaN, pandas.NA), Python scalars for numpy ones."""
    import pandas as pd

    if v is None or (not isinstance(v, str) and pd.isna(v)):
        return None
    return v.item() if hasattr(v, "item") else v
