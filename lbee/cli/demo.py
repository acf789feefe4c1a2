"""``lbee demo``: lbee end to end on a fresh SpotCheck world, told as a story (offline, CPU)."""

from __future__ import annotations

from pathlib import Path

import click

from ..run.limits import MAX_A, MAX_CLUSTERS, MAX_K
from ..run.text import line_width
from ._base import SEED, FloatRange, check_writable_folder, cli, log, require_extra
from ._counterfactual import echo_counterfactuals

#: The demo's whole story, in its folder: what ``lbee -v demo`` prints (the terminal shows the outcome only).
DEMO_STORY = "demo.txt"
#: How the demo's story begins (its first line), which tells a demo's folder from another that holds a world.
DEMO_FIRST_LINE = "Generating a SpotCheck world with its square classifier ..."


@cli.command()
@click.option("--seed", type=SEED, default=0, show_default=True, help="Seed of the experimental configuration.")
@click.option(
    "--out",
    type=click.Path(file_okay=False),
    default="lbee_out/demo",
    show_default=True,
    help="The demo's own folder, refreshed whole on every run (no --overwrite needed for a demo's folder).",
)
@click.option(
    "--overwrite",
    is_flag=True,
    help="Replace a run, inputs/ and ec/ in an --out that holds other files than a demo's (refused without it).",
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
def demo(ctx, seed, out, clusters, k, a, retrain, overwrite):
    """Run lbee end to end on a fresh SpotCheck world (offline, CPU; the seed-0 classifiers ship)."""
    import time

    from ..bench import analyze_ec
    from ..extras import torchvision_problem
    from ..io.cache import atomic_write_bytes
    from ..reports.text import render_markdown, top_sentences
    from ..run.models import load_encoder
    from ..run.pipeline import write_outputs
    from ..spotcheck import make_ec

    t0 = time.perf_counter()

    def step(msg):
        log(f"[{time.perf_counter() - t0:5.1f} s] {msg}")

    require_extra("spotcheck", "html", needed_for="lbee demo")  # the sentences' encoder, report.html's charts
    _check_demo_folder(out, overwrite)  # before the work: only a demo's folder is refreshed without --overwrite
    check_writable_folder(out, "--out")
    from ..io.staging import refuse_special_entries
    from ..run.outputs import run_entries

    refuse_special_entries(out, run_entries(out), how="the demo, which refreshes its folder")  # before the work
    if (problem := torchvision_problem()) is not None:  # the install check, once the arguments are (trial 31: said
        click.echo(f"WARNING: {problem}", err=True)  # first; trial 30: the demo passed, then torchvision::nms failed)
    story = _Story(bool(ctx.obj.get("verbose")))
    with story.part():
        click.echo(DEMO_FIRST_LINE)
        _say(
            "(the demo's small world: 6,000 random images, 25 % drawn inside the blindspots, the whole test set "
            "analysed; `lbee spotcheck bench` runs the paper's protocol)"
        )
    ec = make_ec(seed, log=step, train=True if retrain else "auto")
    v = ec.verification
    attempts = v.get("attempts") or ()
    with story.part(detail=True):
        if attempts:  # the story, once (the progress on stderr says only that a candidate was set aside)
            seeds = ", ".join(str(a["seed"]) for a in attempts)
            why = f" ({attempts[0]['story']})" if attempts[0].get("story") else ""
            # numbered as the progress line numbers them ("candidate world 1 (seed 0) set aside"), said once
            which = "candidate world 1" if len(attempts) == 1 else f"candidate worlds 1 to {len(attempts)}"
            said = (
                f"why {which} (seed {seeds}) {'was' if len(attempts) == 1 else 'were'} set aside: a world is kept "
                f"only when its classifier fails exactly in the blindspots planted in it{why}; the demo uses "
                f"candidate world {len(attempts) + 1} (seed {ec.seed})"
            )
            _say(said)
        else:
            click.echo(f"  the demo uses world seed {ec.seed}")
    with story.part():
        _say(
            f"model accuracy on the validation images: {v['accuracy_outside']:.2f} outside the blindspots, "
            + ", ".join(f"{x:.2f} inside blindspot {i}" for i, x in enumerate(v["accuracy_inside"]))
        )
        click.echo("\nTrue blindspots (where the model was taught to fail):")
        for i, d in enumerate(ec.blindspot_sentences()):
            _say(f"[{i}] {d}")
    enc = load_encoder("spotcheck", device=ctx.obj["device"])
    if ctx.obj["progress"]:
        step(f"embedding {len(ec.images['test'])} test images and the sentences, clustering, describing ...")
    analysis = analyze_ec(ec, enc, protocol="lbee", n_clusters=clusters, k=k, a=a)
    result = analysis.result
    p = next(iter(result.explanations.values())).params
    from ..run.text import groups_line, metric_legend

    with story.part():
        click.echo("\n" + _in_short(ec, analysis, out))
    with story.part(brief=True):
        _echo_named_blindspots(ec, analysis)
    hard = result.explanations["tops"].hard_clusters
    with story.part(detail=True):
        click.echo()
        _say("Test set: " + groups_line(p, len(hard), in_groups=sum(len(c.indices) for c in hard)), "", "")
        click.echo()
        click.echo("Each hard group's top sentence, per method (groups in the order of their evidence):")
        click.echo(top_sentences(result))
        click.echo("\nMetrics with exact relevance (o = 0.2):")
        click.echo(f"  {'method':<8} {'AHR':>6} {'ACR':>6} {'TPR':>6} {'JI':>6}  description score")
        for m, sc in analysis.scores.items():
            click.echo(
                f"  {m:<8} {sc['AHR']:>6.3f} {sc['ACR']:>6.3f} {sc['TPR']:>6.3f} {sc['JI']:>6.3f}  "
                f"{analysis.description_score[m]:.2f}"
            )
        click.echo(metric_legend())
        _say(
            "(description score: whether the sentences for a found blindspot state its conditions and are true of "
            "it; 1 is best for all)",
            more="   ",
        )
        click.echo(f"\nHard groups as blindspot hypotheses: DR = {analysis.dr:.2f}, FDR = {analysis.fdr:.2f}")
        _say(
            "(DR: share of the true blindspots a group covers; FDR: share of the groups that cover no blindspot)",
            more="   ",
        )
        _echo_named_blindspots(ec, analysis, details=True)
        if ctx.obj["progress"]:
            step(
                "counterfactual check: fresh renders for each hypothesis's statement and its one-condition variants ..."
            )
        echo_counterfactuals(ec, analysis, random_state=seed)
    if ctx.obj["progress"]:
        step("writing the world, the explanation and the HTML report ...")
    from ..reports.browse import write_images_table
    from ..reports.html import render_report, spotcheck_report_run
    from ..reports.thumbnails import ThumbnailCache
    from ..run.outputs import staged_run_folder

    ec_dir = Path(out) / "ec"
    i = f"{out}/inputs"
    with story.part(detail=True):
        click.echo(
            "\nTo see how the results change with the number of groups (C), of sentences (K) and the severity (o): "
            f"lbee sweep --image-embeddings {i}/image_embeddings.npy "
            f"--sentence-embeddings {i}/sentence_embeddings.npy --sentences {i}/sentences.txt "
            f"--predictions {i}/predictions.csv --relevance {i}/relevance.npy --tau {p['tau']:.6g} "
            f"--out {out}/sweep"
        )
    with staged_run_folder(out, overwrite=True) as stage:  # the demo's own folder: replaced whole, never mixed
        ec.save(stage / "ec")
        result.image_ids = [f"ec/images/test/{i:05d}.png" for i in analysis.rows]
        write_outputs(result, stage)
        atomic_write_bytes(stage / "report.md", render_markdown(result, metrics=analysis.scores).encode())
        _write_demo_inputs(stage / "inputs", analysis)
        page = spotcheck_report_run(ec, analysis, dataset=f"SpotCheck world (seed {ec.seed})")
        html = render_report(page, thumbs=ThumbnailCache(ctx.obj["cache_dir"]))
        atomic_write_bytes(stage / "report.html", html.encode("utf-8"))
        write_images_table(page, stage)  # every image with its group, for `lbee serve` and `lbee export spotlight`
        atomic_write_bytes(stage / DEMO_STORY, story.text.getvalue().encode("utf-8"))
    click.echo()
    _say(
        f"Wrote {out}/report.html, explanation.json, assignments.parquet, report.md, the analysis inputs "
        f"in {out}/inputs and the world (its images, blindspots and classifier) in {ec_dir} "
        f"({time.perf_counter() - t0:.0f} s).",
        "",
        "",
    )
    if not story.verbose:
        _say(
            f"The details (each describer's sentences, the metrics, each condition's test, renders that change one "
            f"condition, the lbee sweep command): {out}/{DEMO_STORY}, or run lbee -v demo.",
            "",
            "",
        )


def _check_demo_folder(out, overwrite):
    """Refuse an --out that holds files and is not a demo's folder, unless ``overwrite``.

    Sweep 32h: `--out .` deleted a project's inputs/train.csv. A demo's folder holds the world the demo wrote
    (``ec/ec.json``) and its story (``demo.txt``, as the demo begins it): a user's notes of that name (sweep 32i) or a
    report's SpotCheck dataset folder (sweep 32j) are not one.
    """
    out = Path(out)
    if overwrite or not out.is_dir() or _is_demo_folder(out):
        return
    names = sorted(p.name for p in out.iterdir() if ".lbee-" not in p.name)
    if names:
        from ._base import LbeeError

        shown = ", ".join(names[:5]) + (", ..." if len(names) > 5 else "")
        raise LbeeError(
            f"--out {str(out)!r} holds files and is not a demo's folder ({shown}); the demo refreshes its own "
            "folder whole (its run's files, inputs/ and ec/). Give another folder, or pass --overwrite to replace them "
            "there."
        )


def _is_demo_folder(out):
    # regular files only: a FIFO named demo.txt would block the read forever (sweep 32k)
    if not (out / "ec" / "ec.json").is_file() or not (out / DEMO_STORY).is_file():
        return False
    try:
        with open(out / DEMO_STORY, encoding="utf-8") as fh:
            first = fh.readline(200).rstrip("\n")
    except (OSError, UnicodeDecodeError):
        return False
    return first == DEMO_FIRST_LINE and (out / "ec" / "ec.json").is_file()


class _Story:
    """What the demo tells: every line into ``demo.txt``; on the terminal, the details only with ``-v``.

    A twenty-second user read about 100 lines of symbols (q, lift, AHR...) before what a newcomer needs: the
    terminal now shows the world, the outcome in short and each blindspot's statement; the rest is in the file.
    """

    def __init__(self, verbose):
        import io

        self.verbose, self.text = verbose, io.StringIO()

    def part(self, detail=False, brief=False):
        """A context in which ``click.echo`` tells this part of the story.

        ``detail``: into the file, and on the terminal only with -v. ``brief``: on the terminal only, without -v
        (the short form of what the details then say).
        """
        import contextlib
        import sys

        shown = [sys.stdout] if (not self.verbose if brief else self.verbose or not detail) else []
        return contextlib.redirect_stdout(_Tee(shown if brief else [self.text, *shown]))


class _Tee:
    """A text stream that writes to several (the terminal and the story's file)."""

    def __init__(self, streams):
        self.streams = streams

    def write(self, text):
        for s in self.streams:
            s.write(text)
        return len(text)

    def flush(self):
        for s in self.streams:
            s.flush()

    def isatty(self):
        return False


def _in_short(ec, analysis, out):
    """The demo's outcome in three sentences, printed before the details (for a reader who skips them)."""
    import textwrap

    n = len(ec.blindspots)
    covered = [d for d in analysis.description_details.get("compose", []) if d.get("covered")]
    conf = analysis.result.extra.get("confirmation") or {}
    groups = conf.get("groups") or []
    confirmed = sum(1 for d in covered if d["cluster"] < len(groups) and groups[d["cluster"]]["confirmed"])
    text = (
        f"In short: the world has {n} planted blindspot{'s' if n != 1 else ''}; lbee's hard groups cover "
        f"{len(covered)} of them (DR {analysis.dr:.2f}), with a false-alarm rate of {analysis.fdr:.2f} (FDR), and "
        "'compose' says each in one sentence (description score "
        f"{analysis.description_score['compose']:.2f}; 1 is best). {confirmed} of those sentences are confirmed "
        f"on held-out images. Open {out}/report.html to browse every group's images; then try lbee on your own "
        "images (README: 'The command line, on your images')."
    )
    return textwrap.fill(text, line_width(), break_on_hyphens=False, break_long_words=False)


def _echo_named_blindspots(ec, analysis, details=False):
    """Each true blindspot, the hypothesis that covers it and its first 'compose' sentence.

    ``details``: with its shares, its test on the held-out images and each condition's; else one line on whether
    it was confirmed, in words.
    """
    import textwrap

    from ..run.text import confirmation_lines, confirmation_note

    d_all = analysis.description_details.get("compose")
    exp = analysis.result.explanations.get("compose")
    if not d_all or exp is None:
        return
    conf = analysis.result.extra.get("confirmation")
    head = "Each true blindspot, and what 'compose' says of the hypothesis covering it"
    click.echo()
    _say(f"{head}:" if details else f"{head}, and its test on held-out images:", "", "  ")
    for d, text in zip(d_all, ec.blindspot_sentences()):
        _say(f"[{d['blindspot']}] {text}")
        if not d["covered"]:
            click.echo("      not found (no hypothesis covers 80 % of it with 80 % precision)")
            _echo_overlap(exp, ec, analysis, d["blindspot"])
            continue
        c = exp.hard_clusters[d["cluster"]]
        share = c.details[0] if c.details else {}
        said = f'      hard group {d["cluster"]} ({len(c.indices)} images): "{exp.sentence_texts[c.sentences[0]]}"'
        click.echo(said if details else textwrap.fill(said, line_width(), subsequent_indent="        "))
        if not details:
            click.echo(
                textwrap.fill(
                    _tested(conf, d["cluster"]), line_width(), initial_indent="      ", subsequent_indent="        "
                )
            )
            continue
        if share:
            click.echo(
                f"      holds for {share['hard_share']:.0%} of the hypothesis, {share['easy_share']:.1%} of the "
                f"easy images; description score {d['score']:.2f}"
            )
        for line in confirmation_lines(conf, d["cluster"]):
            click.echo(textwrap.fill(line, line_width(), initial_indent="      ", subsequent_indent="        "))
    note = confirmation_note(conf)
    if note and details:
        click.echo(f"  {note}")


def _tested(conf, group):
    """Whether a group's statement was confirmed on the held-out images, in words (the numbers are details)."""
    g = ((conf or {}).get("groups") or [None] * (group + 1))[group] if conf and conf.get("status") == "done" else None
    if g is None or g.get("statement") is None:
        return "not tested on held-out images"
    s = conf["statements"][g["statement"]]
    if not g["confirmed"]:
        return f"not confirmed on the {conf['n_held_out']} held-out images"
    return (
        f"confirmed: of the {conf['n_held_out']} held-out images, the {s['n_in']} it holds for fail "
        f"{s['error_rate_in']:.0%} of the time, the others {s['error_rate_out']:.0%}"
    )


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
        f"      hard group {best} ({len(c.indices)} images) holds {both / len(inside):.0%} of it, and its images "
        f'are {both / len(c.indices):.0%} this blindspot: "{exp.sentence_texts[c.sentences[0]]}"'
    )


