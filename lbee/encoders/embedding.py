"""Embedding images and sentences with an encoder, through the on-disk cache."""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..io.cache import EmbeddingCache, file_sha256
from ..io.confinement import pinned
from ..io.images import MAX_IMAGE_BYTES, check_image_file
from ..progress import report
from ..scoring.batches import ImageDataset, collate_images

# Shards are flushed at least this often, so an interrupted run loses little.
FLUSH_EVERY = 1024
#: Seconds of hashing before its progress bar appears (a shorter hashing shows no bar).
HASH_BAR_DELAY = 1.0


@dataclass
class ImageEmbeddings:
    """Result of [`embed_images`][lbee.encoders.embedding.embed_images].

    Attributes
    ----------
    embeddings : ndarray of shape (n_ok, d)
        Unit float32 rows for the images that could be read, in input order.
    ok : ndarray of bool, shape (n_paths,)
        Which input paths have a row in ``embeddings``.
    failures : list of (str, str)
        (path, reason) for every skipped image.
    n_encoded : int
        Images actually run through the encoder (0 on a fully cached rerun).
    hashes : list of str or None
        Per input path, the hex SHA-256 of the bytes embedded (None for a skipped image); None where not kept.
    real_paths : list of str or None
        Per input path, the file's real path when it was hashed; None where not kept.
    """

    embeddings: np.ndarray
    ok: np.ndarray
    failures: list = field(default_factory=list)
    n_encoded: int = 0
    #: the encoder's identity and declared τ, for the provenance sidecar (set by
    #: [`embed_images_ray`][lbee.encoders.embedding.embed_images_ray])
    encoder_identity: dict | None = None
    encoder_tau: float | None = None
    hashes: list | None = None
    real_paths: list | None = None


