"""Common contract over every registered slicer, plus Domino- and PlaneSpot-specific behaviour."""

import pickle

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.exceptions import NotFittedError

import lbee
from lbee.slicers import SLICERS, DominoSlicer, PlaneSpotSlicer, create_slicer
from lbee.slicers._scvis import ScVis


def blobs(seed=0):
    """Three embedding blobs; the model fails on blob 1 (a planted slice)."""
    rng = np.random.default_rng(seed)
    X = np.concatenate([rng.normal(size=(150, 16)), rng.normal(size=(50, 16)) + 4, rng.normal(size=(100, 16)) - 4])
    y = rng.integers(0, 2, 300)
    wrong = np.zeros(300, bool)
    wrong[150:200] = True
    pred = np.where(wrong, 1 - y, y)
    conf = np.where(wrong, 0.1, 0.9) + rng.uniform(-0.05, 0.05, 300)
    return X, y, pred, conf, wrong


FAST = {
    "ward": dict(n_clusters=4),
    "domino": dict(n_mixture_components=6, random_state=0),
    "planespot": dict(reducer="pca", random_state=0),
}


def fit(name, est, seed=0):
    """Each slicer's own fit, with its paper's inputs."""
    X, y, pred, conf, wrong = blobs(seed)
    if name == "domino":
        return est.fit(X, y, pred.astype(float))
    if name == "ward":
        return est.fit(X, hard=wrong)
    return est.fit(X, conf, errors=wrong)


def predict_args(name):
    return [np.zeros((2, 16))] + {"domino": [np.zeros(2), np.zeros(2)], "planespot": [np.zeros(2)], "ward": []}[name]


@pytest.mark.parametrize("name", sorted(SLICERS))
def test_one_fit_signature(name):
    """fit_split(embeddings, confidence=, hard=) is the signature every registered slicer shares."""
    X, y, pred, conf, wrong = blobs()
    est = create_slicer(name, **FAST[name])
    assert est.fit_split(X, confidence=conf, hard=wrong) is est
    assert est.n_samples_fit_ == 300 and len(est.slices_) >= 1
    assert wrong[est.slices_[0]].mean() >= 0.9
    assert "ward" in SLICERS and "scvis" not in SLICERS  # Ward is a slicer; the scvis reducer is not


@pytest.mark.parametrize("name", sorted(SLICERS))
def test_contract(name):
    est = create_slicer(name, **FAST[name])
    assert clone(est).get_params() == est.get_params()
    with pytest.raises(NotFittedError):
        est.predict(*predict_args(name))
    assert fit(name, est) is est
    a = [s.tolist() for s in est.slices_]
    b = [s.tolist() for s in fit(name, clone(est)).slices_]
    assert a == b  # same seed, same groups
    # the top group fails throughout, and the purely failing groups cover the planted blob
    # (Domino may split it by confusion-matrix cell)
    wrong = blobs()[4]
    pure = [g for g in est.slices_ if len(g) and wrong[g].mean() >= 0.9]
    assert len(est.slices_[0]) and wrong[est.slices_[0]].mean() >= 0.9
    assert set(range(150, 200)) <= set(np.concatenate(pure).tolist())
    X, *_ = blobs()
    bad = X.copy()
    bad[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        fit_bad = clone(est)
        if name == "domino":
            fit_bad.fit(bad, np.zeros(300, int), np.zeros(300))
        elif name == "ward":
            fit_bad.fit(bad)
        else:
            fit_bad.fit(bad, np.full(300, 0.5))
    with pytest.raises(ValueError, match="Unknown slicer 'nope'"):
        create_slicer("nope")


@pytest.mark.parametrize("name", sorted(SLICERS))
def test_slicer_groups_feed_explain(name):
    X, y, pred, conf, wrong = blobs()
    S = np.random.default_rng(1).normal(size=(20, 16))
    S[3] = X[150:200].mean(0)  # a sentence pointing at the failing blob
    est = fit(name, create_slicer(name, **FAST[name]))
    exp = lbee.explain(X, S, confidence=conf, slicer=est, method="tops", k=1)
    assert exp.hard_clusters[0].indices.tolist() == est.slices_[0].tolist()
    assert exp.hard_clusters[0].sentences == [3]
    # unfitted: fitted inside explain on the split
    exp2 = lbee.explain(X, S, confidence=conf, slicer=create_slicer(name, **FAST[name]), method="pdiff", k=1)
    top = exp2.hard_clusters[0].indices
    assert len(top) and wrong[top].mean() >= 0.9
    if name != "ward":  # Ward is refitted on the split it is given; the others must be fitted on these images
        with pytest.raises(ValueError, match="fitted on 300 rows"):
            lbee.explain(X[:100], S, confidence=conf[:100], slicer=est)


def test_domino_without_label_terms_is_a_diagonal_gmm():
    from sklearn.mixture import GaussianMixture

    rng = np.random.default_rng(0)
    X = np.concatenate([rng.normal(size=(200, 6)) + c for c in (0, 3, -3)])
    y = rng.integers(0, 2, 600)
    for init in ("kmeans", "confusion", "random"):
        d = DominoSlicer(
            n_mixture_components=3,
            y_log_likelihood_weight=0,
            y_hat_log_likelihood_weight=0,
            init_params=init,
            random_state=0,
            tol=1e-6,
            max_iter=500,
        ).fit(X, y, y.astype(float))
        g = GaussianMixture(3, covariance_type="diag", random_state=0, tol=1e-6, max_iter=500).fit(X)
        assert d.lower_bound_ == pytest.approx(g.score(X), rel=0.02)
        assert d.score_samples(X, y, y.astype(float)).mean() == pytest.approx(d.lower_bound_)


def test_domino_high_dimensional_log_space_and_pca():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 512)) * 0.05
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    y = rng.integers(0, 3, 400)
    probs = rng.dirichlet(np.ones(3), 400)
    d = DominoSlicer(n_slices=3, random_state=0, n_pca_components=128).fit(X, y, probs)
    assert np.isfinite(d.lower_bound_) and d.pca_.n_components_ == 128
    p = d.predict_proba(X, y, probs)
    assert p.shape == (400, 3) and np.all(np.isfinite(p))
    onehot = d.predict(X, y, probs)
    assert onehot.shape == (400, 3) and (onehot.sum(1) == 1).all()
    dn = DominoSlicer(n_pca_components=None, n_mixture_components=4, random_state=0).fit(X, y, y)  # hard preds
    assert dn.pca_ is None and dn.means_.shape == (4, 512)


