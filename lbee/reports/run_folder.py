"""A library run written as ``lbee describe --out`` writes it: `write_run_folder`."""

from __future__ import annotations

from pathlib import Path


def write_run_folder(result, out, *, name="audit", html=True, overwrite=False):
    """Write a run of `lbee.audit` into ``out``, as ``lbee describe --out OUT --html`` writes its run.

    ``explanation.json``, ``assignments.parquet`` and ``report.md``, and with ``html`` the HTML report and
    ``images.parquet``: the files `lbee export spotlight`, `lbee evaluate` and `lbee serve` read. The folder is
    replaced whole or not at all (`lbee.run.outputs.staged_run_folder`), and a run already there is refused
    unless ``overwrite``. A twenty-seventh user found no way to write the report from Python.

    Parameters
    ----------
    result : lbee.run.result.RunResult
    out : path-like
        The run's folder (created when missing).
    name : str, default='audit'
        The dataset's name in the report's title.
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
    from ..run.pipeline import write_run
    from ..run.specs import DatasetSpec
    from .batch import write_report_page

    ds = DatasetSpec(name=str(name), settings=result.settings)
    with staged_run_folder(out, overwrite=overwrite, option="`out`", how="overwrite=True") as stage:
        write_run(result, stage)
        if html:
            write_report_page(result, ds, None, stage)
    return Path(out)
