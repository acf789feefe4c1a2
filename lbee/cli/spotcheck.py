"""``lbee spotcheck`` and ``lbee prototype-precision``: the SpotCheck world, the paper protocols.

``lbee demo`` is in lbee.cli.demo.
"""

from __future__ import annotations

import copy
from pathlib import Path

import click

from ._base import SEED, ExistingPath, FloatRange, LbeeError, check_writable_folder, cli, fail, log, require_extra


@cli.group()
def spotcheck():
    """The SpotCheck synthetic world: generate experimental configurations (ECs), run the benchmark."""


@spotcheck.command("generate")
@click.option("--seed", type=SEED, default=0, show_default=True, help="Seed of the experimental configuration.")
@click.option(
    "--out",
    type=click.Path(file_okay=False),
    required=True,
    help="Folder for the world (its images, blindspots and classifier).",
)
@click.option(
    "--blindspots",
    "n_blindspots",
    type=click.IntRange(1, 3),
    default=None,
    help="Number of blindspots [default: 1-3 at random].",
)
@click.option("--rollable", "n_rollable", type=int, default=None, help="Rollable attributes [default: 6-8].")
@click.option(
    "--arch",
    type=click.Choice(["cnn", "resnet18"]),
    default="cnn",
    show_default=True,
    help="The square classifier's network.",
)
@click.option("--overwrite", is_flag=True, help="Replace an EC already in --out.")
@click.pass_context
def spotcheck_generate(ctx, seed, out, n_blindspots, n_rollable, arch, overwrite):
    """Generate one experimental configuration (EC: dataset, blindspots, images, verified model) into OUT.

    The classifier trains on the CPU unless lbee's --device names another (GPU kernels are not bitwise
    deterministic, so the same seed may then give a slightly different model).
    """
    from ..io.staging import OutputExistsError, check_no_replace
    from ..spotcheck import EC_ENTRIES, UnsatisfiableError, make_ec

    check_writable_folder(out, "--out")  # before the world is drawn and its classifier trained
    try:
        check_no_replace([Path(out) / e for e in EC_ENTRIES], overwrite=overwrite)
    except OutputExistsError as exc:
        fail(exc)
    try:
        ec = make_ec(
            seed,
            n_blindspots=n_blindspots,
            n_rollable=n_rollable,
            arch=arch,
            log=log,
            device=ctx.obj["device"] or "cpu",
        )
    except (UnsatisfiableError, RuntimeError) as exc:
        fail(exc)
    ec.save(out)
    for i, d in enumerate(ec.describe_blindspots()):
        click.echo(f"blindspot {i}: {d}")
    click.echo(f"Wrote {out}")


