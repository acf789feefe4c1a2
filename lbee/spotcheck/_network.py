"""Small CNNs for the SpotCheck world: the encoder's image tower and the square classifier."""

from __future__ import annotations

import torch
from torch import nn


def _block(cin, cout):
    return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(inplace=True),
                         nn.MaxPool2d(2))


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


class SquareClassifier(nn.Module):
    """The "is there a square?" model; :meth:`features` gives the penultimate representation."""

    def __init__(self, widths=(16, 32, 64), hidden=64, n_classes=2):
        super().__init__()
        layers, cin = [], 3
        for w in widths:
            layers.append(_block(cin, w))
            cin = w
        self.body = nn.Sequential(*layers, nn.AdaptiveAvgPool2d(4), nn.Flatten(), nn.Linear(cin * 16, hidden),
                                  nn.ReLU(inplace=True))
        self.fc = nn.Linear(hidden, n_classes)

    def features(self, x):
        return self.body(x)

    def forward(self, x):
        return self.fc(self.body(x))


def to_tensor(images):
    """uint8 (n, H, W, 3) -> float tensor (n, 3, H, W) in [-1, 1]."""
    x = torch.as_tensor(images).permute(0, 3, 1, 2).float()
    return x / 127.5 - 1.0