def embed_images(
    encoder,
    paths,
    *,
    cache_dir=None,
    use_cache=True,
    batch_size=64,
    num_workers=0,
    progress=False,
    strict=False,
    cache=None,
    warn=True,
):
    """Embed image files, reusing and filling the on-disk cache.

    Parameters
    ----------
    encoder : lbee.encoders.Encoder
    paths : list of str
    cache_dir : path-like, optional
        Cache root (default ``$LBEE_CACHE_DIR`` or ``~/.cache/lbee``).
    use_cache : bool, default=True
    batch_size : int, default=64
    num_workers : int, default=0
        DataLoader worker processes decoding images.
    progress : bool, default=False
        Show a progress bar (the CLI turns it on).
    strict : bool, default=False
        Raise on the first unreadable image instead of skipping it with a warning.
    cache : EmbeddingCache, optional
        An open cache of this encoder to reuse (a Ray actor keeps one across
        chunks instead of re-reading the shards); default one under ``cache_dir``.
    warn : bool, default=True
        Warn about skipped images (the Ray engine warns once for all chunks).

    Returns
    -------
    ImageEmbeddings
    """
    from torch.utils.data import DataLoader
    from tqdm.auto import tqdm

    paths = [str(p) for p in paths]
    failures = {}
    hashes = [None] * len(paths)
    reals = [None] * len(paths)  # each file's real path when it was hashed (what a run's table records)
    # Hashing is fast (hundreds of files a second): a bar drawn at once showed "hashing: 0%" and was gone before
    # its first refresh. It appears only when hashing takes longer than HASH_BAR_DELAY, and then it advances.
    bar = tqdm(paths, desc="hashing", unit="file", disable=not progress, leave=False, delay=HASH_BAR_DELAY)
    for i, p in enumerate(bar):
        report("hashing images", i, len(paths))
        try:
            check_image_file(p)  # a FIFO, a device or a huge (sparse) file is never read: it would not end
            with pinned(p, "image") as src:  # the file checked is the file hashed (a link swapped in: refused)
                hashes[i] = file_sha256(src, limit=MAX_IMAGE_BYTES)
                # the file is held open: the kernel names the file hashed (sweep 32s: resolved after the embedding,
                # a swapped folder's table named files the run never read); without /proc, the path as it is now
                reals[i] = os.readlink(src) if str(src).startswith("/proc/self/fd/") else os.path.realpath(p)
        except (OSError, ValueError) as exc:
            if strict:
                raise
            failures[i] = f"{type(exc).__name__}: {exc}"

    if not use_cache:
        cache = None
    elif cache is None:
        cache = EmbeddingCache(encoder.identity(), cache_dir)
    known = cache.get_images([h for h in hashes if h]) if cache else {}
    todo, seen = [], set()
    for i, h in enumerate(hashes):
        if h and h not in known and h not in seen:
            seen.add(h)
            todo.append(i)

    first_of, copies = {}, []
    for i, h in enumerate(hashes):
        if h and first_of.setdefault(h, i) != i:
            copies.append((first_of[h], i))
    if copies:  # the bar counts what is embedded: say why it is short of the images, and which they are
        import logging

        def shown(p):  # the file and its folder: classes numbered per folder share file names (a twelfth user)
            return "/".join(Path(p).parts[-2:])

        named = ", ".join(f"{shown(paths[i])} = {shown(paths[j])}" for i, j in copies[:3])
        logging.getLogger("lbee").info(
            f"{len(copies)} image(s) are byte-identical to another image ({named}"
            f"{', ...' if len(copies) > 3 else ''}): each content is embedded once and shared."
        )
    n_encoded = 0
    pending_h, pending_e = [], []

    def flush():
        nonlocal cache
        if cache and pending_h:
            if not _cache_write(cache.put_images, list(pending_h), np.concatenate(pending_e), where=cache.root):
                cache = None  # a full or read-only cache only costs the next run its embedding
        pending_h.clear()
        pending_e.clear()

    if todo:
        loader = DataLoader(
            # each decoded from bytes of the digest it is cached under (sweep 32s B2: a folder swapped between the
            # hashing and the decoding put the other images' embeddings under these files' digests)
            ImageDataset([paths[i] for i in todo], encoder.preprocess, sha256=[hashes[i] for i in todo]),
            batch_size=batch_size,
            num_workers=num_workers,
            collate_fn=collate_images,
        )
        bar = tqdm(total=len(todo), desc="embedding images", unit="img", disable=not progress)
        done = 0
        report("embedding images", 0, len(todo))
        try:
            for local_ids, batch, bad in loader:
                for j, reason in bad:
                    if strict:
                        raise ValueError(f"Cannot read image {paths[todo[j]]!r}: {reason}")
                    failures[todo[j]] = reason
                if batch is not None:
                    emb = encoder.encode_image_batch(batch)
                    n_encoded += len(local_ids)
                    batch_hashes = [hashes[todo[j]] for j in local_ids]
                    known.update(zip(batch_hashes, emb))
                    pending_h.extend(batch_hashes)
                    pending_e.append(emb)
                    if len(pending_h) >= FLUSH_EVERY:
                        flush()
                done += len(local_ids) + len(bad)
                bar.update(len(local_ids) + len(bad))
                report("embedding images", done, len(todo))  # not bar.n: a disabled bar (no terminal) counts nothing
        finally:
            flush()  # keep what was computed, even on interruption
            bar.close()

    for i, h in enumerate(hashes):
        if i not in failures and h not in known:
            failures[i] = "could not be embedded"
    ok = np.array([i not in failures for i in range(len(paths))], dtype=bool)
    fail_list = [(paths[i], failures[i]) for i in sorted(failures)]
    if fail_list and not strict and warn:
        warnings.warn(
            f"Skipped {len(fail_list)} unreadable image(s), first: {fail_list[0][0]} ({fail_list[0][1]}).", stacklevel=2
        )
    rows = [known[hashes[i]] for i in range(len(paths)) if ok[i]]
    dim = rows[0].shape[0] if rows else 0
    emb = np.stack(rows).astype(np.float32) if rows else np.zeros((0, dim), np.float32)
    kept = [h if good else None for h, good in zip(hashes, ok)]
    return ImageEmbeddings(emb, ok, fail_list, n_encoded, hashes=kept, real_paths=reals)


