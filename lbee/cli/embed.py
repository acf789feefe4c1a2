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
