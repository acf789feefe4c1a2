"""The encoder interface every backend implements."""

from __future__ import annotations

import numpy as np


class EncoderLoadError(RuntimeError):
    """Weights or a model definition could not be loaded."""


def unit_float32(x):
    """Rows renormalised to unit L2 norm, as contiguous float32."""
    x = np.asarray(x, dtype=np.float32)
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return np.ascontiguousarray(x / np.maximum(norms, 1e-12))


class Encoder:
    """A joint image–text encoder.

    Subclasses set ``name`` and ``default_tau`` and implement [`identity`][lbee.encoders.Encoder.identity],
    [`preprocess`][lbee.encoders.Encoder.preprocess], [`encode_image_batch`][lbee.encoders.Encoder.encode_image_batch]
    and [`encode_text`][lbee.encoders.Encoder.encode_text].
    Every output row is a unit float32 vector.
    """

    name = "encoder"
    #: SetDiff / FPDiff threshold calibrated for this space; None: the CLIP value
    #: (``lbee.core.selection.resolve_tau``).
    default_tau: float | None = None

    def identity(self):
        """JSON-serialisable dict naming the model, its weights and its preprocessing (the cache key)."""
        raise NotImplementedError

    def preprocess(self, image):
        """PIL image -> tensor of shape (3, H, W). Must be picklable for DataLoader workers."""
        raise NotImplementedError

    def encode_image_batch(self, batch):
        """Tensor (B, 3, H, W) -> ndarray (B, d) of unit float32 rows."""
        raise NotImplementedError

    def encode_text(self, sentences, batch_size=256):
        """List of str (N) -> ndarray (N, d) of unit float32 rows."""
        raise NotImplementedError
