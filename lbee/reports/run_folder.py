"""A library run written as ``lbee describe --out`` writes it: `write_run_folder`."""

from __future__ import annotations

import os
from pathlib import Path


def write_run_folder(result, out, *, name="audit", model="model", html=True, overwrite=False):
    """Write a run of `lbee.audit` into ``out``, as ``lbee describe --out OUT --html`` writes its run.

    ``explanation.json``, ``assignments.parquet``, ``report.md`` and ``images.parquet``, with ``html`` the HTML
    report, and with the run's Γ (``relevance=``) ``metrics.csv`` and ``metrics.json``: the files `lbee export
    spotlight`, `lbee evaluate` and `lbee serve` read (`write_run_files`). The folder is replaced whole or not at
    all (`lbee.run.outputs.staged_run_folder`), and a run already there is refused unless ``overwrite``. A
    twenty-seventh user found no way to write the report from Python.

    Parameters
    ----------
    result : lbee.run.result.RunResult
    out : path-like
        The run's folder (created when missing).
    name : str, default='audit'
        The dataset's name in the report's title.
    model : str, default='model'
        The model's name in the report's title (a thirtieth user's meter model was titled "EC classifier", the
        SpotCheck world's).
    html : bool, default=True
    overwrite : bool, default=False

    Returns
    -------
    pathlib.Path
        ``out``.

    Raises
    ------
    ValueError
        ``out`` holds a run and ``overwrite`` is False (nothing is written).
    """
    from ..run.outputs import staged_run_folder
    from ..run.specs import DatasetSpec, ModelSpec

    if not isinstance(out, (str, os.PathLike)) or not str(out).strip():  # "" wrote into the current folder (32u N5)
        raise ValueError(f"`out` is {out!r}; expected the run's folder, a non-empty path.")
    if not isinstance(name, str) or not name.strip():  # None titled the report "None"
        raise ValueError(f"`name` is {name!r}; expected the dataset's name, a non-empty string.")
    if not isinstance(model, str) or not model.strip():
        raise ValueError(f"`model` is {model!r}; expected the model's name, a non-empty string.")
    ds = DatasetSpec(name=name, settings=result.settings)
    with staged_run_folder(out, overwrite=overwrite, option="`out`", how="overwrite=True") as stage:
        write_run_files(result, ds, ModelSpec(name=model), stage, html=html)
    return Path(out)


def metrics_rows(run, ds, model):
    """AHR / ACR / TPR / JI of each slicer and method against the run's Γ ([] without one, or per class)."""
    from .report_run import report_run_of

    if run.per_class is not None or run.relevance is None:
        return []
    return report_run_of(run, ds, model).metrics()


def write_run_files(run, ds, model, stage, *, html=True, thumbs=None, metrics=None):
    """Every file of a run's folder into ``stage``, the same for ``lbee describe --out`` and `write_run_folder`.

    A twenty-eighth user's `write_run_folder` with ``relevance=`` wrote no metrics files, where the CLI did.

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
