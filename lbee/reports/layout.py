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


def image_links(paths, page_dir):
    """Links from the page to the full images: relative to ``page_dir`` when possible, else file URIs."""
    import os
    from urllib.parse import quote

    if paths is None:
        return None
    base = Path(page_dir).resolve() if page_dir is not None else None
    links = []
    for p in paths:
        if p is None:
            links.append(None)
            continue
        full = Path(p).resolve()
        try:
            links.append(quote(Path(os.path.relpath(full, base)).as_posix()) if base is not None else full.as_uri())
        except ValueError:  # another drive (Windows): no relative path
            links.append(full.as_uri())
    return links
