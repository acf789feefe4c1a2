"""``lbee demo``, ``lbee spotcheck`` and ``lbee prototype-precision``: the SpotCheck world, the paper protocols."""

from __future__ import annotations

import copy
from pathlib import Path

import click

from ..run.limits import MAX_A, MAX_CLUSTERS, MAX_K
from ._base import SEED, FloatRange, LbeeError, check_writable_folder, cli, fail, log, require_extra
from ._counterfactual import echo_counterfactuals


@cli.command()
@click.option("--seed", type=SEED, default=0, show_default=True, help="Seed of the experimental configuration.")
@click.option(
    "--out",
    type=click.Path(file_okay=False),
    default="lbee_out/demo",
    show_default=True,
    help="The demo's own folder, refreshed whole on every run (unlike other outputs: no --overwrite needed).",
)
@click.option(
    "--clusters",
    type=click.IntRange(1, MAX_CLUSTERS),
    default=15,
    show_default=True,
    help="Hard groups the clustering forms.",
)
@click.option("-k", "k", type=click.IntRange(1, MAX_K), default=3, show_default=True, help="Sentences kept per group.")
@click.option(
    "--a",
    "a",
    type=FloatRange(0, MAX_A),
    default=0.2,
    show_default=True,
    help="Split margin in standard deviations of the confidence: hard below mean - a x std, easy above mean + a x std.",
)
@click.option(
    "--retrain", is_flag=True, help="Train the square classifier even where lbee ships it (seed 0's candidates)."
)
@click.pass_context
def demo(ctx, seed, out, clusters, k, a, retrain):
    """Run lbee end to end on a fresh SpotCheck world (offline, CPU; the seed-0 classifiers ship)."""
    import time

    from ..bench import analyze_ec
    from ..io.cache import atomic_write_bytes
    from ..reports.text import render_markdown, terminal_table
    from ..run.models import load_encoder
    from ..run.pipeline import write_outputs
    from ..spotcheck import make_ec

    t0 = time.perf_counter()

    def step(msg):
        log(f"[{time.perf_counter() - t0:5.1f} s] {msg}")

    require_extra("spotcheck", "html", needed_for="lbee demo")  # the sentences' encoder, report.html's charts
    check_writable_folder(out, "--out")
    click.echo(f"Generating a SpotCheck world (seed {seed}) with its square classifier ...")
    click.echo(
        "  (the demo's small world: 6,000 random images, 25 % drawn inside the blindspots, the whole test set "
        "analysed; `lbee spotcheck bench` runs the paper's protocol)"
    )
    ec = make_ec(seed, log=step, train=True if retrain else "auto")
    v = ec.verification
    for n, attempt in enumerate(v.get("attempts") or (), start=1):  # the story, on stdout: which world, and why
        click.echo(
            f"  candidate world {n} (seed {attempt['seed']}) was set aside: its classifier did not fail exactly in "
            "the blindspots planted in it, so it could not test whether lbee names them (a world is kept only when "
            "it does; details on stderr)"
        )
    if v.get("attempts"):
        click.echo(f"  the demo uses candidate world {len(v['attempts']) + 1} (seed {ec.seed})")
    click.echo(
        f"  model accuracy outside the blindspots {v['accuracy_outside']:.2f}, inside "
        + ", ".join(f"{x:.2f}" for x in v["accuracy_inside"])
        + " (validation)"
    )
    click.echo("\nTrue blindspots (where the model was taught to fail):")
    for i, d in enumerate(ec.describe_blindspots()):
        click.echo(f"  [{i}] {d}")
    enc = load_encoder("spotcheck", device=ctx.obj["device"])
    if ctx.obj["progress"]:
        step(f"embedding {len(ec.images['test'])} test images and the sentences, clustering, describing ...")
    analysis = analyze_ec(ec, enc, protocol="lbee", n_clusters=clusters, k=k, a=a)
    result = analysis.result
    p = next(iter(result.explanations.values())).params
    click.echo(
        f"\nTest set: {p['n_images']} images, {p['n_hard']} hard, {p['n_easy']} easy; "
        f"{len(result.explanations['tops'].hard_clusters)} hard clusters.\n"
    )
    click.echo("Top sentence of each hard cluster, per method:")
    click.echo(terminal_table(result))
    click.echo("\nMetrics with exact relevance (o = 0.2):")
    click.echo(f"  {'method':<8} {'AHR':>6} {'ACR':>6} {'TPR':>6} {'JI':>6}  description score")
    for m, s in analysis.scores.items():
        click.echo(
            f"  {m:<8} {s['AHR']:>6.3f} {s['ACR']:>6.3f} {s['TPR']:>6.3f} {s['JI']:>6.3f}  "
            f"{analysis.description_score[m]:.2f}"
        )
    from ..core.evaluation import METRIC_WORDS

    for key, words in METRIC_WORDS.items():
        click.echo(f"  ({key}: {words})")
    click.echo(
        "  (description score: whether the sentences for a found blindspot state its conditions and are true of "
        "it; 1 is best for all)"
    )
    click.echo(f"\nHard clusters as blindspot hypotheses: DR = {analysis.dr:.2f}, FDR = {analysis.fdr:.2f}")
    click.echo("  (DR: share of the true blindspots a cluster covers; FDR: share of clusters that cover no blindspot)")
    _echo_named_blindspots(ec, analysis)
    if ctx.obj["progress"]:
        step("counterfactual check: fresh renders for each hypothesis's statement and its one-condition variants ...")
    echo_counterfactuals(ec, analysis, random_state=seed)
    if ctx.obj["progress"]:
        step("writing the world, the explanation and the HTML report ...")
    from ..reports.browse import write_images_table
    from ..reports.html import render_report, spotcheck_report_run
    from ..reports.thumbnails import ThumbnailCache
    from ..run.outputs import staged_run_folder

    ec_dir = Path(out) / "ec"
    with staged_run_folder(out, overwrite=True) as stage:  # the demo's own folder: replaced whole, never mixed
        ec.save(stage / "ec")
        result.image_ids = [f"ec/images/test/{i:05d}.png" for i in analysis.rows]
        write_outputs(result, stage)
        atomic_write_bytes(stage / "report.md", render_markdown(result, metrics=analysis.scores).encode())
        _write_demo_inputs(stage / "inputs", analysis)
        page = spotcheck_report_run(ec, analysis, dataset=f"SpotCheck world {seed}")
        html = render_report(page, thumbs=ThumbnailCache(ctx.obj["cache_dir"]))
        atomic_write_bytes(stage / "report.html", html.encode("utf-8"))
        write_images_table(page, stage)  # every image with its group, for `lbee serve` and `lbee export spotlight`
    click.echo(
        f"\nWrote {out}/report.html, explanation.json, assignments.parquet, report.md, the analysis inputs "
        f"in {out}/inputs and the world (its images, blindspots and classifier) in {ec_dir} "
        f"({time.perf_counter() - t0:.0f} s)."
    )
    i = f"{out}/inputs"
    click.echo(
        f"Sensitivity to K, C and o: lbee sweep --image-embeddings {i}/image_embeddings.npy "
        f"--sentence-embeddings {i}/sentence_embeddings.npy --sentences {i}/sentences.txt "
        f"--predictions {i}/predictions.csv --relevance {i}/relevance.npy --tau {p['tau']:.6g} "
        f"--out {out}/sweep"
    )


