import json

import numpy as np
import pytest
from conftest import planted_world

import lbee


def cluster_of(exp, image):
    return next(c for c in exp.hard_clusters if image in c.indices)


@pytest.mark.parametrize(
    "method,expected_a,expected_b",
    [
        ("tops", [0], [1]),  # v^h ties e0/e2 (and e1/e3): lower index wins
        ("pdiff", [2], [3]),  # d = v^h - v^e isolates the planted cause
        ("setdiff", [2], [3]),  # S^e = {e0}; best remaining by v^h is e2
        ("fpdiff", [2], [3]),  # S^h = {e0, e2}; best by d is e2
        ("domino", [2], [3]),  # m_i - m points to the cause
    ],
)
def test_planted_causes_k1(planted, method, expected_a, expected_b):
    X, S, phi, sentences = planted
    exp = lbee.explain(X, S, confidence=phi, method=method, n_clusters=2, k=1, sentences=sentences)
    assert len(exp.hard_clusters) == 2 and len(exp.easy_clusters) == 2
    hard_a, hard_b = cluster_of(exp, 12), cluster_of(exp, 18)
    assert hard_a.sentences == expected_a
    assert hard_b.sentences == expected_b
    # hard A's twin is easy A (images 0..5)
    assert set(exp.easy_clusters[hard_a.easy_cluster].indices) == set(range(6))
    assert exp.selected == sorted(set(expected_a + expected_b))


def test_hand_computed_scores(planted):
    X, S, phi, _ = planted
    exp = lbee.explain(X, S, confidence=phi, method="pdiff", n_clusters=2, k=2)
    c = cluster_of(exp, 12)
    # d[e2] = 1/sqrt2 - 0; second best: ties at 0 among e4..e7 and e3, e1 -> lowest index with d=0 is e1
    assert c.sentences == [2, 1]
    assert c.scores[0] == pytest.approx(1 / np.sqrt(2))
    assert c.scores[1] == pytest.approx(0.0)


def test_tau_rules(planted):
    X, S, phi, _ = planted
    # tau = -1: every sentence is in S^e, so SetDiff has no candidate left
    exp = lbee.explain(X, S, confidence=phi, method="setdiff", n_clusters=2, k=3, tau=-1.0)
    assert all(c.sentences == [] for c in exp.hard_clusters)
    # tau = 0.9: S^h = top-1 only = {e0}; FPDiff can only return it
    exp = lbee.explain(X, S, confidence=phi, method="fpdiff", n_clusters=2, k=1, tau=0.9)
    assert cluster_of(exp, 12).sentences == [0]
    # tau = 0.5: S^h = top-1 {e0} plus {e2} (0.707 > tau) -> FPDiff picks e2 by d
    exp = lbee.explain(X, S, confidence=phi, method="fpdiff", n_clusters=2, k=1, tau=0.5)
    assert cluster_of(exp, 12).sentences == [2]
    # k=3: S^h = top-3 {e0, e2, e1 (tie at 0, lowest index)} -> ranked by d: e2 (.71), e1 (0), e0 (-.29)
    exp = lbee.explain(X, S, confidence=phi, method="fpdiff", n_clusters=2, k=3, tau=0.5)
    assert cluster_of(exp, 12).sentences == [2, 1, 0]
    # tau = -1: all sentences are S^h candidates -> FPDiff equals PDiff
    fp = lbee.explain(X, S, confidence=phi, method="fpdiff", n_clusters=2, k=3, tau=-1.0)
    pd_ = lbee.explain(X, S, confidence=phi, method="pdiff", n_clusters=2, k=3)
    assert [c.sentences for c in fp.hard_clusters] == [c.sentences for c in pd_.hard_clusters]


