"""``lbee embed``: embed an image list into the cache and an ``embeddings.npy``, locally or on Ray."""

from __future__ import annotations

import click

from ._base import LbeeError, _fail, _log, check_encoder_spec, check_writable_folder, cli, ray_options


@cli.command("embed")
@click.argument("images", required=False, type=click.Path(exists=True))
@click.option("--sentences", "--sentence-set", "sentence_set", default=None,
              help="Also (or only) embed a sentence set, a built-in name or a sentence file: "
                   "sentence_embeddings.npy and sentences.txt.")
@click.option("--encoder", "encoder_spec", default="open_clip", show_default=True,
              help="Encoder spec, e.g. open_clip:ViT-B-32@laion2b_s34b_b79k or spotcheck.")
@ray_options("encoders")
@click.option("--batch-size", type=click.IntRange(min=1), default=64, show_default=True)
@click.option("--chunk-size", type=click.IntRange(min=1), default=1024, show_default=True,
              help="Images per Ray task.")
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False),
              help="Folder for embeddings.npy (unit float32 rows) and ids.txt (one image id per row), "
                   "sentence_embeddings.npy and sentences.txt, each .npy with its .provenance.json.")
@click.pass_context
def embed(ctx, images, sentence_set, encoder_spec, engine, ray_address, num_actors, batch_size, chunk_size,
          out_dir):
    """Embed IMAGES (a folder, searched recursively, or a manifest with 'path') and/or a sentence set.

    The embeddings go to the content-hash cache too, so a later 'lbee describe'
    over the same images with the same encoder encodes nothing. Every .npy is
    written atomically with a provenance sidecar (<name>.provenance.json: the
    encoder, its weights digest and τ, the sentence list's digest), which
    'lbee describe', 'lbee sweep' and 'lbee report' read: τ defaults from it,
    and embeddings of two encoders or of another sentence list are refused.
    """
    import warnings
    from pathlib import Path

    from ..io.cache import atomic_write_bytes
    from ..io.images import discover_images
    from ..io.provenance import make_provenance, write_embeddings, write_sidecar
    from ..io.sentences import load_sentence_set

    obj = ctx.obj
    if images is None and sentence_set is None:
        raise click.UsageError("Give IMAGES, --sentences SET, or both.")
    out = check_writable_folder(out_dir, "--out")
    encoder = None
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Skipped")  # every skipped image is listed below
        try:
            check_encoder_spec(encoder_spec)
            from ..encoders import encoder_caveat

            caveat = encoder_caveat(encoder_spec, images) if images is not None else None
            if caveat:  # said once, before the work
                _log(f"Warning: {caveat}")
            sset = load_sentence_set(sentence_set) if sentence_set is not None else None  # before any embedding
            imgs = discover_images(images) if images is not None else None
            kwargs = {"device": obj["device"]} if obj.get("device") else {}
            from ..encoders import create_encoder

            if imgs is not None and engine == "ray":
                from ..encoders.embedding import EncoderSpec, embed_images_ray

                target = out / "embeddings.npy"
                result = embed_images_ray(EncoderSpec(encoder_spec, **kwargs), imgs.paths,
                                          out=target, cache_dir=obj["cache_dir"],
                                          batch_size=batch_size, chunk_size=chunk_size, num_actors=num_actors,
                                          address=ray_address, progress=obj["progress"])
                write_sidecar(target, make_provenance("image_embeddings", result.embeddings,
                                                      identity=result.encoder_identity, tau=result.encoder_tau,
                                                      spec=encoder_spec))
            elif imgs is not None:
                from ..encoders.embedding import embed_images

                encoder = create_encoder(encoder_spec, **kwargs)
                result = embed_images(encoder, imgs.paths, cache_dir=obj["cache_dir"], batch_size=batch_size,
                                      progress=obj["progress"])
                write_embeddings(out / "embeddings.npy", result.embeddings,
                                 make_provenance("image_embeddings", result.embeddings, encoder=encoder,
                                                 spec=encoder_spec))
            if sset is not None:
                from ..encoders.embedding import embed_sentences

                encoder = encoder or create_encoder(encoder_spec, **kwargs)
                texts = list(sset.sentences)
                sen = embed_sentences(encoder, texts, cache_dir=obj["cache_dir"])
                write_embeddings(out / "sentence_embeddings.npy", sen,
                                 make_provenance("sentence_embeddings", sen, encoder=encoder, spec=encoder_spec,
                                                 sentences=texts, sentence_set=sset.name))
                atomic_write_bytes(out / "sentences.txt", "".join(f"{t}\n" for t in texts).encode())
        except click.ClickException:
            raise
        except ImportError as exc:
            raise LbeeError(str(exc)) from None
        except (ValueError, TypeError, FileNotFoundError, RuntimeError) as exc:
            _fail(exc)
        except OSError as exc:
            raise LbeeError(f"Cannot write into {str(out)!r}: {exc.strerror or exc}.") from None
    if imgs is not None:
        ids = [i for i, good in zip(imgs.ids, result.ok) if good]
        atomic_write_bytes(out / "ids.txt", "".join(f"{i}\n" for i in ids).encode())
        for p, r in result.failures:
            _log(f"  skipped {p}: {r}")
        n, d = result.embeddings.shape
        click.echo(f"{n} images embedded (d={d}; {result.n_encoded} encoded, {n - result.n_encoded} from the "
                   f"cache) with {engine} engine -> {out / 'embeddings.npy'}, {out / 'ids.txt'}")
    if sset is not None:
        click.echo(f"{len(sset.sentences)} sentences of {sset.name!r} embedded -> {out / 'sentence_embeddings.npy'}"
                   f", {out / 'sentences.txt'}")
    click.echo("Provenance (encoder, τ, digests) beside each .npy as <name>.provenance.json.")
