"""Image files into model batches: one loader for the encoders and the classifiers.

A bad image (unreadable, truncated, not an image) does not stop a batch: it
comes back with the reason, and the caller lists it as skipped.
"""

from __future__ import annotations


class ImageDataset:
    """Decodes and preprocesses images; a bad image yields None and the reason instead of raising.

    Parameters
    ----------
    paths : list of str
    preprocess : callable
        PIL image -> tensor of shape (3, S, S) (an encoder's or a classifier's transform).
    sha256 : list of str, optional
        Per path, the digest of the bytes hashed before: an image is decoded from bytes of that digest only, or is
        bad (another file put in its place since; sweep 32s: its embedding was cached under the first file's digest).
    """

    def __init__(self, paths, preprocess, sha256=None):
        self.paths = paths
        self.preprocess = preprocess
        self.sha256 = sha256

    def __len__(self):
        return len(self.paths)

    def __getitem__(self, i):
        from ..io.images import open_rgb

        try:
            expected = None if self.sha256 is None else self.sha256[i]
            tensor = self.preprocess(open_rgb(self.paths[i], sha256=expected))
            return i, tensor, None
        except Exception as exc:  # unreadable, truncated or not an image
            return i, None, f"{type(exc).__name__}: {exc}"


def collate_images(items):
    """``DataLoader`` collate of `ImageDataset` items: (positions read, batch or None, [(position, reason)])."""
    import torch

    good = [(i, t) for i, t, _ in items if t is not None]
    bad = [(i, r) for i, _, r in items if r is not None]
    batch = torch.stack([t for _, t in good]) if good else None
    return [i for i, _ in good], batch, bad
