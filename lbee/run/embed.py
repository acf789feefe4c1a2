"""Embedding a folder of images and/or a sentence set into files (``lbee embed``), locally or on Ray.

Every ``.npy`` is written atomically with its provenance sidecar
(``<name>.provenance.json``: the encoder, its weights digest and τ, the
sentence list's digest), which `lbee.run.inputs.load_inputs` reads back.
The embeddings go to the content-hash cache too, so a later run over the same
images with the same encoder encodes nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .identity import is_random_spec
from .models import encoder_caveat, load_encoder

#: The files of each part of ``lbee embed``'s output, each replaced as one unit (an array, its provenance, its rows).
IMAGE_FILES = ("embeddings.npy", "embeddings.provenance.json", "ids.txt")
SENTENCE_FILES = (
    "sentence_embeddings.npy",
    "sentence_embeddings.provenance.json",
    "sentences.txt",
    "sentences.conditions.tsv",  # a generated set's conditions and grammar travel with it (trial 40)
    "sentences.grammar.yaml",
)


@dataclass
class EmbeddedFolder:
    """What `embed_to_folder` embedded.

    Attributes
    ----------
    images : lbee.io.images.ImageList or None
        The images found (``ids``, ``paths``), when images were given.
    image_embeddings : lbee.encoders.embedding.ImageEmbeddings or None
        ``ok`` marks the images that have a row in ``embeddings.npy``; ``failures`` lists the others.
    sentence_set : lbee.io.sentences.SentenceSet or None
        The sentence set embedded, when one was given.
    """

    images: object = None
    image_embeddings: object = None
    sentence_set: object = None


def embed_to_folder(
    out,
    *,
    images=None,
    sentence_set=None,
    encoder_spec="open_clip",
    device=None,
    cache_dir=None,
    engine="local",
    ray_address=None,
    num_actors=None,
    batch_size=64,
    chunk_size=1024,
    progress=False,
    log=None,
    overwrite=False,
):
    """Write ``embeddings.npy`` + ``ids.txt`` (images) and ``sentence_embeddings.npy`` + ``sentences.txt`` into ``out``.

    Everything this call writes is staged beside ``out`` and moved in at the
    end as one unit (`lbee.io.staging`): the files of the parts it embeds
    (`IMAGE_FILES`, `SENTENCE_FILES`) replace the earlier ones
    together, and an error or a kill leaves the earlier files whole. The
    embedding cache (``cache_dir``) is apart: a rerun encodes only what is missing.

    Parameters
    ----------
    out : path-like
        A writable folder (created when missing).
    images : path-like, optional
        A folder (searched recursively) or a manifest with a ``path`` column.
    sentence_set : str, optional
        A built-in sentence set name or a sentence file.
    encoder_spec : str, default='open_clip'
        Checked beforehand by the caller (`lbee.run.models.check_encoder_spec`).
    device : str, optional
    cache_dir : path-like, optional
        The embedding cache.
    engine : {'local', 'ray'}, default='local'
        'ray': an actor pool of encoders (``ray_address``, ``num_actors``, ``chunk_size`` images per task).
    batch_size : int, default=64
    progress : bool, default=False
    log : callable, optional
        Receives a one-line warning when the encoder cannot describe these images.
    overwrite : bool, default=False
        Replace the files of the parts this call embeds when ``out`` already holds them. Without it,
        such a folder is refused before any work (`lbee.io.staging.OutputExistsError`); the
        other part's files (the images' when only sentences are embedded, and vice versa) are never touched.

    Returns
    -------
    EmbeddedFolder
    """
    from ..io.cache import atomic_write_bytes
    from ..io.images import discover_images
    from ..io.provenance import make_provenance, write_embeddings, write_sidecar
    from ..io.row_ids import ids_bytes
    from ..io.sentences import load_sentence_set
    from ..io.staging import check_no_replace, recover_leftovers, staged_entries

    out = Path(out)
    parts = (IMAGE_FILES if images is not None else ()) + (SENTENCE_FILES if sentence_set is not None else ())
    inputs = [p for p in (images, sentence_set) if p is not None and Path(p).is_file()]  # a manifest, a sentence file
    recover_leftovers(out)  # a killed embed's swap is finished first, even when this one is refused (sweep 32h)
    check_no_replace([out / name for name in parts], overwrite=overwrite, inputs=inputs)  # before any work
    caveat = encoder_caveat(encoder_spec, images) if images is not None else None
    if caveat and log:  # said once, before the work
        log(f"Warning: {caveat}")

    def noted(identity):  # the caveat travels with the embeddings: every run of them says it (sweep 32av B2)
        return dict(identity, caveat=caveat) if caveat and not is_random_spec(encoder_spec) else identity

    sset = load_sentence_set(sentence_set) if sentence_set is not None else None  # before any embedding
    imgs = discover_images(images) if images is not None else None
    # ids.txt names a folder's images relative to it: the folder is recorded with them (a manifest names its own)
    folder = images if images is not None and Path(images).is_dir() else None
    with staged_entries(out, replaces=parts) as stage:
        encoder = result = None
        if imgs is not None and engine == "ray":
            from ..encoders.embedding import EncoderSpec, embed_images_ray

            target = stage / "embeddings.npy"
            kwargs = {"device": device} if device else {}
            result = embed_images_ray(
                EncoderSpec(encoder_spec, **kwargs),
                imgs.paths,
                out=target,
                cache_dir=cache_dir,
                batch_size=batch_size,
                chunk_size=chunk_size,
                num_actors=num_actors,
                address=ray_address,
                progress=progress,
            )
            write_sidecar(
                target,
                make_provenance(
                    "image_embeddings",
                    result.embeddings,
                    identity=noted(result.encoder_identity),
                    tau=result.encoder_tau,
                    spec=encoder_spec,
                    images_folder=folder,
                    row_ids=[i for i, good in zip(imgs.ids, result.ok) if good],
                ),
            )
        elif imgs is not None:
            from ..encoders.embedding import embed_images

            encoder = load_encoder(encoder_spec, device=device)
            result = embed_images(encoder, imgs.paths, cache_dir=cache_dir, batch_size=batch_size, progress=progress)
            write_embeddings(
                stage / "embeddings.npy",
                result.embeddings,
                make_provenance(
                    "image_embeddings",
                    result.embeddings,
                    encoder=encoder,
                    identity=noted(encoder.identity()),
                    spec=encoder_spec,
                    images_folder=folder,
                    row_ids=[i for i, good in zip(imgs.ids, result.ok) if good],
                ),
            )
        if result is not None and len(result.embeddings):  # NaN rows (a broken checkpoint) are refused now, not by
            from ..io.arrays import check_embeddings  # the describe that reads them (sweep 32ao N3)

            check_embeddings(result.embeddings, out / "embeddings.npy", f"the encoder {encoder_spec!r}'s embeddings")
        if sset is not None:
            from ..encoders.embedding import embed_sentences

            encoder = encoder or load_encoder(encoder_spec, device=device)
            texts = list(sset.sentences)
            sen = embed_sentences(encoder, texts, cache_dir=cache_dir)
            write_embeddings(
                stage / "sentence_embeddings.npy",
                sen,
                make_provenance(
                    "sentence_embeddings",
                    sen,
                    encoder=encoder,
                    spec=encoder_spec,
                    sentences=texts,
                    sentence_set=sset.name,
                ),
            )
            _write_sentences(stage / "sentences.txt", sset)
        if imgs is not None:  # the row order of embeddings.npy, in the same unit
            atomic_write_bytes(stage / "ids.txt", ids_bytes(i for i, good in zip(imgs.ids, result.ok) if good))
    return EmbeddedFolder(imgs, result, sset)


def _write_sentences(target, sset):
    """``sentences.txt``: the set's sentences, and a generated set's conditions and grammar copy beside them.

    Without them, ``describe`` and `lbee.audit` read the embedded set as a plain one: no compose, no merging into one
    hypothesis per failure, and no word of it (trial 40).
    """
    from ..io.cache import atomic_write_bytes
    from ..io.grammar_sets import write_set_files

    if sset.conditions is None or sset.grammar is None:
        atomic_write_bytes(target, "".join(f"{t}\n" for t in sset.sentences).encode())
        return
    from ..grammar import grammar_yaml

    write_set_files(
        target,
        sset.grammar,
        list(sset.sentences),
        list(sset.conditions),
        max_conditions=max((len(c) for c in sset.conditions), default=0),
        grammar_text=grammar_yaml(sset.grammar),
    )
