"""``lbee evaluate``: AHR / ACR / TPR / JI of an explanation.json."""

from __future__ import annotations

from pathlib import Path

import click

from ..core.evaluation import DEFAULT_O
from ..run.limits import MAX_O
from ._base import ExistingPath, FloatRange, LbeeError, check_writable_folder, cli, fail


@cli.command()
@click.argument("explanation", type=ExistingPath())
@click.option(
    "--relevance",
    required=True,
    type=ExistingPath(dir_okay=False),
    help="Which sentences are true of which images (relevance Γ): .npy (n, N), or CSV/parquet long "
    "(image, sentence, relevant) or wide.",
)
@click.option(
    "--performance",
    type=ExistingPath(dir_okay=False),
    default=None,
    help="Per-image performance (ω, higher = better): .npy (n,) or a table with 'performance' "
    "[default: assignments.parquet beside the json].",
)
@click.option(
    "--o",
    "o_values",
    type=FloatRange(0.0, MAX_O),
    multiple=True,
    default=[DEFAULT_O],
    show_default=True,
    help="How much worse than average a failure sentence's images must do, in standard deviations of the "
    "performance (o); repeat for several.",
)
@click.option(
    "--out",
    type=click.Path(dir_okay=False),
    default=None,
    help="Write metrics here (.json or .csv) [default: metrics.json beside the explanation, or "
    "evaluate_metrics.json when metrics.json there is another command's (a batch report's); NAME.metrics.json for an "
    "explanation file named NAME.json]. "
    "An existing file is refused unless --overwrite.",
)
@click.option("--overwrite", is_flag=True, help="Replace the metrics file if it exists.")
def evaluate(explanation, relevance, performance, o_values, out, overwrite):
    """Score an explanation.json against the truth, per method.

    How many of its sentences name real failures and how well they fit their groups: hit rate, coverage, recall
    and overlap (AHR / ACR / TPR / JI).
    """
    import pandas as pd

    from ..core.evaluation import evaluate as evaluate_fn
    from ..io.arrays import load_npy
    from ..io.cache import atomic_write_bytes, json_bytes
    from ..io.output_lock import check_pinned, pinned_file
    from ..io.relevance import load_relevance
    from ..io.schemas import validate_performance
    from ..io.staging import OutputExistsError, check_no_replace
    from ..io.table_reader import read_table
    from ..run.outputs import run_digest, write_beside_run
    from ..run.pipeline import load_explanations

    path = Path(explanation)
    if path.is_dir():
        path = path / "explanation.json"
    own = path.name == "explanation.json"  # the run's own: its metrics.json goes beside it, under the run's lock
    # a copy kept beside the run (old.json) gets its own file: never the run's metrics.json (sweep 32n)
    target = (
        Path(out) if out else (_default_target(path.parent) if own else path.with_name(f"{path.stem}.metrics.json"))
    )
    check_writable_folder(target.parent, "--out" if out else "the explanation's folder")
    try:  # before reading Γ
        # assignments.parquet is read too when no --performance is given (ω): never written over
        implicit = path.parent / "assignments.parquet"
        check_no_replace(
            [target],
            overwrite=overwrite,
            inputs=[path, relevance, performance, implicit],
            option="--out" if out else None,
        )
    except OutputExistsError as exc:
        fail(exc)
    try:
        from ..io.rollforward import refuse_interrupted

        refuse_interrupted(path, "Explanation file")  # a killed writer's half-swapped run (sweep 32az N2)
        scored = run_digest(path.parent)  # the run scored: checked again when metrics.json is written beside it
        exps, payload = load_explanations(path)
        ids, sents = payload["images"], payload["sentences"]
        # compose's sentences follow the set's: a Γ over the set composes their columns (one rule, every format)
        n_base = next((e.params["n_base_sentences"] for e in exps.values() if "n_base_sentences" in e.params), None)
        # the images' files: an id naming another folder's file matches none (sweep 32ay B4)
        paths = _image_paths(path.parent, list(map(str, ids)), payload.get("images_sha256"))
        rel = load_relevance(
            relevance, ids, sents, conditions=payload.get("sentence_conditions"), n_base=n_base, image_paths=paths
        )
        assign = path.parent / "assignments.parquet"
        if assign.is_file():  # the run's image order: an edited explanation.json must not pair Γ rows with others
            _check_same_images(ids, read_table(assign), path, assign)
            _check_assignments_digest(payload, read_table(assign), assign)
        if performance is None:
            if not assign.exists():
                raise LbeeError("No --performance given and no assignments.parquet beside the explanation.")
            omega = validate_performance(read_table(assign), image_ids=ids, image_paths=paths)
        elif performance.endswith(".npy"):
            omega = load_npy(performance, "--performance")
        else:
            omega = validate_performance(read_table(performance), image_ids=ids, image_paths=paths)
        rows = []
        for o in o_values:
            for m, e in exps.items():
                rows.append({"method": m, "o": o, **evaluate_fn(e, rel, omega, o=o)})
    except click.ClickException:
        raise
    except (ValueError, TypeError, KeyError, OSError) as exc:
        fail(exc)
    table = pd.DataFrame(rows)
    click.echo(table.to_string(index=False, float_format=lambda x: f"{x:.3f}"))
    from ..run.text import metric_legend  # the same legend as the demo's and describe's

    click.echo(metric_legend(table["method"].tolist() if "method" in table else ()))
    from ..run.identity import random_weights_banner

    banner = random_weights_banner(payload.get("encoder") if isinstance(payload.get("encoder"), dict) else None)
    if banner is not None:  # the scores of meaningless sentences, said beside them as every report says it (trial 36)
        click.echo(f"Warning: {banner}", err=True)
    if (table["n_failure_sentences"] == 0).all():
        click.echo(
            "Warning: no failure sentence (S*_β is empty at every o): check that Γ marks some relevant "
            "pairs and that ω varies; TPR is then undefined (NaN, written as null).",
            err=True,
        )
    data = table.to_csv(index=False).encode() if target.suffix == ".csv" else json_bytes(rows)
    try:
        if own:
            write_beside_run(path.parent, target, data, scored)  # beside the run only while it is the one scored
        else:
            check_pinned(target.parent)  # the folder checked at the start (sweep 32o), by its real path (32q)
            atomic_write_bytes(pinned_file(target), data)
    except ValueError as exc:
        raise LbeeError(str(exc)) from None
    except OSError as exc:
        raise LbeeError(f"Cannot write {str(target)!r}: {exc.strerror or exc}.") from None
    click.echo(f"\nWrote {target}")


