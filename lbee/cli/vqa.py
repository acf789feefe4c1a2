"""``lbee vqa``: pseudo ground-truth relevance from VQA models."""

from __future__ import annotations

from pathlib import Path

import click

from ._base import (
    ExistingPath,
    LbeeError,
    batch_size_option,
    check_writable_folder,
    cli,
    fail,
    ray_options,
    require_extra,
)


@cli.group(invoke_without_command=True)
@click.option("--images", type=ExistingPath(), help="A folder (recursive) or a manifest with 'path'.")
@click.option(
    "--sentence-set",
    "--sentences",
    "sentence_set",
    default="conditions",
    show_default=True,
    help="A built-in sentence set name or a sentence file.",
)
@click.option(
    "--backend", default="llava+blip", show_default=True, help="Backends joined by '+': llava, blip, ofa, metadata."
)
@click.option(
    "--combine",
    "how",
    type=click.Choice(["and", "or", "majority"]),
    default="and",
    show_default=True,
    help="How the answers of several questions about one sentence make its relevance.",
)
@click.option(
    "--out",
    type=click.Path(dir_okay=False),
    default="relevance.parquet",
    show_default=True,
    help="The relevance table (refused when it exists, unless --overwrite).",
)
@click.option("--overwrite", is_flag=True, help="Replace the --out file if it exists.")
@click.option(
    "--questions",
    "questions_file",
    type=ExistingPath(dir_okay=False),
    help="Override file: 'sentence<TAB>question' lines.",
)
@click.option("--llava-model", default="llava-hf/llava-1.5-7b-hf", show_default=True, help="Hub name or folder.")
@click.option("--blip-model", default="Salesforce/blip-vqa-base", show_default=True, help="Hub name or folder.")
@click.option(
    "--metadata",
    type=ExistingPath(dir_okay=False),
    help="Long-form table (image, sentence, relevant) for the 'metadata' backend.",
)
@click.option(
    "--scoring",
    type=click.Choice(["logits", "generate"]),
    default="logits",
    show_default=True,
    help="Read yes / no from the answer's first-token logits, or from generated text.",
)
@batch_size_option(8, "Questions to the VQA model")
@ray_options("VQA models")
@click.pass_context
def vqa(
    ctx,
    images,
    sentence_set,
    backend,
    how,
    out,
    overwrite,
    questions_file,
    llava_model,
    blip_model,
    metadata,
    scoring,
    batch_size,
    engine,
    ray_address,
    num_actors,
):
    """Which sentences are true of which images, by asking visual question-answering (VQA) models yes/no questions.

    The answers are a pseudo ground truth (relevance Γ) for `lbee evaluate` where no annotation exists, as in
    the LBEE paper's appendix C.3.
    """
    if ctx.invoked_subcommand is not None:
        return
    if images is None:
        raise click.UsageError("Give --images (a folder or manifest), or a subcommand such as 'agreement'.")
    lbee_vqa()
    from vqa import VQAError, compute_relevance, create_backend, parse_backend_spec, questions_for, write_relevance
    from vqa.questions import builtin_overrides

    from ..io.images import discover_images, read_table
    from ..io.sentences import load_sentence_set

    obj = ctx.obj
    try:
        if {"llava", "blip"} & set(parse_backend_spec(backend)):
            require_extra("vqa", needed_for=f"--backend {backend}")
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--backend") from None
    check_writable_folder(Path(out).parent, "--out's folder")  # before any model is loaded, not after
    from ..io.staging import OutputExistsError, check_no_replace

    try:
        sentence_file = None if sentence_set is None or not Path(str(sentence_set)).is_file() else sentence_set
        check_no_replace([out], overwrite=overwrite, inputs=[images, metadata, questions_file, sentence_file])
    except OutputExistsError as exc:
        fail(exc)
    if Path(out).suffix not in (".csv", ".parquet"):  # any other suffix was written as parquet under that name
        raise click.BadParameter(
            f"{out!r} ends in {Path(out).suffix or 'no suffix'}; expected .csv or .parquet (the format it is "
            "written in).",
            param_hint="--out",
        )
    try:
        sset = load_sentence_set(sentence_set)
        overrides = builtin_overrides(sset.name) or {}
        if questions_file:
            from vqa.questions import read_overrides

            overrides.update(read_overrides(questions_file))
        questions, missing = questions_for(sset.sentences, overrides)
        if missing:
            listing = "\n  ".join(missing[:20])
            raise LbeeError(
                f"{len(missing)} sentence(s) have no question; add them to a --questions file:\n  {listing}"
            )
        imgs = discover_images(images)
        recipes = {}  # name -> (registered backend, keyword arguments)
        for name in parse_backend_spec(backend):
            if name == "llava":
                recipes[name] = ("llava", dict(model=llava_model, device=obj["device"], scoring=scoring))
            elif name == "blip":
                recipes[name] = ("blip", dict(model=blip_model, device=obj["device"], scoring=scoring))
            elif name == "metadata":
                if not metadata:
                    raise LbeeError("The 'metadata' backend needs --metadata TABLE (image, sentence, relevant).")
                recipes[name] = ("metadata", dict(table=read_table(metadata)))
            else:
                recipes[name] = (name, dict(device=obj["device"]))
        backends = list(recipes)
        if engine == "ray":
            from functools import partial

            from vqa.runner import compute_relevance_ray

            result = compute_relevance_ray(
                imgs.paths,
                list(sset.sentences),
                {k: partial(create_backend, b, **kw) for k, (b, kw) in recipes.items()},
                questions=questions,
                image_ids=imgs.ids,
                combine=how,
                cache_dir=obj["cache_dir"],
                batch_size=batch_size,
                num_actors=num_actors,
                address=ray_address,
                progress=obj["progress"],
            )
        else:
            result = compute_relevance(
                imgs.paths,
                list(sset.sentences),
                {k: create_backend(b, **kw) for k, (b, kw) in recipes.items()},
                questions=questions,
                image_ids=imgs.ids,
                combine=how,
                cache_dir=obj["cache_dir"],
                batch_size=batch_size,
                progress=obj["progress"],
            )
    except click.ClickException:
        raise
    except ImportError as exc:
        raise LbeeError(str(exc)) from None
    except (ValueError, TypeError, FileNotFoundError, VQAError) as exc:
        fail(exc)
    from ..io.output_lock import check_pinned, pinned_file

    check_pinned(Path(out).parent)  # the folder checked at the start (sweep 32p), written by its real path (32q)
    write_relevance(result, pinned_file(Path(out)))
    n, m = result.relevance.shape
    click.echo(
        f"{n} images x {m} sentences; relevant pairs: {int(result.relevance.sum())} ({how} of {', '.join(backends)})"
    )
    for name, k in result.invalid.items():
        if k:
            click.echo(f"  {name}: {k} answer(s) were neither yes nor no (counted as no)")
    for p, r in result.failures:
        click.echo(f"  skipped {p}: {r}", err=True)
    click.echo(f"Wrote {out}")