def _write_demo_inputs(folder, analysis):
    """The demo's embeddings, scores, sentences (with their conditions) and Γ, for `lbee sweep` / `describe`."""
    import numpy as np
    import pandas as pd

    from ..grammar import generate, load_grammar
    from ..io.grammar_sets import write_grammar_set
    from ..io.own_store import make_own
    from ..io.provenance import make_provenance, write_embeddings
    from ..io.sentences import WORLD_SENTENCE_SET

    make_own(folder.parent, folder.name)  # this user's alone, whatever the umask (sweep 32ak N2)
    r = analysis.result
    n_base = analysis.sentence_embeddings.shape[0]  # the grammar's set; 'compose' added the rest
    enc, tau = r.encoder, r.explanations[next(iter(r.explanations))].params["tau"]  # τ travels with the embeddings
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
    # which image each row is: a predictions table in another order is then refused, not paired by position
    (folder / "image_embeddings.ids.txt").write_text("".join(f"{i}\n" for i in r.image_ids), encoding="utf-8")
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


def _say(text, indent="  ", more="    "):
    """A paragraph of the demo's output, wrapped to the terminal (`lbee.run.text.line_width`)."""
    import textwrap

    click.echo(
        textwrap.fill(
            text,
            line_width(),
            initial_indent=indent,
            subsequent_indent=more,
            break_on_hyphens=False,  # paths and commands stay whole
            break_long_words=False,
        )
    )