def test_domino_dataframe_input_and_errors():
    import pandas as pd

    X, y, pred, conf, wrong = blobs()
    df = pd.DataFrame({"emb": list(X), "target": y, "prob": conf})
    d = DominoSlicer(n_mixture_components=5, random_state=0).fit(
        data=df, embeddings="emb", targets="target", pred_probs="prob"
    )
    assert d.predict_proba(data=df, embeddings="emb", targets="target", pred_probs="prob").shape == (300, 5)
    few = DominoSlicer(random_state=0).fit(X[:7], y[:7], conf[:7])  # fewer examples than components
    assert few.n_components_ == 7
    single = DominoSlicer(n_mixture_components=4, random_state=0).fit(X, np.zeros(300, int), conf)
    assert single.n_classes_ == 2
    with pytest.raises(ValueError, match="`init_params`"):
        DominoSlicer(init_params="magic").fit(X, y, conf)
    with pytest.raises(ValueError, match="`targets` must have shape"):
        DominoSlicer().fit(X, y[:5], conf)
    with pytest.raises(ValueError, match="column"):
        DominoSlicer().fit(data=df, embeddings="nope", targets="target", pred_probs="prob")


def test_planespot_reducers_and_fallbacks():
    X, y, pred, conf, wrong = blobs()
    for reducer in ("scvis", "tsne"):
        p = PlaneSpotSlicer(reducer=reducer, random_state=0, scvis_iter=300, max_components=12).fit(
            X, conf, errors=wrong
        )
        assert p.embedding_.shape == (300, 2) and p.plane_.shape == (300, 3)
        assert 0 <= p.plane_[:, :2].min() and p.plane_[:, :2].max() <= 1
        assert p.plane_[:, 2].max() <= 0.025 + 1e-12
        top = set(p.slices_[0].tolist())
        assert len(top & set(range(150, 200))) / len(top) >= 0.8
    with pytest.raises(ValueError, match="no out-of-sample"):
        p.predict(X, conf)
    one_d = PlaneSpotSlicer(reducer="pca", random_state=0).fit(X[:, :1], conf)
    assert one_d.embedding_.shape == (300, 2)
    const = PlaneSpotSlicer(reducer="pca", random_state=0).fit(X, np.full(300, 0.7))
    assert np.isfinite(const.plane_).all()
    with pytest.raises(ValueError, match="probabilities in \\[0, 1\\]"):
        PlaneSpotSlicer().fit(X, conf * 5)
    with pytest.raises(ValueError, match="at least 3 examples"):
        PlaneSpotSlicer(reducer="pca").fit(X[:2], conf[:2])
    with pytest.raises(ValueError, match="`reducer` must be"):
        PlaneSpotSlicer(reducer="umap").fit(X, conf)