def _cache_write(put, *args, where):
    """Store in the embedding cache; a failure (a full disk, a read-only folder) is a warning, never the run's end.

    The embeddings are kept in memory either way: the cache only spares the next run the work.
    """
    try:
        put(*args)
        return True
    except OSError as exc:
        warnings.warn(
            f"The embedding cache {str(where)!r} could not be written ({exc.strerror or exc}); the embeddings of "
            "this run are kept, but the next run computes them again (free space, or set --cache-dir).",
            stacklevel=3,
        )
        return False


class EncoderSpec:
    """A picklable recipe for an encoder: ``EncoderSpec('open_clip:ViT-B-32', device='cuda')()`` builds it.

    Ray actors receive the recipe and build their own model (on their GPU when they have one).
    """

    def __init__(self, spec, **kwargs):
        self.spec = spec
        self.kwargs = kwargs

    def __call__(self):
        from ._registry import create_encoder

        return create_encoder(self.spec, **self.kwargs)

    def __repr__(self):
        return f"EncoderSpec({self.spec!r}, **{self.kwargs!r})"


class _EmbedActor:
    """A Ray actor: one encoder, one open cache, chunks of paths in, embeddings out."""

    def __init__(self, encoder_factory, cache_dir, use_cache, batch_size):
        self.encoder = encoder_factory()
        self.cache = EmbeddingCache(self.encoder.identity(), cache_dir) if use_cache else None
        self.use_cache = use_cache
        self.batch_size = batch_size

    def identity(self):
        return self.encoder.identity()

    def provenance_basis(self):
        """(identity, declared τ) of the actor's encoder, for the provenance sidecar."""
        tau = getattr(self.encoder, "default_tau", None)
        return self.encoder.identity(), None if tau is None else float(tau)

    def embed(self, start, paths):
        res = embed_images(
            self.encoder, paths, use_cache=self.use_cache, cache=self.cache, batch_size=self.batch_size, warn=False
        )
        return start, res.embeddings, res.ok, res.failures, res.n_encoded


