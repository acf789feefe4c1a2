"""Finding images: a folder (searched recursively) or a CSV / parquet manifest."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

IMAGE_SUFFIXES = {".jpg", ".jpeg", ".png", ".bmp", ".gif", ".tif", ".tiff", ".webp", ".ppm"}


@dataclass
class ImageList:
    """Image paths with optional labels.

    Attributes
    ----------
    paths : list of str
    ids : list of str
        How images are named in outputs (path relative to the folder, or the manifest's value).
    labels : ndarray or None
    """

    paths: list
    ids: list
    labels: np.ndarray | None = None


def read_table(path):
    """Read a CSV or parquet file into a DataFrame, with a clear error otherwise."""
    import pandas as pd

    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"Table {str(path)!r} does not exist.")
    suffix = path.suffix.lower()
    try:
        if suffix in (".parquet", ".pq"):
            return pd.read_parquet(path)
        if suffix in (".csv", ".tsv", ".txt"):
            return pd.read_csv(path, sep="\t" if suffix == ".tsv" else ",")
    except Exception as exc:
        raise ValueError(f"Cannot read table {str(path)!r}: {exc}") from None
    raise ValueError(f"Table {str(path)!r} has suffix {suffix!r}; expected .csv, .tsv or .parquet.")


def discover_images(source):
    """List images from a folder (recursive, sorted) or a manifest with a ``path`` column.

    Parameters
    ----------
    source : path-like
        A folder, or a CSV / parquet manifest with column ``path`` (relative
        paths are resolved against the manifest's folder) and optional ``label``.

    Returns
    -------
    ImageList
    """
    source = Path(source)
    if source.is_dir():
        files = sorted(p for p in source.rglob("*") if p.is_file() and p.suffix.lower() in IMAGE_SUFFIXES)
        if not files:
            raise ValueError(f"No image found under {str(source)!r} (looked for {sorted(IMAGE_SUFFIXES)}).")
        return ImageList([str(p) for p in files], [str(p.relative_to(source)) for p in files])
    if not source.exists():
        raise FileNotFoundError(f"Images {str(source)!r}: no such folder or manifest file.")
    table = read_table(source)
    if "path" not in table.columns:
        raise ValueError(f"Manifest {str(source)!r} lacks the column 'path'; it has columns {list(table.columns)}.")
    ids = [str(p) for p in table["path"]]
    paths = [str(p if Path(p).is_absolute() else source.parent / p) for p in ids]
    labels = table["label"].to_numpy() if "label" in table.columns else None
    return ImageList(paths, ids, labels)
