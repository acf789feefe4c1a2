"""On-disk embedding cache (SPEC §7).

Image embeddings are keyed by the encoder's identity (name, weights,
preprocessing) and each image's content hash. They are written in shards as a
run goes, each shard atomically (temp file + rename), so an interrupted run
keeps everything it finished and a rerun encodes only what is missing.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import uuid
from pathlib import Path

import numpy as np


def default_cache_dir():
    """``$LBEE_CACHE_DIR`` if set, else ``~/.cache/lbee``."""
    return Path(os.environ.get("LBEE_CACHE_DIR") or Path.home() / ".cache" / "lbee")


def file_sha256(path, chunk=1 << 20):
    """Hex SHA-256 of a file's content."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(chunk):
            h.update(block)
    return h.hexdigest()


def identity_key(identity):
    """Stable short hash of a JSON-serialisable identity dict."""
    return hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:24]


def atomic_write_bytes(path, data):
    """Write ``data`` to ``path`` via a temp file in the same folder and a rename."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=path.suffix)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_save_npz(path, **arrays):
    import io

    buf = io.BytesIO()
    np.savez(buf, **arrays)
    atomic_write_bytes(path, buf.getvalue())


class EmbeddingCache:
    """Cache of unit embeddings for one encoder identity.

    Parameters
    ----------
    identity : dict
        JSON-serialisable; encoder name, weights identity and preprocessing.
    cache_dir : path-like, optional
        Root folder, default :func:`default_cache_dir`.
    """

    def __init__(self, identity, cache_dir=None):
        self.identity = identity
        self.root = Path(cache_dir or default_cache_dir()) / "embeddings" / identity_key(identity)
        self._images = None

    def _load_images(self):
        if self._images is None:
            self._images = {}
            for shard in sorted((self.root / "images").glob("shard-*.npz")):
                try:
                    with np.load(shard) as data:
                        for h, e in zip(data["hashes"], data["embeddings"]):
                            self._images[str(h)] = e
                except (OSError, ValueError, KeyError):
                    continue  # a damaged shard is re-encoded, never fatal
        return self._images

    def get_images(self, hashes):
        """Cached embeddings for the given content hashes: dict hash -> (d,) array."""
        store = self._load_images()
        return {h: store[h] for h in hashes if h in store}

    def put_images(self, hashes, embeddings):
        """Persist one shard of (hash, embedding) pairs atomically."""
        if len(hashes) == 0:
            return
        self.root.mkdir(parents=True, exist_ok=True)
        meta = self.root / "identity.json"
        if not meta.exists():
            atomic_write_bytes(meta, json.dumps(self.identity, indent=2, sort_keys=True).encode())
        emb = np.asarray(embeddings, dtype=np.float32)
        atomic_save_npz(self.root / "images" / f"shard-{uuid.uuid4().hex}.npz",
                        hashes=np.asarray(hashes, dtype=str), embeddings=emb)
        store = self._load_images()
        store.update(zip(hashes, emb))

    def _sentence_path(self, sentences):
        key = hashlib.sha256("\n".join(sentences).encode()).hexdigest()[:24]
        return self.root / "sentences" / f"{key}.npy"

    def get_sentences(self, sentences):
        """The cached (N, d) matrix for exactly this list of sentences, or None."""
        path = self._sentence_path(sentences)
        if path.exists():
            try:
                arr = np.load(path)
                if arr.shape[0] == len(sentences):
                    return arr
            except (OSError, ValueError):
                pass
        return None

    def put_sentences(self, sentences, embeddings):
        import io

        buf = io.BytesIO()
        np.save(buf, np.asarray(embeddings, dtype=np.float32))
        atomic_write_bytes(self._sentence_path(sentences), buf.getvalue())
