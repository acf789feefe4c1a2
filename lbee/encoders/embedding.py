"""Embedding images and sentences with an encoder, through the on-disk cache."""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np

from ..io.cache import EmbeddingCache, file_sha256

# Shards are flushed at least this often, so an interrupted run loses little.
FLUSH_EVERY = 1024


@dataclass
class ImageEmbeddings:
    """Result of :func:`embed_images`.

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
    """

    embeddings: np.ndarray
    ok: np.ndarray
    failures: list = field(default_factory=list)
    n_encoded: int = 0


class _ImageDataset:
    """Decodes and preprocesses images; a bad image yields None and the reason instead of raising."""

    def __init__(self, paths, preprocess):
        self.paths = paths
        self.preprocess = preprocess

    def __len__(self):
        return len(self.paths)

    def __getitem__(self, i):
        from ..io.images import open_rgb

        try:
            tensor = self.preprocess(open_rgb(self.paths[i]))
            return i, tensor, None
        except Exception as exc:  # unreadable, truncated or not an image
            return i, None, f"{type(exc).__name__}: {exc}"


def _collate(items):
    import torch

    good = [(i, t) for i, t, _ in items if t is not None]
    bad = [(i, r) for i, _, r in items if r is not None]
    batch = torch.stack([t for _, t in good]) if good else None
    return [i for i, _ in good], batch, bad


def embed_images(encoder, paths, *, cache_dir=None, use_cache=True, batch_size=64, num_workers=0,
                 progress=False, strict=False):
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

    Returns
    -------
    ImageEmbeddings
    """
    from torch.utils.data import DataLoader
    from tqdm.auto import tqdm

    paths = [str(p) for p in paths]
    failures = {}
    hashes = [None] * len(paths)
    for i, p in enumerate(tqdm(paths, desc="hashing", disable=not progress, leave=False)):
        try:
            hashes[i] = file_sha256(p)
        except OSError as exc:
            if strict:
                raise
            failures[i] = f"{type(exc).__name__}: {exc}"

    cache = EmbeddingCache(encoder.identity(), cache_dir) if use_cache else None
    known = cache.get_images([h for h in hashes if h]) if cache else {}
    todo, seen = [], set()
    for i, h in enumerate(hashes):
        if h and h not in known and h not in seen:
            seen.add(h)
            todo.append(i)

    n_encoded = 0
    pending_h, pending_e = [], []

    def flush():
        if cache and pending_h:
            cache.put_images(list(pending_h), np.concatenate(pending_e))
        pending_h.clear()
        pending_e.clear()

    if todo:
        loader = DataLoader(_ImageDataset([paths[i] for i in todo], encoder.preprocess), batch_size=batch_size,
                            num_workers=num_workers, collate_fn=_collate)
        bar = tqdm(total=len(todo), desc="embedding images", unit="img", disable=not progress)
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
                bar.update(len(local_ids) + len(bad))
        finally:
            flush()  # keep what was computed, even on interruption
            bar.close()

    for i, h in enumerate(hashes):
        if i not in failures and h not in known:
            failures[i] = "could not be embedded"
    ok = np.array([i not in failures for i in range(len(paths))], dtype=bool)
    fail_list = [(paths[i], failures[i]) for i in sorted(failures)]
    if fail_list and not strict:
        warnings.warn(f"Skipped {len(fail_list)} unreadable image(s), first: {fail_list[0][0]} "
                      f"({fail_list[0][1]}).", stacklevel=2)
    rows = [known[hashes[i]] for i in range(len(paths)) if ok[i]]
    dim = rows[0].shape[0] if rows else 0
    emb = np.stack(rows).astype(np.float32) if rows else np.zeros((0, dim), np.float32)
    return ImageEmbeddings(emb, ok, fail_list, n_encoded)


def embed_sentences(encoder, sentences, *, cache_dir=None, use_cache=True):
    """Unit float32 sentence embeddings of shape (N, d), cached per sentence list and encoder."""
    sentences = list(sentences)
    cache = EmbeddingCache(encoder.identity(), cache_dir) if use_cache else None
    if cache is not None:
        hit = cache.get_sentences(sentences)
        if hit is not None:
            return hit
    emb = encoder.encode_text(sentences)
    if cache is not None:
        cache.put_sentences(sentences, emb)
    return emb
