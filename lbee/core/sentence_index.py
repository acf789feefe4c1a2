"""A FAISS inner-product index over unit sentence embeddings.

This is the one module that imports `faiss` (it also hosts the k-means
that ``ward='kmeans'`` cuts its cells with). FAISS computes in float32,
so every query asks FAISS for a few more candidates than needed and re-scores
them exactly in float64: results equal the exact definitions of the LBEE paper's describers,
including the tie rule (equal scores: lower sentence index first).
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

import numpy as np

from .._blas import one_blas_thread
from .._validation import as_unit_rows
from ..typing import ArrayLike, FloatArray, IntArray

# FAISS float32 inner products of unit vectors are within ~1e-6 of the exact value.
_FLOAT32_SLACK = 1e-4
# Products with at most this many query rows run on one BLAS thread: a (1-2) x 512 by 512 x 1,400 product
# takes ~0.3 ms on one thread but can take 15 ms on two when the machine is busy (threads spin waiting).
SMALL_QUERY_ROWS = 64
REUSE_SLOTS = 64  # products similarities(..., reuse=True) keeps (64 x 2 x 1,400 floats: 1.4 MB)


def stable_top_k(scores: FloatArray, k: int) -> IntArray:
    """Indices of the ``k`` largest ``scores``, ties broken by lower index.

    Parameters
    ----------
    scores : ndarray of shape (n,)
    k : int

    Returns
    -------
    ndarray of int, shape (min(k, n),)
    """
    order: IntArray = np.argsort(-scores, kind="stable")
    return order[:k]


def faiss_kmeans(
    data: ArrayLike, k: int, *, seed: int, n_iter: int = 20, max_points_per_centroid: int = 256
) -> IntArray:
    """FAISS k-means of float32 rows; returns the nearest centroid of each row.

    Centroids are trained on at most ``k * max_points_per_centroid`` rows
    (a seeded sample, FAISS's own subsampling); every row is then assigned.

    Parameters
    ----------
    data : ndarray of shape (n, d)
    k : int
        Centroids (at most n).
    seed : int
    n_iter : int, default=20
    max_points_per_centroid : int, default=256

    Returns
    -------
    ndarray of int, shape (n,)
    """
    import faiss

    Y = np.ascontiguousarray(data, dtype=np.float32)
    km = faiss.Kmeans(
        Y.shape[1],
        int(k),
        niter=int(n_iter),
        seed=int(seed),
        verbose=False,
        min_points_per_centroid=1,
        max_points_per_centroid=int(max_points_per_centroid),
    )
    km.train(Y)
    _, assign = km.index.search(Y, 1)
    out: IntArray = assign[:, 0].astype(np.int64)
    return out


class SentenceIndex:
    """Exact cosine search over a sentence set.

    Parameters
    ----------
    embeddings : array-like of shape (n_sentences, d)
        Unit rows (renormalised here).
    use_faiss : bool, default=True
        Serve candidate retrieval from a FAISS ``IndexFlatIP``; when False, a
        dense NumPy product answers every query (same results).
    conditions : list of dict, optional
        Each sentence's conjunction ``{(subject, attribute): value}`` (a grammar's set).
    grammar : lbee.grammar.Grammar, optional
        The grammar of ``conditions``: the 'compose' describer renders its conjunctions with it.
    """

    def __init__(
        self,
        embeddings: ArrayLike,
        *,
        use_faiss: bool = True,
        conditions: list[dict[Any, Any]] | None = None,
        grammar: Any = None,
    ) -> None:
        emb = np.asarray(embeddings, dtype=np.float64)
        self.embeddings: FloatArray = emb / np.linalg.norm(emb, axis=1, keepdims=True)
        self.n_sentences, self.dim = self.embeddings.shape
        if conditions is not None and len(conditions) != self.n_sentences:
            raise ValueError(
                f"`conditions` has {len(conditions)} entries but the sentence embeddings have "
                f"{self.n_sentences} rows; give one conjunction per sentence."
            )
        #: each sentence's conjunction {(subject, attribute): value} and the grammar that renders them ('compose')
        self.conditions, self.grammar = (None if conditions is None else list(conditions)), grammar
        self._recent: OrderedDict[tuple[Any, bytes], FloatArray] = (
            OrderedDict()
        )  # query bytes -> similarities, for similarities(..., reuse=True)
        # built on the first retrieval query: the describers score dense products, and most runs never ask one
        self._use_faiss = bool(use_faiss)
        self._faiss: Any = None

    @property
    def _faiss_index(self) -> Any:
        """The FAISS ``IndexFlatIP`` over the sentences (None with ``use_faiss=False``), built once."""
        if self._use_faiss and self._faiss is None:
            import faiss

            data = np.ascontiguousarray(self.embeddings, dtype=np.float32)
            faiss.normalize_L2(data)
            index = faiss.IndexFlatIP(self.dim)
            index.add(data)
            self._faiss = index
        return self._faiss

    def similarities(self, queries: ArrayLike, *, reuse: bool = False) -> FloatArray:
        """Exact cosine similarities of unit ``queries`` (n_queries, d), shape (n_queries, n_sentences).

        Up to `SMALL_QUERY_ROWS` queries are multiplied on one BLAS thread.
        With ``reuse=True`` the last `REUSE_SLOTS` such products are
        kept and returned again (read-only) when the same queries (same bytes)
        come back: the describers of one explanation all score the same hard
        and easy prototypes.
        """
        q: FloatArray = np.atleast_2d(queries)
        if reuse:
            q = np.ascontiguousarray(q, dtype=np.float64)
            key = (q.shape, q.tobytes())
            hit = self._recent.get(key)
            if hit is not None:
                self._recent.move_to_end(key)
                return hit
        if q.shape[0] <= 4:  # matrix-vector products: 2 x 0.1 ms where a 2-row gemm takes 0.5 ms
            with one_blas_thread():
                sims: FloatArray = np.stack([self.embeddings @ row for row in q])
        elif q.shape[0] <= SMALL_QUERY_ROWS:
            with one_blas_thread():
                sims = q @ self.embeddings.T
        else:
            sims = q @ self.embeddings.T
        if reuse:
            sims.flags.writeable = False
            self._recent[key] = sims
            while len(self._recent) > REUSE_SLOTS:
                self._recent.popitem(last=False)
        return sims

    def _exact(self, query: FloatArray, candidates: IntArray) -> FloatArray:
        out: FloatArray = self.embeddings[candidates] @ query
        return out

    def top_k(self, query: FloatArray, k: int) -> IntArray:
        """The ``k`` most similar sentences to one unit ``query`` of shape (d,), best first."""
        k = min(int(k), self.n_sentences)
        if self._faiss_index is None or k >= self.n_sentences:
            return stable_top_k(self.similarities(query)[0], k)
        fetch = min(self.n_sentences, k + 16)
        q32 = np.ascontiguousarray(query[None, :], dtype=np.float32)
        _, ids = self._faiss_index.search(q32, fetch)
        cand: IntArray = np.sort(ids[0][ids[0] >= 0])
        exact = self._exact(query, cand)
        order = np.argsort(-exact, kind="stable")
        kth = exact[order[k - 1]]
        # A sentence FAISS left out could tie with (or, in float32, beat) the k-th: fall back to dense.
        if fetch < self.n_sentences and exact.min() >= kth - _FLOAT32_SLACK:
            return stable_top_k(self.similarities(query)[0], k)
        return cand[order[:k]]

    def above(self, query: FloatArray, tau: float) -> IntArray:
        """Sorted indices of the sentences with cosine similarity strictly above ``tau``."""
        if self._faiss_index is None:
            return np.flatnonzero(self.similarities(query)[0] > tau)
        q32 = np.ascontiguousarray(query[None, :], dtype=np.float32)
        _, _, ids = self._faiss_index.range_search(q32, float(tau) - _FLOAT32_SLACK)
        cand: IntArray = np.sort(ids.astype(np.int64))
        return cand[self._exact(query, cand) > tau]


def as_sentence_index(sentence_embeddings: ArrayLike | SentenceIndex) -> SentenceIndex:
    """A `SentenceIndex` over ``sentence_embeddings`` (a prebuilt index is returned as is)."""
    if isinstance(sentence_embeddings, SentenceIndex):
        return sentence_embeddings
    return SentenceIndex(as_unit_rows(sentence_embeddings, "sentence_embeddings"))