def _echo_named_blindspots(ec, analysis):
    """Each true blindspot, the hypothesis that covers it and its first 'compose' sentence, with its shares."""
    import textwrap

    from ..run.text import confirmation_lines, confirmation_note

    details = analysis.description_details.get("compose")
    exp = analysis.result.explanations.get("compose")
    if not details or exp is None:
        return
    click.echo("\nEach true blindspot, and what 'compose' says of the hypothesis covering it:")
    for d, text in zip(details, ec.describe_blindspots()):
        click.echo(f"  [{d['blindspot']}] {text}")
        if not d["covered"]:
            click.echo("      not found (no hypothesis covers 80 % of it with 80 % precision)")
            _echo_overlap(exp, ec, analysis, d["blindspot"])
            continue
        c = exp.hard_clusters[d["cluster"]]
        share = c.details[0] if c.details else {}
        click.echo(
            f'      hard cluster {d["cluster"]} ({len(c.indices)} images): "{exp.sentence_texts[c.sentences[0]]}"'
        )
        if share:
            click.echo(
                f"      holds for {share['hard_share']:.0%} of the hypothesis, {share['easy_share']:.1%} of the "
                f"easy images; description score {d['score']:.2f}"
            )
        for line in confirmation_lines(analysis.result.extra.get("confirmation"), d["cluster"]):
            click.echo(textwrap.fill(line, 110, initial_indent="      ", subsequent_indent="        "))
    note = confirmation_note(analysis.result.extra.get("confirmation"))
    if note:
        click.echo(f"  {note}")