@vqa.command("agreement")
@click.option("--pseudo", required=True, type=ExistingPath(dir_okay=False), help="The table written by 'lbee vqa'.")
@click.option(
    "--truth",
    required=True,
    type=ExistingPath(dir_okay=False),
    help="Annotated relevance: long-form table (image, sentence, relevant).",
)
def vqa_agreement(pseudo, truth):
    """Compare the VQA answers with annotated truth, per backend and combination.

    Accuracy and the four outcome counts (true / false positives and negatives), as the LBEE paper's Table 4.
    """
    import pandas as pd

    lbee_vqa()
    from vqa import agreement_table

    from ..io.images import read_table
    from ..io.table_reader import bool_column

    try:
        table = read_table(pseudo)
        gt = read_table(truth)
        backends = [c[:-2] for c in table.columns if c.endswith("_p")]
        if not backends:
            raise LbeeError(f"{pseudo!r} has no '<backend>_p' columns; is it an 'lbee vqa' output?")
        lacking = [c for c in ("image", "sentence", "relevant") if c not in gt.columns]
        if lacking:
            raise LbeeError(
                f"--truth {truth!r} has no column(s) {', '.join(lacking)}; expected image, sentence, relevant."
            )
        # 'no', 'false' and '0' are not relevant (a plain astype(bool) read any text as True), and a pair is found
        # as written in both tables, never assumed irrelevant
        rel = bool_column(gt, "relevant", f"--truth {truth!r}")
        pairs = pd.MultiIndex.from_frame(gt[["image", "sentence"]].astype(str))
        if pairs.has_duplicates:
            first = pairs[pairs.duplicated()][0]
            raise LbeeError(f"--truth {truth!r} gives the pair {first!r} more than once; expected each once.")
        asked = pd.MultiIndex.from_frame(table[["image", "sentence"]].astype(str))
        if asked.has_duplicates:  # counted twice otherwise
            raise LbeeError(f"--pseudo {pseudo!r} gives the pair {asked[asked.duplicated()][0]!r} more than once.")
        unknown = ~pairs.isin(asked)
        if unknown.any():
            raise LbeeError(
                f"{int(unknown.sum())} row(s) of --truth {truth!r} name a pair the VQA table has not, first "
                f"{pairs[unknown][0]!r}; write the image ids and sentences as {pseudo!r} does."
            )
        annotated = asked.isin(pairs)
        if not annotated.all():
            click.echo(
                f"Warning: {int((~annotated).sum())} of the VQA table's {len(asked)} pairs have no truth row; the "
                f"agreement is over the {int(annotated.sum())} annotated ones.",
                err=True,
            )
        t = pd.Series(rel, index=pairs).reindex(asked[annotated]).to_numpy()
        answers = {b: bool_column(table, b, f"--pseudo {pseudo!r}")[annotated] for b in backends}
        rows = agreement_table(answers, t)
    except click.ClickException:
        raise
    except (ValueError, KeyError, OSError) as exc:
        fail(exc)
    click.echo(f"{'':<22}{'Accuracy':>9}{'TP':>7}{'TN':>7}{'FP':>7}{'FN':>7}")
    for r in rows:
        click.echo(
            f"{r['name']:<22}"
            + "".join(f"{r[k]:>{9 if k == 'accuracy' else 7}.3f}" for k in ("accuracy", "TP", "TN", "FP", "FN"))
        )


def lbee_vqa():
    """Import lbee's own top-level ``vqa`` package, or fail clearly when another distribution's ``vqa`` shadows it.

    Returns
    -------
    module
    """
    import vqa as mod

    if not getattr(mod, "__lbee__", False):
        from ..extras import install_command

        raise click.ClickException(
            f"The module 'vqa' imported from {getattr(mod, '__file__', '?')} is not lbee's (another package "
            f"installs a top-level 'vqa'). Uninstall it, or reinstall lbee: {install_command('vqa', reinstall=True)}."
        )
    return mod