#: The keys of a row `lbee evaluate` writes; a metrics.json whose rows differ belongs to another command.
EVALUATE_KEYS = {"method", "o", "AHR", "ACR", "TPR", "JI", "n_failure_sentences"}


def _default_target(folder):
    """``metrics.json`` beside the explanation, unless one is there with another schema (``lbee report``'s)."""
    import json
    import stat

    target = folder / "metrics.json"
    if not target.exists():
        return target
    try:
        st = target.stat()
        if not stat.S_ISREG(st.st_mode) or st.st_size > 64 << 20:  # a FIFO blocked, /dev/zero filled memory
            raise LbeeError(
                f"{target} is not a metrics file lbee writes (a regular file of a few kB); move it aside, or give "
                "--out."
            )
        rows = json.loads(target.read_text(encoding="utf-8"))
        ours = (
            isinstance(rows, list) and bool(rows) and all(isinstance(r, dict) and set(r) == EVALUATE_KEYS for r in rows)
        )
    except (OSError, UnicodeDecodeError, ValueError):
        ours = False
    if ours:
        return target
    beside = folder / "evaluate_metrics.json"
    # describe and report write their metrics there in the report's table (trial 43 read "a report's" as a stranger's)
    click.echo(
        f"{target} holds the run's own metrics (as lbee describe and lbee report write them, or a file of another "
        f"shape); writing {beside.name} beside it.",
        err=True,
    )
    return beside


def _check_assignments_digest(payload, assignments, assign):
    """Refuse an ``assignments.parquet`` whose values differ from those its run recorded (ω is read from it)."""
    from ..run.outputs import check_assignments_digest

    try:
        checked = check_assignments_digest(payload, assignments, assign)
    except ValueError as exc:
        raise ValueError(f"{exc} Give ω explicitly with --performance, or run again.") from None
    if not checked:  # an older file (or one downgraded to an older format): say what is not checked
        click.echo(
            f"Warning: {assign.name} is not checked: the explanation records no digest of it (an older lbee wrote "
            "it); its ω is taken as it is.",
            err=True,
        )


def _image_paths(run_dir, ids, recorded=None):
    """The run's image files from its ``images.parquet``, or None without one (or one of other images).

    Only its ``path`` column is read here, and only where its ``image`` column is the explanation's ids in order
    and its paths are absolute. Without them, Γ and ω ids are matched by the images' ids alone, and a warning says
    so (sweep 32az N3: a missing or edited table dropped the check in silence). A table whose values are not those
    the run ``recorded`` (explanation.json's ``images_sha256``) is refused, as every reader of a stored run refuses
    it (sweep 32bb N9: paths edited to another folder's let that folder's Γ ids match).
    """
    from ..io.table_reader import read_table
    from ..reports.stored_table import IMAGES_TABLE, check_images_digest

    table_path = Path(run_dir) / IMAGES_TABLE
    why = f"there is no {IMAGES_TABLE} beside the explanation"
    if table_path.is_file():
        table = read_table(table_path)
        check_images_digest(table, recorded, table_path)
        why = f"{IMAGES_TABLE} does not list the explanation's images with their absolute paths"
        if "path" in table.columns and "image" in table.columns and list(map(str, table["image"])) == ids:
            paths = [p if isinstance(p, str) else None for p in table["path"]]
            if all(p is None or Path(p).is_absolute() for p in paths):
                return paths
    click.echo(
        f"Warning: {why}: the Γ and ω tables' ids are matched by the images' ids alone (an id naming another folder's "
        "file of the same name is not told apart).",
        err=True,
    )
    return None


def _check_same_images(ids, assignments, explanation, assign):
    """Refuse an explanation whose ``images`` differ from the run's ``assignments.parquet`` (same order, same ids).

    A Γ matrix has no ids: its rows are taken in the explanation's order, while a long table is matched by id, so
    an edited image list would give two formats two results.
    """
    if "image" not in assignments.columns:
        return
    run = [str(v) for v in assignments["image"]]
    mine = [str(v) for v in ids]
    if run == mine:
        return
    row = next((i for i, (a, b) in enumerate(zip(mine, run)) if a != b), min(len(mine), len(run)))
    a = mine[row] if row < len(mine) else "<none>"
    b = run[row] if row < len(run) else "<none>"
    raise ValueError(
        f"{explanation}: its images differ from the run's {assign.name} at row {row + 1} ({a!r} vs {b!r}; "
        f"{len(mine)} vs {len(run)} images): the explanation was edited or belongs to another run."
    )
