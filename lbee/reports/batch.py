"""``lbee report CONFIG.yaml``: run every dataset × model × slicer × method and write the reports.

Per dataset (and model, when a dataset has several) the output folder holds
``report.html`` (self-contained), ``explanation.json`` (one more per extra
slicer), ``assignments.parquet``, ``metrics.csv`` and ``metrics.json``; the
output root holds ``index.html`` with the metrics of every run. A failing
dataset or model is recorded and the batch goes on; failures are listed at the
end (and on the index page).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from ..io.cache import atomic_write_bytes, json_bytes
from ..progress import report
from .browse import write_images_table
from .config import ConfigError, load_report_config
from .config_entries import REPORT_DEFAULTS
from .html import render_index, render_report
from .layout import dataset_folders, model_folders
from .page import ReportRun
from .report_run import labels_and_predictions, report_run_of


@dataclass
class BatchResult:
    """What a batch produced.

    Attributes
    ----------
    reports : list of dict
        One per successful run: ``dataset``, ``model``, ``folder``, ``rows`` (metrics).
    failures : list of (str, str)
        (dataset or dataset/model, message).
    index : Path or None
        None when every run failed over an earlier report: its index and runs are kept.
    """

    reports: list = field(default_factory=list)
    failures: list = field(default_factory=list)
    index: Path | None = None


def _run_model(ds, model, inputs, out, device, progress, thumbs, root=None, links=True):
    """One dataset × model through the run layer, then its HTML page and metric tables."""
    import pandas as pd

    from ..run.outputs import staged_run_folder
    from ..run.pipeline import run_model, write_run
    from ..run.specs import input_paths

    report("describing")
    run = run_model(ds, model, inputs, device=device, progress=progress)
    report("writing the report")
    index_href = None
    if root is not None:  # the page links back to the batch's index.html (the stage has the depth of out)
        index_href = Path(os.path.relpath(Path(root) / "index.html", out)).as_posix()
    # refused earlier (run_report); replaced whole, and never when it holds an input
    with staged_run_folder(out, overwrite=True, inputs=input_paths(ds)) as stage:
        write_run(run, stage)
        rows, n_hard = write_report_page(run, ds, model, stage, thumbs=thumbs, index_href=index_href, links=links)
        if run.per_class is None:  # per-class pages write their own (per-class) tables
            atomic_write_bytes(stage / "metrics.csv", pd.DataFrame(rows).to_csv(index=False).encode())
            atomic_write_bytes(stage / "metrics.json", json_bytes(rows))
    return rows, len(inputs.image_ids), n_hard


def write_report_page(run, ds, model, out, *, thumbs=None, index_href=None, links=True):
    """Write ``out/report.html`` of a run (whole-dataset or per-class), and ``sweep.csv`` when asked.

    The one function behind ``lbee report`` and ``lbee describe --html``.

    Returns
    -------
    (list of dict, int)
        The metric rows (means over classes for a per-class run; empty without Γ) and the number of hard images.
    """
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    inputs, rp = run.inputs, ds.report or {}
    if run.per_class is not None:
        return _per_class_page(ds, model, inputs, out, run, thumbs)
    st, scores = ds.settings, run.scores
    page = report_run_of(run, ds, model, page_dir=out, index_href=index_href, links=links)
    if rp.get("sweep"):
        from ..analyses.sweep import C_GRID, K_GRID, O_GRID, sensitivity_sweep

        grid = rp["sweep"] if isinstance(rp["sweep"], dict) else {}
        page.sweep = sensitivity_sweep(
            inputs.embeddings,
            inputs.sentence_embeddings,
            relevance=inputs.relevance,
            performance=scores.performance,
            confidence=scores.confidence,
            K=grid.get("K", K_GRID),
            C=grid.get("C", C_GRID),
            o=grid.get("o", O_GRID),
            methods=list(st.methods),
            k=st.k,
            n_clusters=st.n_clusters,
            tau=run.tau,
            a=st.a,
            o_default=st.o,
            ward=st.ward,
        )
        atomic_write_bytes(out / "sweep.csv", page.sweep.to_csv(index=False).encode())
    if ds.sensitivity is not None:  # RIVAL10 §5: where the model leans on the background
        from .sensitivity import sensitivity_panel_html

        run_dir = ds.sensitivity if ds.sensitivity.is_dir() else ds.sensitivity.parent
        page.panels.append(sensitivity_panel_html(run_dir))
    rows = page.metrics()
    html = render_report(
        page,
        thumbs=thumbs,
        n_thumbs=rp.get("thumbnails", 8),
        slicer_objects=run.slicer_objects,
        cache_dir=None if thumbs is None else thumbs.folder.parent,
    )
    atomic_write_bytes(out / "report.html", html.encode("utf-8"))
    write_images_table(page, out)  # every image with its group: `lbee serve`'s browser, `lbee export spotlight`
    return rows, run.main.explanations[st.methods[0]].params["n_hard"]


def _per_class_page(ds, model, inputs, out, run, thumbs):
    """The per-class HTML page and the means over classes for the index."""
    from ..reports.html import render_per_class_report
    from ..run.confirm_text import per_class_limits
    from ..run.identity import encoder_note, encoder_words, random_weights_banner, weights_words
    from ..run.pipeline import model_name

    st, res = ds.settings, run.per_class
    split = {
        "errors": "hard = false positives ∪ false negatives, easy = true positives",
        "probability": f"class probability at μ ± {st.a}σ",
    }[st.per_class]
    params = {
        "encoder": encoder_words(inputs.encoder),
        "weights": weights_words(inputs.encoder),
        "sentence set": inputs.sentence_set,
        "methods": ", ".join(st.methods),
        "per-class split": split,
        "C (hard clusters per class)": st.n_clusters,
        "K (sentences per cluster)": st.k,
        "similarity threshold τ": run.tau,
        "o": st.o,
        "performance ω": "correctness",
    }
    labels, preds = labels_and_predictions(run.scores)  # the browsers' captions and label -> prediction tables
    page = ReportRun(
        labels=labels,
        preds=preds,
        class_names=run.scores.class_names,
        dataset=ds.name,
        model=model_name(model),
        explanations={},
        sentences=inputs.sentences,
        image_ids=inputs.image_ids,
        confidence=run.scores.confidence,
        performance=run.scores.performance,
        thumbnail_sources=inputs.thumbnails,
        relevance=inputs.relevance,
        relevance_source=inputs.relevance_source,
        params=params,
        o=st.o,
        failures=inputs.failures,
        notes=[*inputs.notes, per_class_limits(grammar=inputs.sentence_conditions is not None)],
        banner=random_weights_banner(inputs.encoder),
        encoder_note=encoder_note(inputs.encoder),
    )
    shown = {**REPORT_DEFAULTS, **ds.report}  # `lbee describe --per-class --html` gives no report options
    html = render_per_class_report(
        page, res, thumbs=thumbs, n_classes=shown["classes_shown"], n_thumbs=shown["thumbnails"]
    )
    atomic_write_bytes(out / "report.html", html.encode("utf-8"))
    summary = res.summary()
    rows = []
    if inputs.relevance is not None:  # means over classes, for the index page
        rows = [
            {"slicer": "per class", "method": r["method"], **{k: float(r[k]) for k in ("ACR", "AHR", "TPR", "JI")}}
            for r in summary.to_dict("records")
        ]
    atomic_write_bytes(out / "metrics.csv", summary.to_csv(index=False).encode())
    atomic_write_bytes(out / "metrics.json", json_bytes(rows))
    n_hard = int(res.metrics.drop_duplicates("class")["n_hard"].sum())
    return rows, n_hard


def run_dataset(
    ds,
    out_dir,
    *,
    cache_dir=None,
    device=None,
    progress=False,
    log=None,
    thumbs=None,
    index_root=None,
    links=True,
    checked=False,
):
    """One dataset entry through the run layer: every model's outputs, HTML page and metric tables.

    The loop body of `run_report`, also what a ``lbee serve`` job runs.

    Parameters
    ----------
    ds : lbee.run.specs.DatasetSpec
        A parsed entry (``ds.error`` must be None).
    out_dir : path-like
        The dataset's folder; a dataset with several models gets one sub-folder per model.
    cache_dir : path-like, optional
        Embedding and thumbnail cache.
    device : str, optional
    progress : bool, default=False
    log : callable, optional
        Receives one line per step.
    thumbs : lbee.reports.thumbnails.ThumbnailCache, optional
        Made from ``cache_dir`` when not given.
    index_root : path-like, optional
        The batch's output root: each page links back to its ``index.html``.
    links : bool, default=True
        Thumbnails link to the full image files (`report_run_of`); ``lbee serve`` passes False.
    checked : bool, default=False
        Whether the entry's tables were checked already (`config_problems`); if not, they are checked first
        (`lbee.run.preflight.preflight`), so that a ``lbee serve`` job with a bad table fails while it is
        preparing, before any image is hashed or embedded.

    Returns
    -------
    reports : list of dict
        One per successful model: ``dataset``, ``model``, ``folder``, ``rows`` (metrics), ``n_images``, ``n_hard``.
    failures : list of (str, str)
        (dataset or dataset / model, message); a failing model does not stop the others.
    """
    from ..run.inputs import load_inputs
    from ..run.pipeline import model_name
    from .thumbnails import ThumbnailCache

    log = log or (lambda msg: None)
    thumbs = thumbs if thumbs is not None else ThumbnailCache(cache_dir)
    ds_dir = Path(out_dir)
    reports, failures = [], []
    try:
        report("preparing")
        bad = {} if checked else _bad_tables(ds)
        if bad and len(bad) == len(ds.models):  # nothing would run: said before any image is hashed
            raise ValueError("; ".join(dict.fromkeys(bad.values())))
        inputs = load_inputs(ds, cache_dir=cache_dir, device=device, progress=progress, out_dir=ds_dir, log=log)
    except Exception as exc:  # one dataset's failure must not stop the batch
        failures.append((ds.name, f"{type(exc).__name__}: {exc}" if not isinstance(exc, ValueError) else str(exc)))
        log(f"[{ds.name}] failed: {exc}")
        return reports, failures
    for model, label, out in model_folders(ds, ds_dir):
        if id(model) in bad:  # its table was refused before the embedding: the other models run
            failures.append((label, bad[id(model)]))
            log(f"[{label}] failed: {bad[id(model)]}")
            continue
        try:
            rows, n, n_hard = _run_model(ds, model, inputs, out, device, progress, thumbs, index_root, links)
        except Exception as exc:
            msg = str(exc) if isinstance(exc, (ValueError, FileNotFoundError)) else f"{type(exc).__name__}: {exc}"
            failures.append((label, msg))
            log(f"[{label}] failed: {msg}")
            continue
        reports.append(
            {
                "dataset": ds.name,
                "model": model_name(model),
                "folder": out,
                "rows": rows,
                "n_images": n,
                "n_hard": n_hard,
            }
        )
        log(f"[{label}] wrote {out / 'report.html'}")
    return reports, failures


def _bad_tables(ds):
    """The entry's tables checked (`lbee.run.preflight.preflight`): {id(model): problem} of the models refused.

    A problem of the dataset itself (its manifest, its sentence set) raises.
    """
    from ..run.preflight import preflight

    preflight(ds, models=[])
    bad = {}
    for model in ds.models:
        try:
            preflight(ds, models=[model])
        except (ValueError, TypeError, OSError) as exc:
            bad[id(model)] = str(exc)
    return bad


def config_problems(cfg, output=None):
    """Every dataset entry's problem, checked before anything runs: list of str.

    Keys, types and paths come from the config parser; then each valid entry's
    tables, manifest and sentence set are read (`lbee.run.preflight.preflight`),
    and a problem there is recorded on the entry too.
    """
    from ..run.preflight import preflight

    problems = []
    target = Path(output) if output else Path(cfg.output)
    while not target.exists() and target != target.parent:  # the folder that will hold the output
        target = target.parent
    if output is not False and (not target.is_dir() or not os.access(target, os.W_OK | os.X_OK)):  # False: none
        problems.append(
            f"{cfg.path}: output {str(output or cfg.output)!r} cannot be created: {str(target)!r} is not a "
            "writable folder."
        )
    for ds in cfg.datasets:
        if not ds.error:
            try:
                preflight(ds, models=[])
            except (ValueError, TypeError, OSError) as exc:
                ds.error = f"dataset {ds.name!r}: {exc}"
        if ds.error:
            problems.extend(ds.error.split("\n  "))  # an entry lists each of its problems on a line
            continue
        for model in ds.models:  # a bad table fails its model only (with --keep-going the others run)
            try:
                preflight(ds, models=[model])
            except (ValueError, TypeError, OSError) as exc:
                problems.append(f"dataset {ds.name!r}, model {model.name!r}: {exc}")
    return problems


def run_report(
    config_path,
    *,
    output=None,
    cache_dir=None,
    device=None,
    progress=False,
    log=None,
    keep_going=False,
    overwrite=False,
):
    """Run a report config.

    Parameters
    ----------
    config_path : path-like
        The YAML file (see `lbee.reports.config`).
    output : path-like, optional
        Overrides the config's ``output``.
    cache_dir : path-like, optional
        Embedding and thumbnail cache (overrides the config's ``cache_dir``).
    device : str, optional
    progress : bool, default=False
    log : callable, optional
        Receives one line per step.
    keep_going : bool, default=False
        Run the valid dataset entries even when others have problems (listed in ``BatchResult.failures``).
    overwrite : bool, default=False
        Replace the report already in the output folder (its ``index.html`` or a run in a folder this config
        writes); without it that is refused before any work. When every run fails, nothing is replaced.

    Returns
    -------
    BatchResult

    Raises
    ------
    lbee.reports.config.ConfigError
        When the file as a whole is unusable, or the output holds a report and ``overwrite`` is false. Problems
        of single datasets are returned in ``BatchResult.failures`` instead.
    """
    from ..run.outputs import check_report_out
    from ..run.specs import input_paths
    from .thumbnails import ThumbnailCache

    log = log or (lambda msg: None)
    cfg = load_report_config(config_path)
    root = Path(output) if output else cfg.output
    folders = dataset_folders(cfg)
    runs = [f for ds in cfg.datasets for _, _, f in model_folders(ds, root / folders[id(ds)])]
    option = "--out" if output else f"{cfg.path}: output"
    inputs = [(f"{cfg.path}, line {ds.line}: datasets[{i}]", input_paths(ds)) for i, ds in enumerate(cfg.datasets)]
    try:  # before any work: a rerun does not replace the earlier pages in silence, nor ever delete an input
        check_report_out(root, runs, overwrite=overwrite, option=option, inputs=inputs)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    problems = config_problems(cfg, output)
    if problems and not keep_going:
        raise ConfigError(f"{len(problems)} problem(s) in {cfg.path}; nothing was run:\n  " + "\n  ".join(problems))
    from ..io.folder_trust import trusted_real_folder

    trusted_real_folder(root, make=True)  # made through the checked walk: one the umask leaves open is refused (32aj)
    cache = cache_dir or cfg.cache_dir
    thumbs = ThumbnailCache(cache)
    result = BatchResult()
    entries = []
    from ..io.staged_tree import drop_unreported, link_worlds, staged_tree
    from ..run.outputs import RUN_ENTRIES

    # the index and every run folder replaced together: a kill leaves the old report or the new one (sweep 32g)
    with staged_tree(root, runs, replaces=RUN_ENTRIES, exclusive=not overwrite) as stage:
        link_worlds(root, stage, sorted(set(folders.values())))  # the SpotCheck worlds a rerun reuses
        staged_log = log

        def log(msg):  # the folders as they will be once swapped in, not the stage's hidden name
            staged_log(str(msg).replace(str(stage), str(root)))

        for ds in cfg.datasets:
            if ds.error:
                result.failures.append((ds.name, ds.error))
                log(f"[{ds.name}] skipped: {ds.error}")
                continue
            log(f"[{ds.name}]")
            reports, failures = run_dataset(
                ds,
                stage / folders[id(ds)],
                cache_dir=cache,
                device=device,
                progress=progress,
                log=log,
                thumbs=thumbs,
                index_root=stage,  # the pages' links back to index.html: relative, the same once swapped in
                checked=True,  # config_problems read every table above
            )
            result.failures.extend(failures)
            for rep in reports:
                rel = rep["folder"].relative_to(stage)
                result.reports.append({**{k: rep[k] for k in ("dataset", "model", "rows")}, "folder": root / rel})
                entries.append(
                    {
                        "dataset": rep["dataset"],
                        "model": rep["model"],
                        "href": f"{rel.as_posix()}/report.html",
                        "rows": rep["rows"],
                        "n_images": rep["n_images"],
                        "n_hard": rep["n_hard"],
                        "folder": rep["folder"],
                    }
                )
        drop_unreported(stage, sorted(set(folders.values())), [e["folder"] for e in entries])  # failed: kept (AM1)
        if entries or not (root / "index.html").exists():  # every run failed: the previous report stays (32af N1)
            atomic_write_bytes(stage / "index.html", render_index(entries, result.failures).encode("utf-8"))
            result.index = root / "index.html"
    return result
