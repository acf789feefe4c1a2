"""``lbee embed``: embed an image list into the cache and an ``embeddings.npy``, locally or on Ray."""

from __future__ import annotations

import click

from ._base import LbeeError, _fail, _log, cli, ray_options


@cli.command("embed")
@click.argument("images", type=click.Path(exists=True))
@click.option("--encoder", "encoder_spec", default="open_clip", show_default=True,
              help="Encoder spec, e.g. open_clip:ViT-B-32@laion2b_s34b_b79k or spotcheck.")
@ray_options("encoders")
@click.option("--batch-size", type=click.IntRange(min=1), default=64, show_default=True)
@click.option("--chunk-size", type=click.IntRange(min=1), default=1024, show_default=True,
              help="Images per Ray task.")
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False),
              help="Folder for embeddings.npy (unit float32 rows) and ids.txt (one image id per row).")
@click.pass_context
def embed(ctx, images, encoder_spec, engine, ray_address, num_actors, batch_size, chunk_size, out_dir):
    """Embed IMAGES (a folder, searched recursively, or a manifest with 'path') with an encoder.

    The embeddings go to the content-hash cache too, so a later 'lbee describe'
    over the same images with the same encoder encodes nothing.
    """
    import warnings
    from pathlib import Path

    from ..io.cache import atomic_write_bytes
    from ..io.images import discover_images

    obj = ctx.obj
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Skipped")  # every skipped image is listed below
        try:
            imgs = discover_images(images)
            kwargs = {"device": obj["device"]} if obj.get("device") else {}
            if engine == "ray":
                from ..encoders.embedding import EncoderSpec, embed_images_ray

                result = embed_images_ray(EncoderSpec(encoder_spec, **kwargs), imgs.paths,
                                          out=out / "embeddings.npy", cache_dir=obj["cache_dir"],
                                          batch_size=batch_size, chunk_size=chunk_size, num_actors=num_actors,
                                          address=ray_address, progress=obj["progress"])
            else:
                import numpy as np

                from ..encoders import create_encoder
                from ..encoders.embedding import embed_images

                encoder = create_encoder(encoder_spec, **kwargs)
                result = embed_images(encoder, imgs.paths, cache_dir=obj["cache_dir"], batch_size=batch_size,
                                      progress=obj["progress"])
                np.save(out / "embeddings.npy", result.embeddings)
        except click.ClickException:
            raise
        except ImportError as exc:
            raise LbeeError(str(exc)) from None
        except (ValueError, TypeError, FileNotFoundError, RuntimeError) as exc:
            _fail(exc)
    ids = [i for i, good in zip(imgs.ids, result.ok) if good]
    atomic_write_bytes(out / "ids.txt", "".join(f"{i}\n" for i in ids).encode())
    for p, r in result.failures:
        _log(f"  skipped {p}: {r}")
    n, d = result.embeddings.shape
    click.echo(f"{n} images embedded (d={d}; {result.n_encoded} encoded, {n - result.n_encoded} from the cache)"
               f" with {engine} engine -> {out / 'embeddings.npy'}, {out / 'ids.txt'}")