@spotcheck.command("bench")
@click.option(
    "--n-ecs", type=click.IntRange(1, 1000), default=20, show_default=True, help="Experimental configurations (worlds)."
)
@click.option("--first-seed", type=SEED, default=0, show_default=True, help="Seed of the first world.")
@click.option(
    "--out",
    type=click.Path(file_okay=False),
    default="lbee_out/bench",
    show_default=True,
    help="Folder for bench.csv, bench.md and each world's results (a rerun resumes).",
)
@click.option(
    "--protocol",
    type=click.Choice(["paper", "lbee"]),
    default="paper",
    show_default=True,
    help="paper: uniform splits (400/50/50 per attribute combination), positives only, at most 10 "
    "hypotheses, model verified at >= 0.99 / <= 0.05; lbee: the earlier enriched world, whole test "
    "set, 15 hard clusters.",
)
@click.option(
    "--per-combination",
    default=None,
    metavar="TRAIN,VAL,TEST",
    help="Images per attribute combination (paper protocol) [default: 400,50,50]; smaller for a reduced run.",
)
@click.option(
    "--train-enrich",
    type=FloatRange(0, 0.9),
    default=None,
    help="Extra training images inside the blindspots, as a fraction of train (a training aid; the "
    "test split stays uniform) [default: 0].",
)
@click.option(
    "--epochs", type=click.IntRange(1, 1000), default=12, show_default=True, help="Training epochs of each classifier."
)
@click.option(
    "--arch",
    type=click.Choice(["cnn", "resnet18"]),
    default="cnn",
    show_default=True,
    help="The square classifier's network.",
)
@click.option(
    "--min-outside",
    type=FloatRange(0, 1),
    default=None,
    help="Verification: accuracy outside the blindspots [default: 0.99 paper, 0.9 lbee].",
)
@click.option(
    "--max-inside",
    type=FloatRange(0, 1),
    default=None,
    help="Verification: accuracy inside each blindspot [default: 0.05 paper, 0.2 lbee].",
)
@click.option(
    "--min-neighbour",
    type=FloatRange(0, 1),
    default=None,
    help="Verification: the accuracy no one-condition neighbour of a blindspot may lie significantly below "
    "(a broader failure than the planted one) [default: 0.5].",
)
@click.option(
    "--slicers/--no-slicers",
    default=True,
    show_default=True,
    help="Also run Domino and PlaneSpot (PlaneSpot's scvis takes ~30 s an EC on one core).",
)
@click.option(
    "--worlds",
    type=click.Path(file_okay=False),
    default=None,
    help="Keep each EC (renders and trained classifier) in this folder and reuse it: a rerun with another "
    "encoder or describer (and a new --out) analyses the same worlds without training them again.",
)
@click.pass_context
def spotcheck_bench(
    ctx,
    n_ecs,
    first_seed,
    out,
    protocol,
    per_combination,
    train_enrich,
    epochs,
    arch,
    min_outside,
    max_inside,
    min_neighbour,
    slicers,
    worlds,
):
    """Run N experimental configurations (ECs), write bench.csv / bench.md (resumes; a failing EC is recorded).

    Each EC's classifier trains on the CPU unless lbee's --device names another ("lbee --device cuda spotcheck
    bench"; GPU kernels are not bitwise deterministic, so the same seed may give a slightly different model).
    """
    from tqdm.auto import tqdm

    from ..bench import failure_notes, run_benchmark, summarize, write_tables
    from ..run.models import load_encoder

    require_extra("spotcheck", needed_for="lbee spotcheck bench")
    check_writable_folder(out, "--out")
    if worlds is not None:
        check_writable_folder(worlds, "--worlds")
    kwargs = {"epochs": epochs, "arch": arch}
    if per_combination is not None:
        from .._validation import parse_number

        try:
            kwargs["per_combination"] = tuple(parse_number(x, int) for x in per_combination.split(","))
        except ValueError:
            raise click.BadParameter(
                f"expected three integers TRAIN,VAL,TEST; received {per_combination!r}", param_hint="--per-combination"
            ) from None
        if len(kwargs["per_combination"]) != 3 or min(kwargs["per_combination"]) < 1:
            raise click.BadParameter(
                f"expected three positive integers; received {per_combination!r}", param_hint="--per-combination"
            )
    for name, value in (
        ("train_enrich", train_enrich),
        ("min_outside", min_outside),
        ("max_inside", max_inside),
        ("min_neighbour", min_neighbour),
    ):
        if value is not None:
            kwargs[name] = value
    enc = load_encoder("spotcheck", device=ctx.obj["device"])
    progress = (lambda it: tqdm(it, desc="ECs", unit="EC")) if ctx.obj["progress"] else None
    records = run_benchmark(
        n_ecs,
        out,
        encoder=enc,
        first_seed=first_seed,
        progress=progress,
        log=log,
        protocol=protocol,
        device=ctx.obj["device"] or "cpu",
        with_slicers=slicers,
        worlds=worlds,
        **kwargs,
    )
    if not records:
        raise LbeeError("No EC could be generated.")
    click.echo(write_tables(summarize(records), out, failure_notes(records)))
    click.echo(f"Wrote {out}/bench.csv and bench.md ({len(records)} ECs)")


@cli.command("prototype-precision")
@click.argument("explanation", type=ExistingPath())
@click.option(
    "--embeddings",
    required=True,
    type=ExistingPath(dir_okay=False),
    help="(n, d) .npy embeddings of the evaluation set.",
)
@click.option(
    "--partitions",
    required=True,
    type=ExistingPath(dir_okay=False),
    help="(n, t) boolean .npy ground-truth partitions of the evaluation set.",
)
@click.option(
    "-k",
    "k",
    type=click.IntRange(1, 100_000),
    default=10,
    show_default=True,
    help="Images ranked per prototype (precision at k).",
)
def prototype_precision(explanation, embeddings, partitions, k):
    """Precision at K of another image set matched to an explanation's groups (the LBEE paper's appendix B).

    Each image of the other set goes to its nearest group prototype, easy or hard, and each prototype ranks its
    images by similarity; the score is the precision of the top K against the set's true partitions, averaged
    over the partitions. (Formerly `lbee compare-pak`, which still works.)
    """
    from ..core.metrics import prototype_precision_at_k
    from ..io.arrays import load_npy
    from ..run.pipeline import load_explanations

    path = Path(explanation)
    if path.is_dir():
        path = path / "explanation.json"
    try:
        exps, _ = load_explanations(path)
        exp = next(iter(exps.values()))
        emb = load_npy(embeddings, "EMBEDDINGS")
        parts = load_npy(partitions, "PARTITIONS")
        value = prototype_precision_at_k(exp, emb, parts, k=k)
    except (ValueError, TypeError, OSError) as exc:
        fail(exc)
    click.echo(f"P@{k} = {value:.3f}")


# The command's first name keeps working for scripts written before the rename; --help lists the new one only.
_COMPARE_PAK = copy.copy(prototype_precision)
_COMPARE_PAK.hidden = True
cli.add_command(_COMPARE_PAK, "compare-pak")
