import json

import numpy as np
import pytest
from click.testing import CliRunner

import lbee
from lbee.analyses.domino_settings import make_setting
from lbee.cli import cli
from lbee.core.metrics import precision_at_k, prototype_precision_at_k
from lbee.slicers import DominoSlicer


def test_prototype_pak_by_hand():
    P = np.eye(3)[:2]  # two prototypes along e0, e1
    E = np.array([[1, 0.1, 0], [1, 0.2, 0], [0.1, 1, 0], [0.3, 1, 0], [0.2, 0.1, 1]])
    truth = np.array([[1, 0], [1, 0], [0, 1], [0, 1], [0, 0]], bool)
    assert prototype_precision_at_k(P, E, truth, k=2) == 1.0
    # k=3: prototype 0 has 2 assigned (+ the next best unassigned, row 4); prototype 1 likewise
    assert prototype_precision_at_k(P, E, truth, k=3) == pytest.approx(2 / 3)
    assert prototype_precision_at_k(P, E, [np.array([0, 1]), np.array([2, 3])], k=2) == 1.0
    with pytest.raises(ValueError, match="d=2"):
        prototype_precision_at_k(P, E[:, :2], truth)


def test_protocol_fit_on_one_set_assess_on_another(tmp_path):
    rng = np.random.default_rng(0)
    centres = rng.normal(size=(4, 12)) * 3

    def draw(n):
        g = rng.integers(0, 4, n)
        return centres[g] + rng.normal(size=(n, 12)), g

    A, ga = draw(400)
    B, gb = draw(300)
    phi = np.where(ga >= 2, -1.0, 1.0) + rng.normal(scale=0.1, size=400)  # groups 2, 3 are hard
    exp = lbee.explain(A, rng.normal(size=(5, 12)), confidence=phi, n_clusters=2, n_easy_clusters=2)
    truth = np.stack([gb == j for j in range(4)], axis=1)
    assert prototype_precision_at_k(exp, B, truth, k=10) == 1.0
    d = tmp_path
    (d / "run").mkdir()
    (d / "run" / "explanation.json").write_text(json.dumps({"methods": {exp.method: exp.to_dict()}, "sentences": None}))
    np.save(d / "B.npy", B)
    np.save(d / "parts.npy", truth)
    for name in ("prototype-precision", "compare-pak"):  # compare-pak: the command's first name, kept working
        r = CliRunner().invoke(
            cli,
            [name, str(d / "run"), "--embeddings", str(d / "B.npy"), "--partitions", str(d / "parts.npy")],
            obj={},
        )
        assert r.exit_code == 0 and "P@10 = 1.000" in r.output, (name, r.output)
    listed = CliRunner().invoke(cli, ["--help"], obj={}).output
    assert "prototype-precision" in listed and "compare-pak" not in listed
    with open(d / "archive.npy", "wb") as fh:  # an .npz under a .npy name: numpy returns an archive, not an array
        np.savez(fh, a=B)
    r = CliRunner().invoke(
        cli,
        [
            "prototype-precision",
            str(d / "run"),
            "--embeddings",
            str(d / "archive.npy"),
            "--partitions",
            str(d / "parts.npy"),
        ],
        obj={},
    )
    assert r.exit_code == 1 and "is an .npz archive" in r.output and "Traceback" not in r.output, r.output


@pytest.mark.parametrize("kind,alpha", [("rare", 0.05), ("correlation", 0.6), ("noisy_label", 0.2)])
def test_domino_settings(kind, alpha):
    rng = np.random.default_rng(1)
    y = rng.integers(0, 2, 6000)
    c = rng.random(6000) < 0.3
    s = make_setting(y, c, kind=kind, alpha=alpha, n=1000, random_state=0)
    assert len(s.indices) == len(set(s.indices.tolist())) == 1000
    if kind == "rare":
        pos = s.targets == 1
        assert s.slice_mask[pos].mean() == pytest.approx(alpha, abs=0.01)
        assert np.array_equal(s.slice_mask, pos & c[s.indices])
    elif kind == "correlation":
        assert np.corrcoef(s.targets, c[s.indices])[0, 1] == pytest.approx(alpha, abs=0.02)
        assert np.array_equal(s.slice_mask, c[s.indices] != (s.targets == 1))
    else:
        flipped = s.targets != y[s.indices]
        assert not flipped[~s.slice_mask].any()
        assert flipped[s.slice_mask].mean() == pytest.approx(alpha, abs=0.06)
    # the simulated model is worse inside the slice
    acc = (s.pred_probs > 0.5) == (s.targets == 1)
    assert acc[s.slice_mask].mean() < acc[~s.slice_mask].mean() - 0.2


@pytest.mark.parametrize("kind,alpha", [("rare", 0.1), ("correlation", 0.6), ("noisy_label", 0.2)])
def test_domino_recovers_slices_in_the_spotcheck_world(kind, alpha, spotcheck_world):
    """Domino's protocol on SpotCheck metadata with cross-modal embeddings: P@10 against the generated slice."""
    X, attrs = spotcheck_world
    y = np.array([a[("square", "presence")] == "true" for a in attrs], int)
    c = np.array([a[("background", "texture")] == "noise" for a in attrs])
    s = make_setting(y, c, kind=kind, alpha=alpha, n=1000, random_state=0)
    dom = DominoSlicer(random_state=0).fit(X[s.indices], s.targets, s.pred_probs)
    pak = precision_at_k(dom.predict_proba(X[s.indices], s.targets, s.pred_probs), s.slice_mask[:, None], k=10)
    assert pak[0] >= 0.8


@pytest.fixture(scope="module")
def spotcheck_world():
    from lbee.encoders import create_encoder
    from lbee.spotcheck import ATTRIBUTES, DatasetDefinition, render

    rng = np.random.default_rng(0)
    d = DatasetDefinition(
        ["background", "square", "circle"], [k for k in ATTRIBUTES if k[0] in ("background", "square", "circle")]
    )
    imgs, attrs = [], []
    for _ in range(2500):
        im, a = render(d.sample_attributes(rng), rng, 64)
        attrs.append(a)
        imgs.append(im)
    return create_encoder("spotcheck").encode_arrays(np.stack(imgs)), attrs


def test_setting_errors():
    y = np.zeros(10, int)
    with pytest.raises(ValueError, match="`kind` must be one of"):
        make_setting(y, y.astype(bool), kind="weird", alpha=0.1)
    with pytest.raises(ValueError, match="base dataset has 0 rows"):
        make_setting(y, y.astype(bool), kind="rare", alpha=0.1, n=8)
