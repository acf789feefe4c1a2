"""PlaneSpot (Plumb et al., SpotCheck §4): a 2-D map of the model's representation, plus confidence, then a GMM."""

from __future__ import annotations

import numpy as np

from .._validation import as_float_matrix, as_float_vector, check_positive_int, check_real
from ._base import BaseSlicer, check_fitted, order_by_error_importance


class PlaneSpotSlicer(BaseSlicer):
    """Blindspot discovery for one class.

    Input: the model's representation of the class's images (penultimate
    activations) and its confidence for the class. The representation is
    reduced to 2-D (``reducer``), each column min–max normalised to [0, 1],
    ``weight · confidence`` appended, and a Gaussian mixture (full covariance)
    is fitted with its number of components chosen by BIC among
    ``min_components``..``max_components`` (10–32 in the reference code,
    njohnson99/spotcheck). Groups are ordered by error rate × number of errors,
    with soft errors 1 − confidence as in the reference, and the top
    ``n_slices`` (10, the paper's cap, §5.1) are returned.

    Parameters
    ----------
    reducer : {'scvis', 'tsne', 'pca'}, default='scvis'
    weight : float, default=0.025
        w, the weight of the confidence column (SpotCheck app. E).
    min_components : int, default=10
        The fewest GMM components considered.
    max_components : int, default=32
        The most GMM components considered (capped at the number of examples − 1).
    n_slices : int or None, default=10
        How many groups ``slices_`` returns (None: all components).
    soft_errors : bool, default=True
        Importance from 1 − confidence (reference) rather than hard errors;
        ``errors`` given to [`fit`][lbee.slicers.PlaneSpotSlicer.fit] always take precedence.
    perplexity : float, default=30.0
        For 'tsne' (scvis uses its own default).
    scvis_iter : int or None, default=None
        scvis training steps; None: the reference ``scvis train`` rule (100
        epochs of 512, at least 2,000 steps).
    device : str, default='cpu'
    random_state : int or None, default=None

    Attributes
    ----------
    embedding_ : ndarray of shape (n, 2)
        The 2-D coordinates before normalisation (reports draw the plane).
    plane_ : ndarray of shape (n, 3)
        Normalised coordinates and the weighted confidence, as clustered.
    n_components_ : int
    labels_ : ndarray of shape (n,)
        GMM component of every example (numbered in importance order).
    importance_ : ndarray of shape (n_components_,)
    slices_ : list of ndarray of int
        Every group, most important first; empty when the class has no
        error (``lbee.explain`` then raises "returned no non-empty hard group").

    Notes
    -----
    A representation with a single column is used as is (no reduction) with a
    zero second column. Constant columns normalise to 0. ``errors`` defaults to
    confidence < 0.5. In ``lbee.explain`` an unfitted PlaneSpot is fitted on the
    image embeddings with min–max-scaled φ as confidence and the hard images as errors.
    """

    def __init__(
        self,
        *,
        reducer="scvis",
        weight=0.025,
        min_components=10,
        max_components=32,
        n_slices=10,
        soft_errors=True,
        perplexity=30.0,
        scvis_iter=None,
        device="cpu",
        random_state=None,
    ):
        self.reducer = reducer
        self.weight = weight
        self.min_components = min_components
        self.max_components = max_components
        self.n_slices = n_slices
        self.soft_errors = soft_errors
        self.perplexity = perplexity
        self.scvis_iter = scvis_iter
        self.device = device
        self.random_state = random_state

    def _reduce_fit(self, G):
        if G.shape[1] < 2:
            self.reducer_ = None
            return np.column_stack([G[:, 0], np.zeros(len(G))])
        seed = None if self.random_state is None else int(self.random_state)
        if self.reducer == "pca":
            from sklearn.decomposition import PCA

            self.reducer_ = PCA(2, random_state=seed).fit(G)
            return self.reducer_.transform(G)
        if self.reducer == "tsne":
            from sklearn.manifold import TSNE

            self.reducer_ = None  # t-SNE has no out-of-sample mapping
            perp = min(self.perplexity, max(1.0, (len(G) - 1) / 3))
            return TSNE(2, perplexity=perp, random_state=seed, init="pca").fit_transform(G)
        from ._scvis import ScVis

        self.reducer_ = ScVis(n_iter=self.scvis_iter, device=self.device, random_state=seed).fit(G)
        return self.reducer_.embedding_

    def _plane(self, coords, confidence):
        span = self.max_ - self.min_
        norm = np.divide(coords - self.min_, span, out=np.zeros_like(coords), where=span > 0)
        return np.column_stack([norm, self.weight * confidence])

    def check_params(self):
        """Check the options (a config's are checked at submission, before any fit); returns the component range."""
        if self.reducer not in ("scvis", "tsne", "pca"):
            raise ValueError(f"`reducer` must be 'scvis', 'tsne' or 'pca'; received {self.reducer!r}.")
        check_real(self.weight, "weight", minimum=0.0)
        max_k = check_positive_int(self.max_components, "max_components")
        min_k = check_positive_int(self.min_components, "min_components")
        if min_k > max_k:
            raise ValueError(f"`min_components` ({min_k}) must not exceed `max_components` ({max_k}).")
        if self.n_slices is not None:
            check_positive_int(self.n_slices, "n_slices")
        return min_k, max_k

    def fit(self, representation, confidence, errors=None):
        """Fit on one class's examples.

        Parameters
        ----------
        representation : array-like of shape (n, d)
            The model's own representation (penultimate activations).
        confidence : array-like of shape (n,)
            The model's probability for the class, in [0, 1].
        errors : array-like of bool or float, shape (n,), optional
            Misclassified examples (or error weights in [0, 1]); default: 1 −
            confidence with ``soft_errors``, else confidence < 0.5.

        Returns
        -------
        self
        """
        from sklearn.mixture import GaussianMixture

        min_k, max_k = self.check_params()
        G = as_float_matrix(representation, "representation")
        n = G.shape[0]
        conf = as_float_vector(confidence, "confidence", n)
        if conf.min() < 0 or conf.max() > 1:
            raise ValueError(
                f"`confidence` must be probabilities in [0, 1]; received range [{conf.min():.3g}, {conf.max():.3g}]."
            )
        if errors is not None:
            err = np.asarray(errors, dtype=float)
        else:
            err = 1.0 - conf if self.soft_errors else (conf < 0.5).astype(float)
        if err.shape != (n,):
            raise ValueError(f"`errors` must have shape ({n},); received {err.shape}.")
        if n < 3:
            raise ValueError(f"PlaneSpotSlicer needs at least 3 examples of the class; received {n}.")
        coords = self._reduce_fit(G)
        self.embedding_ = coords
        self.min_, self.max_ = coords.min(0), coords.max(0)
        R = self._plane(coords, conf)
        self.plane_ = R
        seed = None if self.random_state is None else int(self.random_state)
        best, best_bic = None, np.inf
        hi = min(max_k, n - 1)
        for k in range(min(min_k, hi), hi + 1):
            gmm = GaussianMixture(k, covariance_type="full", reg_covar=1e-6, random_state=seed).fit(R)
            bic = gmm.bic(R)
            if bic < best_bic:
                best, best_bic = gmm, bic
        self.gmm_ = best
        raw = best.predict(R)
        order, imp = order_by_error_importance(raw, err, best.n_components)
        self._order = np.asarray(order)
        remap = np.empty(best.n_components, dtype=np.int64)
        remap[self._order] = np.arange(best.n_components)
        self.labels_ = remap[raw]
        self.importance_ = imp[self._order]
        self.n_components_ = best.n_components
        # No error at all means no blindspot to report: an empty list, not one slice holding every image.
        wrong = (conf < 0.5) if errors is None else err > 0
        keep = best.n_components if self.n_slices is None else min(self.n_slices, best.n_components)
        self.slices_ = [] if not wrong.any() else [np.flatnonzero(self.labels_ == g) for g in range(keep)]
        self.n_samples_fit_ = n
        self.n_features_in_ = G.shape[1]
        return self

    def _fit_from_split(self, embeddings, confidence, hard):
        if confidence is None:
            raise ValueError("An unfitted PlaneSpotSlicer in `explain` needs `confidence`.")
        phi = np.asarray(confidence, dtype=float)
        span = phi.max() - phi.min()
        conf = (phi - phi.min()) / span if span > 0 else np.full_like(phi, 0.5)
        self.fit(embeddings, conf, errors=None if hard is None else np.asarray(hard, bool))

    def predict_proba(self, representation, confidence):
        """GMM membership probabilities of new examples, columns in importance order, shape (n, n_components_)."""
        check_fitted(self)
        if self.reducer == "tsne":
            raise ValueError("reducer='tsne' has no out-of-sample mapping; use 'scvis' or 'pca' to predict.")
        G = as_float_matrix(representation, "representation")
        if G.shape[1] != self.n_features_in_:
            raise ValueError(f"`representation` has d={G.shape[1]}; fitted with d={self.n_features_in_}.")
        conf = as_float_vector(confidence, "confidence", G.shape[0])
        coords = np.column_stack([G[:, 0], np.zeros(len(G))]) if self.reducer_ is None else self.reducer_.transform(G)
        return self.gmm_.predict_proba(self._plane(coords, conf))[:, self._order]

    def predict(self, representation, confidence):
        """Group of each new example, numbered in importance order."""
        return self.predict_proba(representation, confidence).argmax(1)
