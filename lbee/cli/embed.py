"""``lbee embed``: embed an image list into the cache and an ``embeddings.npy``, locally or on Ray."""

from __future__ import annotations

import click

from ._base import (
    ExistingPath,
    LbeeError,
    batch_size_option,
    check_encoder_spec,
    check_writable_folder,
    cli,
    fail,
    log,
    ray_options,
)


@cli.command("embed")
@click.argument("images", required=False, type=ExistingPath())
@click.option(
    "--sentences",
    "--sentence-set",
    "sentence_set",
    default=None,
    help="Also (or only) embed a sentence set, a built-in name or a sentence file: "
    "sentence_embeddings.npy and sentences.txt.",
)
@click.option(
    "--encoder",
    "encoder_spec",
    default="open_clip",
    show_default=True,
    help="Encoder spec, e.g. open_clip:ViT-B-32@laion2b_s34b_b79k or spotcheck.",
)
@ray_options("encoders")
@batch_size_option(64, "Images of the encoder")
@click.option("--chunk-size", type=click.IntRange(min=1), default=1024, show_default=True, help="Images per Ray task.")
@click.option(
    "--out",
    "out_dir",
    required=True,
    type=click.Path(file_okay=False),
    help="Folder for embeddings.npy (unit float32 rows) and ids.txt (one image id per row), "
    "sentence_embeddings.npy and sentences.txt, each .npy with its .provenance.json. "
    "A folder that already holds the files of a part embedded is refused unless --overwrite.",
)
@click.option(
    "--overwrite",
    is_flag=True,
    help="Replace the arrays (with their ids / sentences and provenance) already in --out; "
    "the other part's files and the embedding cache stay.",
)
@click.pass_context
def embed(
    ctx, images, sentence_set, encoder_spec, engine, ray_address, num_actors, batch_size, chunk_size, out_dir, overwrite
):
    """Embed IMAGES (a folder, searched recursively, or a manifest with 'path') and/or a sentence set.

    The embeddings go to the content-hash cache too, so a later 'lbee describe'
    over the same images with the same encoder encodes nothing. Every .npy is
    written atomically with a provenance sidecar (<name>.provenance.json: the
    encoder, its weights digest and τ, the sentence list's digest), which
    'lbee describe', 'lbee sweep' and 'lbee report' read: τ defaults from it,
    and embeddings of two encoders or of another sentence list are refused.
    """
    import warnings

    from ..run.embed import embed_to_folder

    obj = ctx.obj
    if images is None and sentence_set is None:
        raise click.UsageError("Give IMAGES, --sentences SET, or both.")
    out = check_writable_folder(out_dir, "--out")
    from ..io.cache import cache_folder

    cache_folder(obj["cache_dir"])  # another user's cache folder: refused before the work, not after (sweep 32v)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Skipped")  # every skipped image is listed below
        try:
            check_encoder_spec(encoder_spec, weights=True)
            done = embed_to_folder(
                out,
                images=images,
                sentence_set=sentence_set,
                encoder_spec=encoder_spec,
                device=obj.get("device"),
                cache_dir=obj["cache_dir"],
                engine=engine,
                ray_address=ray_address,
                num_actors=num_actors,
                batch_size=batch_size,
                chunk_size=chunk_size,
                progress=obj["progress"],
                log=log,
                overwrite=overwrite,
            )
        except click.ClickException:
            raise
        except ImportError as exc:
            raise LbeeError(str(exc)) from None
        except (ValueError, TypeError, FileNotFoundError, RuntimeError) as exc:
            fail(exc)
        except OSError as exc:
            raise LbeeError(f"Cannot write into {str(out)!r}: {exc.strerror or exc}.") from None
    imgs, result, sset = done.images, done.image_embeddings, done.sentence_set
    if imgs is not None:
        for p, r in result.failures:
            log(f"  skipped {p}: {r}")
        n, d = result.embeddings.shape
        click.echo(
            f"{n} images embedded (d={d}; {result.n_encoded} encoded, {n - result.n_encoded} from the "
            f"cache) with {engine} engine -> {out / 'embeddings.npy'}, {out / 'ids.txt'}"
        )
    if sset is not None:
        click.echo(
            f"{len(sset.sentences)} sentences of {sset.name!r} embedded -> {out / 'sentence_embeddings.npy'}"
            f", {out / 'sentences.txt'}"
        )
    click.echo("Provenance (encoder, τ, digests) beside each .npy as <name>.provenance.json.")


