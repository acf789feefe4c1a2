"""What every slicer shares: scikit-learn conventions and the hook ``explain`` uses."""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.exceptions import NotFittedError


def check_fitted(est, attr="slices_"):
    if not hasattr(est, attr):
        raise NotFittedError(f"This {type(est).__name__} instance is not fitted yet; call `fit` first.")


def order_by_error_importance(labels, errors, n_groups):
    """Group ids ordered by error rate × number of errors (most important first)."""
    imp = []
    for g in range(n_groups):
        m = labels == g
        e = float(errors[m].sum())
        imp.append(e / m.sum() * e if m.any() else -1.0)
    order = sorted(range(n_groups), key=lambda g: -imp[g])
    return order, np.asarray(imp)


class BaseSlicer(BaseEstimator):
    """Base class: a fitted slicer exposes ``slices_``, its underperforming groups, most important first.

    ``slices_`` is a list of int arrays indexing the rows it was fitted on;
    ``n_samples_fit_`` is how many rows that was.
    """

    def fit_split(self, embeddings, *, confidence=None, hard=None):
        """Fit on image embeddings with LBEE's easy / hard split as the error signal.

        The one fit signature every slicer shares (``explain``, the run layer
        and the contract test call it); each slicer's own ``fit`` keeps its
        paper's inputs.

        Parameters
        ----------
        embeddings : array-like of shape (n, d)
        confidence : array-like of shape (n,), optional
            φ, higher = easier.
        hard : array-like of bool, shape (n,), optional
            The hard split.

        Returns
        -------
        self
        """
        self._fit_from_split(np.asarray(embeddings), confidence, hard)
        return self

    def _fit_from_split(self, embeddings, confidence, hard):  # pragma: no cover - abstract
        raise NotImplementedError

    def hard_groups(self, image_embeddings, *, confidence=None, hard=None):
        """Hard groups for [`lbee.explain`][lbee.explain].

        A fitted slicer returns its ``slices_`` (it must have been fitted on the
        same n images). An unfitted one is first fitted on the image embeddings
        with the split as its error signal (see the subclass docstring).
        """
        if not hasattr(self, "slices_"):
            self.fit_split(image_embeddings, confidence=confidence, hard=hard)
        n = np.asarray(image_embeddings).shape[0]
        if n != self.n_samples_fit_:
            raise ValueError(
                f"This {type(self).__name__} was fitted on {self.n_samples_fit_} rows but `explain` "
                f"received {n} images; fit it on the same images."
            )
        return [np.asarray(s, dtype=np.int64) for s in self.slices_]
