"""The files of a region-sensitivity run: written, plotted, and read back as φ for LBEE's split.

``sensitivity.csv`` (per image and σ), ``summary.json``, ``rfs.png`` /
``irfs.png`` (RIVAL10 Fig. 4 / 5 style), and
[`confidence_from_sensitivity`][lbee.analyses.sensitivity.confidence_from_sensitivity],
which turns a ``sensitivity.csv`` (iRFS) or ``saliency.csv`` (GradCAM / mask
IoU) into per-image φ (``split_by: irfs | saliency``).
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np


# --------------------------------------------------------------------------- joining LBEE
def read_sensitivity_table(path, *, need=("image", "sigma", "irfs")):
    """Read a ``sensitivity.csv`` / ``saliency.csv`` and check its columns, naming the file."""
    from ..io.images import read_table

    table = read_table(path)
    missing = [c for c in need if c not in table.columns]
    if missing:
        raise ValueError(
            f"{str(path)!r} lacks the column(s) {missing}; found {list(table.columns)}. "
            "Expected a file written by `lbee sensitivity`."
        )
    return table


def confidence_from_sensitivity(sensitivity, image_ids, kind="irfs", *, sigma=None, image_paths=None):
    """Per-image φ for LBEE's easy / hard split from a sensitivity run (higher = easier).

    Parameters
    ----------
    sensitivity : path-like or pandas.DataFrame
        ``sensitivity.csv`` (``kind='irfs'``) or ``saliency.csv`` (``kind='saliency'``).
    image_ids : sequence of str, length n
        The run's image ids; matched to the table's ``image`` column exactly,
        else by file name.
    kind : {'irfs', 'saliency'}, default='irfs'
        ``'irfs'``: the image's iRFS (RIVAL10 §5.1) averaged over σ (NaN
        iRFS, where p̄ ∈ {0, 1}, are left out of the mean; an image with none
        defined gets 0, "no measured preference"). High iRFS = the model is
        hurt more by noise on the object than on the background = it relies
        on the object, so high is easy and low (background-reliant) is hard.
        ``'saliency'``: the GradCAM / mask IoU (§5.4); high = the saliency lies
        on the object = easy.
    sigma : float, optional
        Use iRFS at this σ only instead of the mean over σ.
    image_paths : sequence of str, length n, optional
        The images' files: a table id naming another existing file then matches no image (as in every table).

    Returns
    -------
    ndarray of float, shape (n,)
    """
    import pandas as pd

    if kind not in ("irfs", "saliency"):
        raise ValueError(f"`kind` must be 'irfs' or 'saliency'; received {kind!r}.")
    column = "irfs" if kind == "irfs" else "iou"
    if isinstance(sensitivity, pd.DataFrame):
        table = sensitivity
        if "image" not in table.columns or column not in table.columns:
            raise ValueError(
                f"The sensitivity frame needs columns 'image' and {column!r}; found {list(table.columns)}."
            )
        source = "the sensitivity frame"
    else:
        table = read_sensitivity_table(sensitivity, need=("image", column))
        source = repr(str(sensitivity))
    if sigma is not None:
        if "sigma" not in table.columns:
            raise ValueError(f"{source} has no 'sigma' column; `sigma` only applies to kind='irfs'.")
        table = table[np.isclose(table["sigma"].astype(float), float(sigma))]
        if table.empty:
            raise ValueError(f"{source} has no row with sigma={sigma}.")
    per_image = _per_image(table, column, source, by_sigma=kind == "irfs" and "sigma" in table.columns)
    from ..io.matching import match_table_rows, report_unmatched

    # the one matching rule of every user table: exact, else by the path's tail; an id that fits two images is
    # refused (by file name alone, 'a/x.png' and 'b/x.png' both fitted, and the last row won: sweep 25)
    rows, unmatched = match_table_rows(list(per_image.index), [str(i) for i in image_ids], image_paths, source=source)
    missing = [str(image_ids[j]) for j in np.flatnonzero(rows < 0)]
    if missing:
        raise ValueError(
            f"{source} has no row for {len(missing)} of the {len(image_ids)} images, "
            f"e.g. {missing[0]!r}; run `lbee sensitivity` on the same images."
        )
    report_unmatched(len(unmatched), len(per_image), what="image of the run", source=source, examples=unmatched)
    values = per_image.to_numpy(dtype=float)[rows]
    return np.where(np.isfinite(values), values, 0.0)  # no σ with a defined iRFS: no measured preference


def _per_image(table, column, source, *, by_sigma):
    """Each image's mean of ``column`` over its rows (blank cells left out), every cell checked as a number.

    Blank is the one missing value (`lbee sensitivity` leaves iRFS blank where it is undefined); any other cell
    must be a finite number in ASCII digits, and an image (at one σ) has one row.
    """
    import pandas as pd

    from ..io.table_reader import check_no_missing, float_column, row_labels

    check_no_missing(table, "image", source)
    ids = [str(v).strip() for v in table["image"].tolist()]
    keys = list(zip(ids, table["sigma"].astype(str))) if by_sigma else ids
    seen = {}
    for r, key in enumerate(keys):
        if key in seen:
            a, b = row_labels(table, [seen[key], r])
            at = f" at sigma {key[1]}" if by_sigma else ""
            raise ValueError(
                f"{source}: the image {ids[r]!r}{at} has two rows, {a} and {b}; expected one (lbee sensitivity "
                "writes one row per image and σ)."
            )
        seen[key] = r
    blank = table[column].isna().to_numpy() | np.array([isinstance(v, str) and not v.strip() for v in table[column]])
    values = np.full(len(table), np.nan)
    if (~blank).any():
        values[~blank] = float_column(table[~blank], column, source)
    return pd.Series(values).groupby(pd.Series(ids), sort=False).mean()


# --------------------------------------------------------------------------- outputs
#: What ``lbee sensitivity`` writes into its --out folder.
OUTPUT_ENTRIES = ("sensitivity.csv", "summary.json", "rfs.png", "irfs.png", "saliency.csv")


def write_outputs(result, out, *, plots=True):
    """Write ``sensitivity.csv``, ``summary.json`` and (``plots``) ``rfs.png`` / ``irfs.png`` atomically.

    Returns
    -------
    list of pathlib.Path
    """
    from ..io.cache import atomic_write_bytes

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    written = [out / "sensitivity.csv", out / "summary.json"]
    atomic_write_bytes(written[0], result.table.to_csv(index=False).encode())
    atomic_write_bytes(written[1], json.dumps(result.summary, indent=1, allow_nan=False).encode())
    if plots:
        atomic_write_bytes(out / "rfs.png", plot_rfs(result.summary))
        atomic_write_bytes(out / "irfs.png", plot_irfs(result.table))
        written += [out / "rfs.png", out / "irfs.png"]
    return written


def figure_bytes(fig, fmt="png"):
    """A matplotlib figure encoded as ``fmt`` ('png' or 'svg'; 110 dpi, tight box); the figure is closed."""
    buf = io.BytesIO()
    fig.savefig(buf, format=fmt, dpi=110, bbox_inches="tight")
    import matplotlib.pyplot as plt

    plt.close(fig)
    return buf.getvalue()


def check_summary(summary, where="the sensitivity summary"):
    """Check the structure the figures and the report panel read from a ``summary.json``.

    A ``per_sigma`` list of blocks with numbers ``sigma``, ``a_fg``, ``a_bg`` and ``rfs`` (or null), and each
    class's ``per_sigma`` as long, with ``rfs_mean``.

    Raises
    ------
    ValueError
        Naming the key, what was received and what was expected.
    """
    import numbers

    def number(v, key, null=False):
        ok = (v is None and null) or (isinstance(v, numbers.Real) and not isinstance(v, bool) and np.isfinite(v))
        if not ok:
            raise ValueError(f"{where}: {key} is {v!r}; expected a finite number{' or null' if null else ''}.")

    def blocks(value, key, n=None, full=True):
        if not isinstance(value, list) or not value or not all(isinstance(b, dict) for b in value):
            raise ValueError(f"{where}: {key} must be a non-empty list of {{sigma, rfs, ...}} blocks.")
        if n is not None and len(value) != n:
            raise ValueError(f"{where}: {key} has {len(value)} blocks; expected {n}, one per σ of 'per_sigma'.")
        for i, b in enumerate(value):
            for k in ("sigma", "a_fg", "a_bg", "rfs") if full else ("rfs",):
                number(b.get(k), f"{key}[{i}].{k}", null=k == "rfs")

    if not isinstance(summary, dict) or "per_sigma" not in summary:
        raise ValueError("The sensitivity summary needs a 'per_sigma' list (a summary.json of `lbee sensitivity`).")
    blocks(summary["per_sigma"], "'per_sigma'")
    per_class = summary.get("per_class") or {}
    if not isinstance(per_class, dict):
        raise ValueError(f"{where}: 'per_class' must map class names to blocks; received {type(per_class).__name__}.")
    for c, block in per_class.items():
        if not isinstance(block, dict):
            raise ValueError(f"{where}: per_class[{c!r}] must be a mapping with 'rfs_mean' and 'per_sigma'.")
        number(block.get("rfs_mean"), f"per_class[{c!r}].rfs_mean", null=True)
        blocks(block.get("per_sigma"), f"per_class[{c!r}].per_sigma", n=len(summary["per_sigma"]), full=False)
    return summary


def plot_rfs(summary, fmt="png"):
    """RIVAL10 Fig. 4 style: accuracy under foreground / background noise and RFS against σ.

    Returns
    -------
    bytes
        The encoded figure (``fmt``: 'png' or 'svg').
    """
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    s = [b["sigma"] for b in summary["per_sigma"]]
    fig, ax = plt.subplots(1, 3, figsize=(11, 3.2))
    ax[0].plot(s, [b["a_fg"] for b in summary["per_sigma"]], "o-", label="all")
    ax[1].plot(s, [b["a_bg"] for b in summary["per_sigma"]], "o-", label="all")
    ax[2].plot(s, [np.nan if b["rfs"] is None else b["rfs"] for b in summary["per_sigma"]], "o-", color="k")
    shown = drawn_classes(summary)
    for c in shown:
        block = summary["per_class"][c]
        ax[2].plot(
            s, [np.nan if b["rfs"] is None else b["rfs"] for b in block["per_sigma"]], ".--", lw=0.8, alpha=0.7, label=c
        )
    ax[0].set_title("accuracy, noisy foreground")
    ax[1].set_title("accuracy, noisy background")
    ax[2].set_title("RFS (black: all; dashed: per class)")
    for a in ax:
        a.set_xlabel("σ (0–255 scale)")
    ax[0].set_ylim(0, 1.02)
    ax[1].set_ylim(0, 1.02)
    ax[2].set_ylim(-1.02, 1.02)
    ax[2].axhline(0, color="grey", lw=0.6)
    if shown and len(shown) <= LEGEND_CLASSES:
        ax[2].legend(fontsize=6, ncol=2)
    return figure_bytes(fig, fmt)


#: Classes a sensitivity figure draws at most (a 1.4 MB summary of 15,000 classes took 162 s and 2.5 GB to draw).
CLASSES_DRAWN = 40
#: Classes a figure's legend names at most; beyond, the lines are drawn unnamed.
LEGEND_CLASSES = 12


def drawn_classes(summary):
    """The classes a figure draws: every one up to `CLASSES_DRAWN`, else that many of the lowest mean RFS."""
    per_class = summary.get("per_class") or {}
    names = list(per_class)
    if len(names) <= CLASSES_DRAWN:
        return names

    def rfs(c):
        v = per_class[c].get("rfs_mean")
        return np.inf if v is None else v

    return sorted(names, key=lambda c: (rfs(c), str(c)))[:CLASSES_DRAWN]


def plot_irfs(table, fmt="png"):
    """RIVAL10 Fig. 5 style: per-class iRFS histograms (σ-averaged) and the p_fg / p_bg scatter.

    Returns
    -------
    bytes
    """
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    per = table.groupby("image").agg(
        irfs=("irfs", "mean"), p_fg=("p_fg", "mean"), p_bg=("p_bg", "mean"), cls=("class", "first")
    )
    classes = list(dict.fromkeys(table["class"].astype(str)))
    fig, ax = plt.subplots(1, 2, figsize=(9, 3.4))
    bins = np.linspace(-1, 1, 21)
    for c in classes:
        v = per.loc[per["cls"].astype(str) == c, "irfs"].to_numpy(dtype=float)
        v = v[np.isfinite(v)]
        if len(v):
            ax[0].hist(v, bins=bins, histtype="step", label=c)
        part = per[per["cls"].astype(str) == c]
        ax[1].scatter(part["p_bg"], part["p_fg"], s=8, alpha=0.6, label=c)
    ax[0].set_xlabel("iRFS (mean over σ); > 0: relies on the object")
    ax[0].set_ylabel("images")
    ax[1].plot([0, 1], [0, 1], color="grey", lw=0.6)
    ax[1].set_xlabel("p(true class), noisy background")
    ax[1].set_ylabel("p(true class), noisy foreground")
    ax[1].set_xlim(0, 1)
    ax[1].set_ylim(0, 1)
    if len(classes) <= 12:
        ax[0].legend(fontsize=6)
    return figure_bytes(fig, fmt)