def oracle(X, S, hard, easy, C, k, tau, method):
    """Independent brute-force implementation of SPEC §3 (Python sorting, no shared code)."""
    from sklearn.cluster import AgglomerativeClustering

    X = X / np.linalg.norm(X, axis=1, keepdims=True)
    S = S / np.linalg.norm(S, axis=1, keepdims=True)

    def clusters(idx, c):
        c = min(c, len(idx))
        lab = np.zeros(len(idx), int) if c == 1 else AgglomerativeClustering(c, linkage="ward").fit_predict(X[idx])
        groups = [idx[lab == i] for i in range(c)]
        protos = [X[g].mean(0) / np.linalg.norm(X[g].mean(0)) for g in groups]
        return groups, protos

    def topk(v, cand, kk):
        return sorted(cand, key=lambda n: (-v[n], n))[:kk]

    hg, hp = clusters(np.flatnonzero(hard), C)
    eg, ep = clusters(np.flatnonzero(easy), C)
    out = []
    for g, p in zip(hg, hp):
        j = int(np.argmax([p @ q for q in ep]))
        vh, ve = S @ p, S @ ep[j]
        d = vh - ve
        alln = list(range(len(S)))
        if method == "tops":
            out.append(topk(vh, alln, k))
        elif method == "pdiff":
            out.append(topk(d, alln, k))
        elif method == "setdiff":
            se = set(topk(ve, alln, k)) | {n for n in alln if ve[n] > tau}
            out.append(topk(vh, [n for n in alln if n not in se], k))
        elif method == "fpdiff":
            sh = set(topk(vh, alln, k)) | {n for n in alln if vh[n] > tau}
            out.append(topk(d, sorted(sh), k))
        else:
            dom = S @ (X[g].mean(0) - X.mean(0))
            out.append(topk(dom, alln, k))
    return out


@pytest.mark.parametrize("method", lbee.METHODS)
@pytest.mark.parametrize("seed", [0, 1])
def test_matches_bruteforce_oracle(method, seed):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(120, 16))
    S = rng.normal(size=(40, 16))
    S[7] = S[3]  # exact ties between sentences
    phi = rng.normal(size=120)
    exp = lbee.explain(X, S, confidence=phi, method=method, n_clusters=4, k=3, tau=0.1)
    mu, sd = phi.mean(), phi.std()
    want = oracle(X, S, phi < mu - 0.2 * sd, phi > mu + 0.2 * sd, 4, 3, 0.1, method)
    assert [c.sentences for c in exp.hard_clusters] == want


def test_cluster_count_is_capped_by_set_size():
    X, S, phi, _ = planted_world(noise=0.01)
    exp = lbee.explain(X, S, confidence=phi, n_clusters=50)
    assert len(exp.hard_clusters) == 12 and len(exp.easy_clusters) == 12
    assert sorted(np.concatenate([c.indices for c in exp.hard_clusters]).tolist()) == list(range(12, 24))


def test_explicit_masks_and_easy_cluster_count(planted):
    X, S, _, _ = planted
    hard = np.zeros(24, bool)
    hard[12:] = True
    exp = lbee.explain(X, S, hard=hard, easy=~hard, n_clusters=2, n_easy_clusters=1, k=1)
    assert len(exp.easy_clusters) == 1
    assert all(c.easy_cluster == 0 for c in exp.hard_clusters)


def test_single_hard_image():
    X, S, phi, _ = planted_world(noise=0.01)
    phi = np.ones(24)
    phi[20] = -100
    exp = lbee.explain(X, S, confidence=phi, n_clusters=5, k=2)
    assert len(exp.hard_clusters) == 1 and exp.hard_clusters[0].indices.tolist() == [20]


def test_json_round_trip(planted):
    X, S, phi, sentences = planted
    exp = lbee.explain(X, S, confidence=phi, n_clusters=2, k=2, sentences=sentences)
    data = json.loads(json.dumps(exp.to_dict()))
    back = lbee.Explanation.from_dict(data)
    assert back.selected == exp.selected
    assert [c.sentences for c in back.hard_clusters] == [c.sentences for c in exp.hard_clusters]
    assert np.allclose(back.hard_clusters[0].prototype, exp.hard_clusters[0].prototype)
    assert back.cluster_sentences(0) == exp.cluster_sentences(0)
    assert back.params == exp.params


def test_deterministic(planted):
    X, S, phi, _ = planted_world(noise=0.05, seed=3)
    a = lbee.explain(X, S, confidence=phi, n_clusters=3).to_dict()
    b = lbee.explain(X, S, confidence=phi, n_clusters=3).to_dict()
    assert a == b


def test_explain_methods_shares_clustering(planted):
    X, S, phi, _ = planted
    many = lbee.explain_methods(X, S, confidence=phi, n_clusters=2, k=1)
    assert set(many) == set(lbee.METHODS)
    for m, e in many.items():
        single = lbee.explain(X, S, confidence=phi, n_clusters=2, k=1, method=m)
        assert [c.sentences for c in e.hard_clusters] == [c.sentences for c in single.hard_clusters]