def _echo_overlap(exp, ec, analysis, blindspot):
    """The hypothesis holding most of a blindspot that has none of its own, with its first 'compose' sentence."""
    import numpy as np

    inside = np.flatnonzero(ec.membership("test")[analysis.rows][:, blindspot])
    best = max(
        range(len(exp.hard_clusters)),
        key=lambda i: len(np.intersect1d(exp.hard_clusters[i].indices, inside)),
        default=None,
    )
    if best is None or not len(inside):
        return
    c = exp.hard_clusters[best]
    both = len(np.intersect1d(c.indices, inside))
    if both == 0:
        return
    click.echo(
        f"      hard cluster {best} ({len(c.indices)} images) holds {both / len(inside):.0%} of it, and its images "
        f'are {both / len(c.indices):.0%} this blindspot: "{exp.sentence_texts[c.sentences[0]]}"'
    )


def _write_demo_inputs(folder, analysis):
    """The demo's embeddings, scores, sentences (with their conditions) and Γ, for `lbee sweep` / `describe`."""
    import numpy as np
    import pandas as pd

    from ..grammar import generate, load_grammar
    from ..io.sentences import WORLD_SENTENCE_SET, write_grammar_set

    folder.mkdir(parents=True, exist_ok=True)
    r = analysis.result
    n_base = analysis.sentence_embeddings.shape[0]  # the grammar's set; 'compose' added the rest
    from ..io.provenance import make_provenance, write_embeddings

    enc = analysis.result.encoder  # the SpotCheck encoder's identity; τ travels with the embeddings
    tau = analysis.result.explanations[next(iter(analysis.result.explanations))].params["tau"]
    img = np.asarray(analysis.embeddings, dtype=np.float32)
    sen = np.asarray(analysis.sentence_embeddings, dtype=np.float32)
    write_embeddings(
        folder / "image_embeddings.npy",
        img,
        make_provenance("image_embeddings", img, identity=enc, spec="spotcheck", tau=tau),
    )
    write_embeddings(
        folder / "sentence_embeddings.npy",
        sen,
        make_provenance(
            "sentence_embeddings",
            sen,
            identity=enc,
            spec="spotcheck",
            tau=tau,
            sentences=list(r.sentences[:n_base]),
            sentence_set=WORLD_SENTENCE_SET,
        ),
    )
    np.save(folder / "relevance.npy", analysis.relevance[:, :n_base])
    grammar = load_grammar("spotcheck")
    sentences, conditions, _ = generate(grammar)
    if list(sentences) != list(r.sentences[:n_base]):
        raise click.ClickException("internal: the demo's sentences are not the SpotCheck grammar's")
    write_grammar_set(
        folder / "sentences.txt",
        grammar,
        sentences,
        conditions,
        max_conditions=grammar.max_conditions,
        source_ref="spotcheck",
        overwrite=True,  # the demo's own inputs folder (in the demo's stage)
    )
    pd.DataFrame({"image": r.image_ids, "confidence": r.confidence, "performance": r.performance}).to_csv(
        folder / "predictions.csv", index=False
    )


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
@click.argument("explanation", type=click.Path(exists=True))
@click.option(
    "--embeddings",
    required=True,
    type=click.Path(exists=True, dir_okay=False),
    help="(n, d) .npy embeddings of the evaluation set.",
)
@click.option(
    "--partitions",
    required=True,
    type=click.Path(exists=True, dir_okay=False),
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