@cli.command("simulate")
@click.argument("table", type=ExistingPath(dir_okay=False))
@click.option(
    "--sentences",
    "sentence_file",
    required=True,
    type=ExistingPath(dir_okay=False),
    help="A sentence file of `lbee sentences generate GRAMMAR` (its grammar and conditions beside it).",
)
@click.option(
    "--quality",
    type=click.FloatRange(0.5, 1.0, min_open=True, max_open=True),
    default=0.88,  # lbee.bench.from_table.DEFAULT_QUALITY (lbee.bench loads in the body; a test keeps them equal)
    show_default=True,
    help="The simulated encoder's median atom ROC-AUC: 0.75 weak, 0.88 about CLIP's on fine attributes, 0.97 "
    "near-perfect.",
)
@click.option("--seed", type=click.IntRange(0, 2**32 - 1), default=0, show_default=True, help="Random seed.")
@click.option(
    "--out",
    "out_dir",
    required=True,
    type=click.Path(file_okay=False),
    help="Folder for embeddings.npy and ids.txt, sentence_embeddings.npy (each with its .provenance.json) and "
    "relevance.npy (Γ). Refused when it holds them already, unless --overwrite.",
)
@click.option("--overwrite", is_flag=True, help="Replace those files in --out.")
def simulate(table, sentence_file, quality, seed, out_dir, overwrite):
    """Embed images from TABLE, what is in each image, with a simulated encoder: no weights needed.

    TABLE has one row per image: an 'image' (or 'path') column and one column per key of the sentences' grammar,
    'subject.attribute', holding the image's value (empty where it does not apply). What lbee then finds is what
    the table says, not what the pixels show: a rehearsal of an audit with CLIP. Then run `lbee describe
    --image-embeddings OUT/embeddings.npy --sentence-embeddings OUT/sentence_embeddings.npy --sentences FILE
    --relevance OUT/relevance.npy --predictions ...` (docs/howto/no-clip.md).
    """
    from ..bench.from_table import simulate_to_folder

    out = check_writable_folder(out_dir, "--out")
    try:
        sim = simulate_to_folder(out, table, sentence_file, quality=quality, random_state=seed, overwrite=overwrite)
    except (ValueError, TypeError, FileNotFoundError) as exc:
        fail(exc)
    except OSError as exc:
        raise LbeeError(f"Cannot write into {str(out)!r}: {exc.strerror or exc}.") from None
    n, d = sim.image_embeddings.shape
    click.echo(
        f"{n} images and {sim.sentence_embeddings.shape[0]} sentences embedded by a simulated encoder (median atom "
        f"ROC-AUC {sim.quality:.2f}, τ {sim.tau:.3g}, d={d}) -> {out / 'embeddings.npy'}, {out / 'ids.txt'}, "
        f"{out / 'sentence_embeddings.npy'}, {out / 'relevance.npy'}"
    )
    click.echo(
        f"Next: lbee describe IMAGES --predictions PREDICTIONS --sentences {sentence_file} --image-embeddings "
        f"{out / 'embeddings.npy'} --sentence-embeddings {out / 'sentence_embeddings.npy'} --relevance "
        f"{out / 'relevance.npy'} --out run --html (IMAGES: the images' folder or a manifest, for the report's "
        "thumbnails; without it the rows follow the predictions table)"
    )
