"""A library run written as ``lbee describe --out`` writes it: `write_run_folder`."""

from __future__ import annotations

import os
from pathlib import Path


def write_run_folder(result, out, *, name="audit", model="model", image_paths=None, html=True, overwrite=False):
    """Write a run of `lbee.audit` into ``out``, as ``lbee describe --out OUT --html`` writes its run.

    ``explanation.json``, ``assignments.parquet``, ``report.md`` and ``images.parquet``, with ``html`` the HTML
    report, and with the run's Γ (``relevance=``) ``metrics.csv`` and ``metrics.json``: the files `lbee export
    spotlight`, `lbee evaluate` and `lbee serve` read (`write_run_files`). The folder is replaced whole or not at
    all (`lbee.run.outputs.staged_run_folder`), and a run already there is refused unless ``overwrite``.

    Parameters
    ----------
    result : lbee.run.result.RunResult
    out : path-like
        The run's folder (created when missing).
    name : str, default='audit'
        The dataset's name in the report's title.
    model : str, default='model'
        The model's name in the report's title.
    image_paths : sequence of path-like, optional
        Each image's file, one per row of the image embeddings, in their order (e.g. the manifest the embeddings
        were made from). The report then shows each image's thumbnail (kept in lbee's cache folder),
        linked to its file, and ``images.parquet`` lists the paths. Without them the report
        has no pictures ("no image").
    html : bool, default=True
    overwrite : bool, default=False

    Returns
    -------
    pathlib.Path
        ``out``.

    Raises
    ------
    ValueError
        ``out`` holds a run and ``overwrite`` is False, or ``image_paths`` is not one path per image (nothing is
        written).
    """
    from ..run.outputs import staged_run_folder
    from ..run.specs import DatasetSpec, ModelSpec

    if not isinstance(out, (str, os.PathLike)) or not str(out).strip():  # "" wrote into the current folder (32u N5)
        raise ValueError(f"`out` is {out!r}; expected the run's folder, a non-empty path.")
    if not isinstance(name, str) or not name.strip():  # None titled the report "None"
        raise ValueError(f"`name` is {name!r}; expected the dataset's name, a non-empty string.")
    if not isinstance(model, str) or not model.strip():
        raise ValueError(f"`model` is {model!r}; expected the model's name, a non-empty string.")
    result = _with_image_paths(result, image_paths)
    ds = DatasetSpec(name=name, settings=result.settings)
    with staged_run_folder(out, overwrite=overwrite, option="`out`", how="overwrite=True") as stage:
        thumbs = None
        if html and image_paths is not None:  # made once, kept in lbee's cache (``LBEE_CACHE_DIR``) as the CLI's
            from .thumbnails import ThumbnailCache

            thumbs = ThumbnailCache()
        write_run_files(result, ds, ModelSpec(name=model), stage, html=html, thumbs=thumbs)
    return Path(out)


def _with_image_paths(result, image_paths):
    """``result`` with ``image_paths`` as its images' files (checked: one non-empty path per image), or as it is."""
    if image_paths is None:
        return result
    import dataclasses

    n = len(result.inputs.image_ids)
    if isinstance(image_paths, (str, bytes, os.PathLike)) or not hasattr(image_paths, "__len__"):
        raise ValueError(
            f"`image_paths` is {type(image_paths).__name__}; expected a list of {n} paths, one per image (a folder "
            "is not enough: lbee cannot know which file each row is)."
        )
    if len(image_paths) != n:
        raise ValueError(f"`image_paths` has {len(image_paths)} paths for {n} images; expected one per image.")
    for i, p in enumerate(image_paths):
        if not isinstance(p, (str, os.PathLike)) or not str(p).strip():
            raise ValueError(f"`image_paths[{i}]` is {p!r}; expected a path to the image's file.")
    paths = [os.fspath(p) for p in image_paths]
    return dataclasses.replace(result, inputs=dataclasses.replace(result.inputs, image_paths=paths, thumbnails=paths))


def metrics_rows(run, ds, model):
    """AHR / ACR / TPR / JI of each slicer and method against the run's Γ ([] without one, or per class)."""
    from .report_run import report_run_of

    if run.per_class is not None or run.relevance is None:
        return []
    return report_run_of(run, ds, model).metrics()


def write_run_files(run, ds, model, stage, *, html=True, thumbs=None, metrics=None):
    """Every file of a run's folder into ``stage``, the same for ``lbee describe --out`` and `write_run_folder`.

    One writer for both: a run written from Python carries the same files (its metrics included) as the CLI's.

    Parameters
    ----------
    run : lbee.run.result.RunResult
    ds : lbee.run.specs.DatasetSpec
    model : lbee.run.specs.ModelSpec or None
    stage : pathlib.Path
        The staged run folder.
    html : bool, default=True
        The HTML report; without it the images table alone (every image with its path).
    thumbs : lbee.reports.thumbnails.ThumbnailCache, optional
    metrics : list of dict, optional
        `metrics_rows` when the caller computed them already.

    Returns
    -------
    list
        The folders `lbee.run.pipeline.write_run` wrote (a per-class run's, one per class).
    """
    from ..io.cache import atomic_write_bytes, json_bytes
    from ..run.pipeline import write_run
    from .batch import write_report_page

    folders = write_run(run, stage)
    if html:
        write_report_page(run, ds, model, stage, thumbs=thumbs)
    elif run.per_class is None:  # every image with its path: lbee export spotlight and lbee serve
        from .browse import write_images_table
        from .report_run import report_run_of

        write_images_table(report_run_of(run, ds, model, page_dir=stage), stage)
    rows = metrics_rows(run, ds, model) if metrics is None else metrics
    if rows:  # the same files as a `lbee report` page's
        import pandas as pd

        atomic_write_bytes(stage / "metrics.csv", pd.DataFrame(rows).to_csv(index=False).encode())
        atomic_write_bytes(stage / "metrics.json", json_bytes(rows))
    return folders