def embed_images_ray(
    encoder_factory,
    paths,
    *,
    out=None,
    cache_dir=None,
    use_cache=True,
    batch_size=64,
    chunk_size=1024,
    num_actors=None,
    gpus_per_actor=None,
    address=None,
    progress=False,
):
    """`embed_images` on a Ray cluster: an actor pool of encoders over chunks of the image list.

    Every actor reads and fills the same content-hash cache as the local
    path (``cache_dir`` must be a folder every node sees), so a later local
    run encodes nothing. Chunks come back in any order and are written into a
    memory-mapped ``.npy`` at once; no copy of all embeddings is held.

    Parameters
    ----------
    encoder_factory : callable
        Picklable, returns an [`Encoder`][lbee.encoders.Encoder]; e.g. ``EncoderSpec('open_clip:ViT-B-32')``.
    paths : list of str
    out : path-like, optional
        The ``.npy`` the embeddings of the readable images are streamed to
        (memory-mapped); without it they are gathered in memory. Pass it for
        large runs.
    cache_dir : path-like, optional
        As in `embed_images`.
    use_cache : bool, default=True
        As in `embed_images`.
    batch_size : int, default=64
        As in `embed_images`.
    chunk_size : int, default=1024
        Paths per task.
    num_actors : int, optional
        Default: one per GPU, or one per CPU without GPUs.
    gpus_per_actor : float, optional
        Default: 1 when the cluster has GPUs, else 0.
    address : str, optional
        Ray address ('auto' for a cluster started with ``ray start --head``);
        default: the running Ray, or a new local one.
    progress : bool, default=False

    Returns
    -------
    ImageEmbeddings
        ``embeddings`` is a read-only memory map of ``out`` when given.
    """
    from pathlib import Path

    from tqdm.auto import tqdm

    from ..ray_pool import actor_pool, kill_actors

    paths = [str(p) for p in paths]
    n = len(paths)
    pool, actors = actor_pool(
        _EmbedActor,
        (encoder_factory, cache_dir, use_cache, batch_size),
        num_actors=num_actors,
        gpus_per_actor=gpus_per_actor,
        address=address,
    )
    chunks = [(s, paths[s : s + chunk_size]) for s in range(0, n, chunk_size)]
    ok = np.zeros(n, dtype=bool)
    failures, n_encoded = [], 0
    full, full_path = None, None  # (n, d) rows in input order; unreadable rows stay unwritten
    bar = tqdm(total=n, desc="embedding images (ray)", unit="img", disable=not progress)
    identity, tau = None, None
    try:
        import ray

        identity, tau = ray.get(actors[0].provenance_basis.remote())
        for start, emb, chunk_ok, chunk_fail, chunk_encoded in pool.map_unordered(
            lambda actor, chunk: actor.embed.remote(*chunk), chunks
        ):
            if full is None and emb.shape[0]:
                if out is not None:
                    full_path = Path(str(out) + ".partial.npy")
                    full_path.parent.mkdir(parents=True, exist_ok=True)
                    full = np.lib.format.open_memmap(full_path, mode="w+", dtype=np.float32, shape=(n, emb.shape[1]))
                else:
                    full = np.zeros((n, emb.shape[1]), dtype=np.float32)
            rows = start + np.flatnonzero(chunk_ok)
            if rows.size:
                full[rows] = emb
            ok[start : start + len(chunk_ok)] = chunk_ok
            failures.extend(chunk_fail)
            n_encoded += chunk_encoded
            bar.update(len(chunk_ok))
    finally:
        bar.close()
        kill_actors(actors)
    order = {p: i for i, p in enumerate(paths)}
    failures.sort(key=lambda f: order.get(f[0], n))
    if failures:
        warnings.warn(
            f"Skipped {len(failures)} unreadable image(s), first: {failures[0][0]} ({failures[0][1]}).", stacklevel=2
        )
    d = 0 if full is None else full.shape[1]
    keep = np.flatnonzero(ok)
    if out is None:
        emb = full[keep] if full is not None else np.zeros((0, d), np.float32)
        return ImageEmbeddings(np.ascontiguousarray(emb, dtype=np.float32), ok, failures, n_encoded, identity, tau)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    if full is not None and keep.size == n:
        full.flush()
        del full
        full_path.replace(out)
    else:  # compact the readable rows, block by block, into a temp file renamed at the end (atomic)
        compact = Path(str(out) + ".compact.npy")
        target = np.lib.format.open_memmap(compact, mode="w+", dtype=np.float32, shape=(keep.size, d))
        for b in range(0, keep.size, 65536):
            target[b : b + 65536] = full[keep[b : b + 65536]]
        target.flush()
        del target, full
        compact.replace(out)
        if full_path is not None:
            full_path.unlink(missing_ok=True)
    return ImageEmbeddings(np.load(out, mmap_mode="r"), ok, failures, n_encoded, identity, tau)


#: Sentences embedded per call of the encoder, each chunk reported to the run's listener.
SENTENCE_CHUNK = 4096


def embed_sentences(encoder, sentences, *, cache_dir=None, use_cache=True):
    """Unit float32 sentence embeddings of shape (N, d), cached per sentence list and encoder."""
    sentences = list(sentences)
    report("embedding sentences", 0, len(sentences))
    cache = EmbeddingCache(encoder.identity(), cache_dir) if use_cache else None
    if cache is not None:
        hit = cache.get_sentences(sentences)
        if hit is not None:
            report("embedding sentences", len(sentences), len(sentences))
            return hit
    parts = []  # in chunks, each reported: a grammar of 150,000 sentences sat at 0 % for minutes
    for start in range(0, len(sentences), SENTENCE_CHUNK):
        parts.append(np.asarray(encoder.encode_text(sentences[start : start + SENTENCE_CHUNK])))
        report("embedding sentences", min(start + SENTENCE_CHUNK, len(sentences)), len(sentences))
    emb = np.concatenate(parts) if parts else np.asarray(encoder.encode_text(sentences))
    if cache is not None:
        _cache_write(cache.put_sentences, sentences, emb, where=cache.root)
    return emb
