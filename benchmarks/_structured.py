"""Structured synthetic embeddings shared by the benchmarks (unit rows, float32).

- :func:`anisotropic_sphere`: a mixture of anisotropic clusters on the unit
  sphere (each cluster spreads along a few random directions of its own).
- :func:`spotcheck_like`: SpotCheck-style worlds, where an image is a
  combination of discrete attributes (object, colour, background, texture,
  position), each attribute value a direction; a few hundred distinct
  combinations are tiled to n rows with noise.
"""

import numpy as np


def _unit(x):
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def anisotropic_sphere(n, d=512, n_clusters=20, rank=4, spread=0.35, noise=0.3, random_state=0):
    """n unit rows from ``n_clusters`` anisotropic clusters; returns (X, true cluster of each row).

    Cluster centres share a common direction (cosine ~0.5 between centres, as
    CLIP image embeddings do); each cluster spreads along ``rank`` directions of
    its own with standard deviations ``spread`` down to ``spread / 3``, plus
    isotropic noise of norm ~``noise``; cluster sizes are uneven (Dirichlet).
    """
    rng = np.random.default_rng(random_state)
    common = rng.normal(size=d)
    common /= np.linalg.norm(common)
    centres = _unit(common + _unit(rng.normal(size=(n_clusters, d))))
    axes = _unit(rng.normal(size=(n_clusters * rank, d))).reshape(n_clusters, rank, d)
    sizes = rng.dirichlet(np.full(n_clusters, 2.0))
    y = rng.choice(n_clusters, size=n, p=sizes)
    z = rng.normal(size=(n, rank)) * spread * np.linspace(1.0, 1.0 / 3.0, rank)
    X = centres[y] + np.einsum("nr,nrd->nd", z, axes[y]) + noise * rng.normal(size=(n, d)) / np.sqrt(d)
    return _unit(X), y


def spotcheck_like(n, d=512, attributes=(4, 3, 3, 2, 2), n_combinations=300, noise=0.35, random_state=0):
    """n unit rows tiled from ``n_combinations`` attribute combinations; returns (X, combination of each row)."""
    rng = np.random.default_rng(random_state)
    values = [rng.normal(size=(k, d)) / np.sqrt(d) for k in attributes]
    weights = np.linspace(1.5, 0.5, len(attributes))
    combos = np.stack([rng.integers(0, k, n_combinations) for k in attributes], axis=1)
    base = sum(w * v[combos[:, j]] for j, (w, v) in enumerate(zip(weights, values)))
    y = rng.integers(0, n_combinations, n)
    X = base[y] * np.sqrt(d) / np.sqrt(len(attributes)) + noise * rng.normal(size=(n, d))
    return _unit(X), y