@pytest.mark.parametrize(
    "kwargs,exc,fragment",
    [
        (dict(image_embeddings=np.ones((4, 3)), sentence_embeddings=np.ones((2, 5))), ValueError, "dimension"),
        (dict(image_embeddings=np.full((4, 3), np.nan), sentence_embeddings=np.ones((2, 3))), ValueError, "NaN"),
        (dict(image_embeddings=np.ones((0, 3)), sentence_embeddings=np.ones((2, 3))), ValueError, "empty"),
        (dict(image_embeddings=np.ones(3), sentence_embeddings=np.ones((2, 3))), ValueError, "2-D"),
        (dict(image_embeddings="abc", sentence_embeddings=np.ones((2, 3))), TypeError, "image_embeddings"),
    ],
)
def test_bad_embeddings(kwargs, exc, fragment):
    with pytest.raises(exc, match=fragment):
        lbee.explain(confidence=np.arange(4.0), **kwargs)


def test_bad_options(planted):
    X, S, phi, _ = planted
    with pytest.raises(ValueError, match="`method` must be one of"):
        lbee.explain(X, S, confidence=phi, method="nope")
    # a near miss gets the CLI's suggestion in the library too (an eighth user's method='fpdif')
    with pytest.raises(ValueError, match=r"received 'fpdif' \(did you mean 'fpdiff'\?\)"):
        lbee.explain(X, S, confidence=phi, method="fpdif")
    with pytest.raises(ValueError, match="`k` must be an integer >= 1; received 0"):
        lbee.explain(X, S, confidence=phi, k=0)
    with pytest.raises(TypeError, match="`n_clusters`"):
        lbee.explain(X, S, confidence=phi, n_clusters=2.5)
    with pytest.raises(ValueError, match="`confidence` contains 1 NaN"):
        bad = phi.copy()
        bad[0] = np.nan
        lbee.explain(X, S, confidence=bad)
    with pytest.raises(ValueError, match="`confidence` has length 3; expected 24"):
        lbee.explain(X, S, confidence=[1, 2, 3])
    with pytest.raises(ValueError, match="all confidences are equal"):
        lbee.explain(X, S, confidence=np.ones(24))
    with pytest.raises(ValueError, match="smaller `a`"):
        lbee.explain(X, S, confidence=np.r_[np.zeros(23), 1.0], a=5.0)
    with pytest.raises(ValueError, match="overlap"):
        lbee.explain(X, S, hard=np.ones(24, bool), easy=np.ones(24, bool))
    with pytest.raises(ValueError, match="No split given"):
        lbee.explain(X, S)
    with pytest.raises(ValueError, match="`sentences` has 2 entries"):
        lbee.explain(X, S, confidence=phi, sentences=["a", "b"])


def test_prebuilt_sentence_index_gives_the_same_result(planted):
    from lbee.core.sentence_index import SentenceIndex

    X, S, phi, _ = planted_world(noise=0.05, seed=4)
    a = lbee.explain(X, S, confidence=phi, n_clusters=3, method="fpdiff")
    b = lbee.explain(X, SentenceIndex(S), confidence=phi, n_clusters=3, method="fpdiff")
    assert [c.sentences for c in a.hard_clusters] == [c.sentences for c in b.hard_clusters]


def test_knn_ward_option_matches_exact_on_separated_groups_and_is_explicit():
    from sklearn.metrics import adjusted_rand_score

    from lbee.core.clustering import ward_labels

    rng = np.random.default_rng(0)
    centres = rng.normal(size=(6, 32)) * 3
    X = np.repeat(centres, 40, axis=0) + 0.1 * rng.normal(size=(240, 32))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    exact = ward_labels(X, 6)
    approx = ward_labels(X, 6, method="knn")
    assert adjusted_rand_score(exact, approx) == 1.0
    phi = np.r_[np.zeros(120), np.ones(120)]
    S = np.eye(32)
    e_exact = lbee.explain(X, S, confidence=phi, n_clusters=3, method="tops")
    e_knn = lbee.explain(X, S, confidence=phi, n_clusters=3, method="tops", ward="knn")
    assert e_exact.params["ward"] == "auto" and e_knn.params["ward"] == "knn"
    assert sorted(map(sorted, (c.indices.tolist() for c in e_exact.hard_clusters))) == sorted(
        map(sorted, (c.indices.tolist() for c in e_knn.hard_clusters))
    )
    with pytest.raises(ValueError, match="`ward` must be one of"):
        lbee.explain(X, S, confidence=phi, ward="fast")