def test_scvis_embeds_unseen_points_deterministically():
    X, *_ = blobs()
    a = ScVis(n_iter=200, random_state=3).fit(X[:250])
    b = ScVis(n_iter=200, random_state=3).fit(X[:250])
    assert np.allclose(a.embedding_, b.embedding_)
    new = a.transform(X[250:])
    assert new.shape == (50, 2) and np.isfinite(new).all()
    # blob 2 (rows 200..299) lands away from blob 0 in the plane
    c0, c2 = a.embedding_[:150].mean(0), new.mean(0)
    spread = a.embedding_[:150].std(0).mean()
    assert np.linalg.norm(c0 - c2) > 2 * spread


def test_domino_confusion_init_is_the_soft_outer_product():
    """Official mixture.py: Y ⊗ Ŷ (soft), tiled to k columns, normalised, then U(0, ε) noise."""
    Y = np.array([[1.0, 0.0], [0.0, 1.0]])
    Yhat = np.array([[0.7, 0.3], [0.2, 0.8]])
    d = DominoSlicer(n_mixture_components=6, confusion_noise=0.0)
    Q = d._init_resp(np.zeros((2, 3)), Y, Yhat, 6, np.random.default_rng(0))
    # cells (y, ŷ) = (0,0), (0,1), (1,0), (1,1), then (0,0), (0,1) again; each row sums to 1
    assert np.allclose(Q[0], np.array([0.7, 0.3, 0, 0, 0.7, 0.3]) / 2.0)
    assert np.allclose(Q[1], np.array([0, 0, 0.2, 0.8, 0, 0]) / 1.0)


def test_domino_matrix_product_e_step_matches_the_direct_form():
    rng = np.random.default_rng(0)
    Z = rng.normal(size=(50, 4))
    d = DominoSlicer(n_mixture_components=3, random_state=0).fit(Z, (Z[:, 0] > 0).astype(int), rng.random(50))
    direct = -0.5 * (
        np.log(2 * np.pi * d.variances_).sum(1)[None]
        + ((Z[:, None, :] - d.means_[None]) ** 2 / d.variances_[None]).sum(-1)
    )
    assert np.allclose(d._log_gauss(Z), direct)


def test_planespot_reference_defaults_cap_and_soft_errors():
    X, y, pred, conf, wrong = blobs()
    p = PlaneSpotSlicer(reducer="pca", random_state=0).fit(X, conf)
    assert 10 <= p.n_components_ <= 32 and len(p.slices_) == 10
    # soft errors: importance from 1 - confidence; the first group has the largest importance
    assert p.importance_[0] == p.importance_.max()
    with pytest.raises(ValueError, match="min_components"):
        PlaneSpotSlicer(reducer="pca", min_components=5, max_components=3).fit(X, conf)


def test_scvis_follows_the_reference_training_rules():
    """shahcompbio/scvis: per-batch conditional P at the reference's entropy target, the data divided by its
    largest absolute value, and 100 epochs of 512 with at least 2,000 steps."""
    import torch

    from lbee.slicers._scvis import batch_transition_probabilities, reference_iterations

    x = torch.as_tensor(np.random.default_rng(0).normal(size=(300, 8)), dtype=torch.float32)
    P = batch_transition_probabilities(torch.cdist(x, x).pow(2), 10.0)
    assert torch.allclose(P.sum(1), torch.ones(300), atol=1e-5) and float(P.diagonal().abs().max()) == 0.0
    entropy = -torch.xlogy(P, P).sum(1)
    assert torch.allclose(entropy, torch.full((300,), np.log(10) / np.log(2)), atol=1e-3)
    assert reference_iterations(1600) == 2000  # 3 batches × 100 epochs is below the floor
    assert reference_iterations(512 * 25) == 2500
    assert reference_iterations(512 * 400) == 30000
    X, *_ = blobs()
    a = ScVis(n_iter=30, random_state=0).fit(X)
    b = ScVis(n_iter=30, random_state=0).fit(10 * X)  # one global scale: the same embedding
    assert a.scale_ == pytest.approx(np.abs(X).max()) and a.n_iter_ == 30
    assert np.allclose(a.embedding_, b.embedding_, atol=1e-4)
    assert ScVis().set_params(n_iter=None).get_params()["n_iter"] is None
    with pytest.raises(NotFittedError):
        ScVis().transform(X)
    restored = pickle.loads(pickle.dumps(a))
    assert np.allclose(restored.transform(X[:5]), a.embedding_[:5], atol=1e-5)
