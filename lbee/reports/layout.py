"""Where a report's files go: one folder per dataset (and per model), and links from a page to the images."""

from __future__ import annotations

from pathlib import Path

#: Names the output root's own files take: a dataset folder never takes one (a dataset named ``index.html`` made a
#: folder where the batch then could not write its index, after the whole analysis).
ROOT_FILES = ("index.html",)


def dataset_folders(cfg):
    """The folder name of each dataset entry of a report config, unique in order: {id(entry): name}."""
    from ..run.names import unique_slugs

    names = unique_slugs([*ROOT_FILES, *(ds.name for ds in cfg.datasets)])[len(ROOT_FILES) :]
    return dict(zip((id(ds) for ds in cfg.datasets), names))


def model_folders(ds, ds_dir):
    """(model, label, folder) per model of a dataset entry: the dataset's folder, or one sub-folder per model."""
    from ..run.names import unique_slugs
    from ..run.pipeline import model_name

    models = ds.models or [None]
    one = len(models) == 1
    dirs = unique_slugs(model_name(m) for m in models)
    return [
        (m, ds.name if one else f"{ds.name} / {m.name}", ds_dir if one else ds_dir / d) for m, d in zip(models, dirs)
    ]


def image_links(paths, page_dir=None):
    """Links from the page to the full images: absolute file URIs.

    A page moved, copied or opened from another folder on the same machine still opens them (relative links broke
    when an eleventh user moved the page); a page sent elsewhere keeps its inlined thumbnails. ``page_dir`` is
    kept for callers that pass it.
    """
    if paths is None:
        return None
    return [None if p is None else Path(p).resolve().as_uri() for p in paths]