# ------------------------------------------------------------------ notebook, pandas, compact files
def test_explain_takes_a_dataframe_and_explanation_reads_in_a_notebook():
    import pandas as pd

    X, S, phi, sentences = planted_world(noise=0.01)
    sentences = list(sentences)
    sentences[2] = "at <script>night</script>"
    df = pd.DataFrame({"emb": list(X), "phi": phi}, index=[f"img{i}" for i in range(len(X))])
    e = lbee.explain(
        data=df, embeddings="emb", sentence_embeddings=S, confidence="phi", n_clusters=2, sentences=sentences
    )
    ref = lbee.explain(X, S, confidence=phi, n_clusters=2, sentences=sentences)
    assert e.to_dict() == ref.to_dict()  # the DataFrame is only another way in
    text = repr(e)
    assert text.startswith("Explanation(method='fpdiff', 2 hard clusters") and "array" not in text
    assert len(text) < 200 and "array" not in repr(e.hard_clusters[0])
    html = e._repr_html_()
    assert "<script>" not in html and "at &lt;script&gt;night" in html and html.count("<tr>") == 3
    groups = e.to_pandas()
    assert list(groups.columns) == ["group", "size", "easy_cluster", "sentences", "scores"]
    assert groups["size"].tolist() == [6, 6]
    table = e.assignments(performance=1 - phi)
    assert table.index.tolist() == list(df.index) and list(table.columns) == ["split", "group", "phi", "omega"]
    assert (table.loc[table["split"] == "hard", "phi"] == 0).all() and table["omega"].tolist() == (1 - phi).tolist()
    assert (table["split"] == "hard").sum() == 12
    with pytest.raises(ValueError, match="not a column of `data`.*'emb', 'phi'"):
        lbee.explain(data=df, embeddings="embedding", sentence_embeddings=S, confidence="phi")
    with pytest.raises(ValueError, match="expected 24"):
        e.assignments(performance=[1.0])
    # Without φ given to explain and none passed, φ is NaN, not invented.
    bare = lbee.explain(X, S, hard=phi == 0, easy=phi == 1, n_clusters=2)
    assert bare.assignments()["phi"].isna().all()


def test_explanation_json_stores_the_clustering_once_and_reads_old_files(tmp_path):
    from lbee.core.explanation import PAYLOAD_FORMAT, validate_explanation_payload
    from lbee.run.pipeline import DescribeResult, load_explanations, write_outputs

    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 512))
    S = rng.normal(size=(60, 512))
    phi = rng.normal(size=300)
    exps = lbee.explain_methods(X, S, confidence=phi, n_clusters=15, sentences=[f"s{i}" for i in range(60)])
    res = DescribeResult(
        exps,
        [f"i{i}" for i in range(300)],
        phi,
        (phi > 0).astype(float),
        [f"s{i}" for i in range(60)],
        {"encoder": "precomputed"},
        "custom",
    )
    write_outputs(res, tmp_path)
    new = (tmp_path / "explanation.json").stat().st_size
    old_payload = json.loads((tmp_path / "explanation.json").read_text())
    loaded, payload = load_explanations(tmp_path / "explanation.json")
    assert payload["format"] == PAYLOAD_FORMAT == 4 and set(loaded) == set(exps)
    for m, e in exps.items():
        got = loaded[m]
        assert [c.indices.tolist() for c in got.hard_clusters] == [c.indices.tolist() for c in e.hard_clusters]
        assert [c.sentences for c in got.hard_clusters] == [c.sentences for c in e.hard_clusters]
        np.testing.assert_allclose(got.hard_clusters[0].prototype, e.hard_clusters[0].prototype, atol=1e-6)
        np.testing.assert_allclose(got.hard_clusters[0].scores, e.hard_clusters[0].scores, atol=1e-6)
        assert got.selected == e.selected
    # The older format (a full copy per method) still loads, and is several times larger.
    old = {
        **{k: v for k, v in old_payload.items() if k not in ("format", "clustering", "content_sha256")},
        "methods": {m: {k: v for k, v in e.to_dict().items() if k != "sentences"} for m, e in exps.items()},
    }
    assert len(json.dumps(old, indent=1)) > 5 * new
    again = validate_explanation_payload(old, source="old.json")
    assert {m: e.selected for m, e in again.items()} == {m: e.selected for m, e in exps.items()}
    # A damaged compact file is a clear error naming the field.
    bad = json.loads(json.dumps(old_payload))
    bad["clustering"]["prototypes"]["hard"] = "not base64!"
    with pytest.raises(ValueError, match="clustering.prototypes.hard"):
        validate_explanation_payload(bad, source="bad.json")
    bad = json.loads(json.dumps(old_payload))
    bad["methods"]["tops"]["hard_sentences"] = bad["methods"]["tops"]["hard_sentences"][:-1]
    with pytest.raises(ValueError, match="one entry per hard cluster"):
        validate_explanation_payload(bad, source="bad.json")
