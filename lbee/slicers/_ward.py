"""LBEE's own slicer: Ward clusters of the hard split (LBEE Step 2)."""

from __future__ import annotations

import numpy as np

from ..core.clustering import DEFAULT_WARD, ward_hard_groups
from ._base import BaseSlicer


class WardSlicer(BaseSlicer):
    """Ward agglomerative clusters of the hard images, as hard groups.

    Unlike Domino and PlaneSpot, Ward does not look at the errors inside the
    hard split: the split itself (low confidence, or explicit masks) is the
    error signal, and every cluster of it is a hard group.

    Parameters
    ----------
    n_clusters : int, default=15
        Clusters asked for; Ward forms ``min(n_clusters, n_hard)``, with a
        `lbee.core.clustering.ClusterCountWarning` when it is fewer.
    ward : str, default='auto'
        The Ward variant, one of ``lbee.core.clustering.WARD_METHODS``.
    a : float, default=0.2
        Split margin used when [`fit`][lbee.slicers.WardSlicer.fit] is given ``confidence`` only.
    memory : joblib.Memory, optional
        Caches the Ward tree (sweeps over ``n_clusters`` cut one tree).

    Attributes
    ----------
    slices_ : list of ndarray of int
        The clusters of the hard split (indices into the fitted rows), in
        scikit-learn's ``AgglomerativeClustering`` label order.
    labels_ : ndarray of int, shape (n,)
        Cluster of each row; -1 for rows outside the hard split.
    n_samples_fit_ : int
    """

    def __init__(self, n_clusters=15, *, ward=DEFAULT_WARD, a=0.2, memory=None):
        self.n_clusters = n_clusters
        self.ward = ward
        self.a = a
        self.memory = memory

    def fit(self, embeddings, *, confidence=None, hard=None):
        """Cluster the hard rows of ``embeddings``.

        Parameters
        ----------
        embeddings : array-like of shape (n, d)
        confidence : array-like of shape (n,), optional
            φ (higher = easier); hard = φ < μ − aσ. Ignored when ``hard`` is given.
        hard : array-like of bool, shape (n,), optional
            The hard split. With neither, every row is clustered.

        Returns
        -------
        self
        """
        self.labels_, self.slices_ = ward_hard_groups(
            embeddings, self.n_clusters, self.memory, method=self.ward, hard=hard, confidence=confidence, a=self.a
        )
        self.n_samples_fit_ = self.labels_.shape[0]
        return self

    def fit_split(self, embeddings, *, confidence=None, hard=None):
        return self.fit(embeddings, confidence=confidence, hard=hard)

    def hard_groups(self, image_embeddings, *, confidence=None, hard=None):
        # Ward's groups depend on the split it is given, so it is always (re)fitted on it.
        return BaseSlicer.hard_groups(
            self.fit(image_embeddings, confidence=confidence, hard=hard),
            image_embeddings,
            confidence=confidence,
            hard=hard,
        )

    def predict(self, embeddings):
        """Cluster of each row the slicer was fitted on (-1 outside the hard split)."""
        from ._base import check_fitted

        check_fitted(self)
        n = np.asarray(embeddings).shape[0]
        if n != self.n_samples_fit_:
            raise ValueError(
                f"WardSlicer has no out-of-sample rule; it labels the {self.n_samples_fit_} rows it "
                f"was fitted on, and received {n}."
            )
        return self.labels_
