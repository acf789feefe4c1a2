"""LBEE's own slicer: Ward clusters of the hard split (SPEC §3.2, LBEE Step 2)."""

from __future__ import annotations

import numpy as np

from .._validation import as_unit_rows, check_choice, check_positive_int, check_real
from ..core.clustering import DEFAULT_WARD, WARD_METHODS, ward_labels
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
        :class:`lbee.core.clustering.ClusterCountWarning` when it is fewer.
    ward : str, default=lbee.core.clustering.DEFAULT_WARD
        The Ward variant, one of ``lbee.core.clustering.WARD_METHODS``.
    a : float, default=0.2
        Split margin used when :meth:`fit` is given ``confidence`` only.
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
        from ..core.split import split_by_confidence

        X = as_unit_rows(embeddings, "embeddings")
        c = check_positive_int(self.n_clusters, "n_clusters")
        check_choice(self.ward, "ward", set(WARD_METHODS))
        if hard is not None:
            mask = np.asarray(hard, dtype=bool)
            if mask.shape != (X.shape[0],):
                raise ValueError(f"`hard` must be a boolean mask of shape ({X.shape[0]},); received shape "
                                 f"{mask.shape}.")
        elif confidence is not None:
            mask, _ = split_by_confidence(confidence, a=check_real(self.a, "a", minimum=0.0))
        else:
            mask = np.ones(X.shape[0], dtype=bool)
        idx = np.flatnonzero(mask)
        if idx.size == 0:
            raise ValueError("The hard split is empty: WardSlicer has nothing to cluster.")
        if c > idx.size:
            import warnings

            from ..core.clustering import ClusterCountWarning, capped_clusters_message

            warnings.warn(capped_clusters_message(c, int(idx.size)), ClusterCountWarning, stacklevel=2)
        labels = ward_labels(X[idx], c, self.memory, method=self.ward)
        self.labels_ = np.full(X.shape[0], -1, dtype=np.int64)
        self.labels_[idx] = labels
        self.slices_ = [idx[labels == i] for i in range(int(labels.max()) + 1)]
        self.n_samples_fit_ = X.shape[0]
        return self

    def fit_split(self, embeddings, *, confidence=None, hard=None):
        return self.fit(embeddings, confidence=confidence, hard=hard)

    def hard_groups(self, image_embeddings, *, confidence=None, hard=None):
        # Ward's groups depend on the split it is given, so it is always (re)fitted on it.
        return BaseSlicer.hard_groups(self.fit(image_embeddings, confidence=confidence, hard=hard),
                                      image_embeddings, confidence=confidence, hard=hard)

    def predict(self, embeddings):
        """Cluster of each row the slicer was fitted on (-1 outside the hard split)."""
        from ._base import check_fitted

        check_fitted(self)
        n = np.asarray(embeddings).shape[0]
        if n != self.n_samples_fit_:
            raise ValueError(f"WardSlicer has no out-of-sample rule; it labels the {self.n_samples_fit_} rows it "
                             f"was fitted on, and received {n}.")
        return self.labels_
