"""Small CNNs for the SpotCheck world: the encoder's image tower and the square classifier."""

from __future__ import annotations

import numpy as np
import torch
from torch import nn


def _block(cin, cout):
    return nn.Sequential(
        nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(inplace=True), nn.MaxPool2d(2)
    )


class ImageTower(nn.Module):
    """5-layer CNN mapping a (3, 64, 64) render to a unit vector in the sentence space.

    The last feature map is flattened (not pooled) so absolute position
    ("square above the centre") survives.
    """

    def __init__(self, out_dim=384, widths=(16, 32, 64, 128, 128), image_size=64):
        super().__init__()
        layers, cin = [], 3
        for w in widths:
            layers.append(_block(cin, w))
            cin = w
        self.features = nn.Sequential(*layers)
        side = image_size // 2 ** len(widths)
        self.head = nn.Sequential(nn.Flatten(), nn.Dropout(0.1), nn.Linear(cin * side * side, out_dim))

    def forward(self, x):
        return nn.functional.normalize(self.head(self.features(x)), dim=-1)


class TextHead(nn.Module):
    """A residual MLP over the frozen sentence encoder's unit embeddings, renormalised: t + W₂ GELU(W₁ t).

    all-MiniLM-L6-v2 puts "an image with no circle" at cosine 0.88 from "an
    image with a circle": the two differ along a direction shared by every
    "no X", which no single image embedding can take both signs of. The head
    (trained with the image tower; the sentence encoder stays frozen) can
    turn that shared direction into one per object. Its last layer starts at
    zero, so training starts from the frozen encoder's own space.
    """

    def __init__(self, dim=384, hidden=768):
        super().__init__()
        self.mlp = nn.Sequential(nn.Linear(dim, hidden), nn.GELU(), nn.Linear(hidden, dim))
        nn.init.zeros_(self.mlp[2].weight)
        nn.init.zeros_(self.mlp[2].bias)

    def forward(self, t):
        return nn.functional.normalize(t + self.mlp(t), dim=-1)


class SquareClassifier(nn.Module):
    """The "is there a square?" model; `features` gives the penultimate representation."""

    def __init__(self, widths=(16, 32, 64), hidden=64, n_classes=2):
        super().__init__()
        layers, cin = [], 3
        for w in widths:
            layers.append(_block(cin, w))
            cin = w
        self.body = nn.Sequential(
            *layers, nn.AdaptiveAvgPool2d(4), nn.Flatten(), nn.Linear(cin * 16, hidden), nn.ReLU(inplace=True)
        )
        self.fc = nn.Linear(hidden, n_classes)

    def features(self, x):
        return self.body(x)

    def forward(self, x):
        return self.fc(self.body(x))


def to_tensor(images):
    """uint8 (n, H, W, 3) -> float tensor (n, 3, H, W) in [-1, 1].

    A read-only array (``np.asarray`` of a PIL image, a memory map) is copied first: torch cannot share memory it
    may not write, and warned so once per process ("The given NumPy array is not writable").
    """
    images = np.asarray(images)
    if not images.flags.writeable:
        images = images.copy()
    x = torch.as_tensor(images).permute(0, 3, 1, 2).float()
    return x / 127.5 - 1.0
