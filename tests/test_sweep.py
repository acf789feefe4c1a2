"""Sensitivity sweeps over K, C and o (Fig. 6 / Fig. 10)."""

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from conftest import planted_world

from lbee.analyses.sweep import plot_sweep, sensitivity_sweep
from lbee.cli import cli


def planted_inputs():
    X, S, phi, sentences = planted_world(noise=0.01)
    omega = (phi > 0.5).astype(float)
    rel = np.zeros((24, 8), bool)
    rel[:6, 0] = rel[12:18, 0] = True  # "road": easy A and hard A
    rel[6:12, 1] = rel[18:, 1] = True  # "field": easy B and hard B
    rel[12:18, 2] = True  # "at night": hard A only
    rel[18:, 3] = True  # "in fog": hard B only
    return X, S, phi, omega, rel


def test_sweep_values_follow_the_definitions():
    X, S, phi, omega, rel = planted_inputs()
    t = sensitivity_sweep(
        X,
        S,
        relevance=rel,
        performance=omega,
        confidence=phi,
        K=[1, 8],
        C=[1, 2],
        o=[0.2, 5.0],
        methods=["tops", "fpdiff"],
        n_clusters=2,
    )
    assert set(t["parameter"]) == {"K", "C", "o"} and len(t) == 12
    row = t.set_index(["parameter", "value", "method"])
    # S* = {at night, in fog}: ω(road) = ω(field) = 1/2, mean ω = 1/2, β = 0.1.
    assert row.loc[("K", 1, "fpdiff"), "JI"] == 1.0
    # TopS with K = 8 keeps every sentence: TPR 1, JI 2/8.
    assert row.loc[("K", 8, "tops"), "TPR"] == 1.0 and row.loc[("K", 8, "tops"), "JI"] == pytest.approx(0.25)
    # C = 1 merges both failures into one cluster: with K = 3, coverage of each sentence is only half.
    assert row.loc[("C", 1, "fpdiff"), "ACR"] < row.loc[("C", 2, "fpdiff"), "ACR"]
    # o changes S* but never the explanations: ACR is constant; o = 5 leaves S* empty (TPR NaN).
    assert row.loc[("o", 0.2, "tops"), "ACR"] == row.loc[("o", 5.0, "tops"), "ACR"]
    assert np.isnan(row.loc[("o", 5.0, "tops"), "TPR"]) and row.loc[("o", 5.0, "tops"), "n_failure_sentences"] == 0


def test_sweep_bad_values():
    X, S, phi, omega, rel = planted_inputs()
    with pytest.raises(ValueError, match="`C` values must be integers >= 1; received 0"):
        sensitivity_sweep(X, S, relevance=rel, performance=omega, confidence=phi, C=[0])
    with pytest.raises(ValueError, match="Nothing to sweep"):
        sensitivity_sweep(X, S, relevance=rel, performance=omega, confidence=phi, K=[], C=[], o=[])
    with pytest.raises(ValueError, match="rows"):
        sensitivity_sweep(X, S, relevance=rel[:10], performance=omega[:10], confidence=phi, C=[2])


def test_cli_sweep_writes_table_and_plot(tmp_path):
    X, S, phi, omega, rel = planted_inputs()
    np.save(tmp_path / "img.npy", X)
    np.save(tmp_path / "sen.npy", S)
    np.save(tmp_path / "rel.npy", rel)
    pd.DataFrame({"image": [f"i{i}" for i in range(24)], "confidence": phi, "performance": omega}).to_csv(
        tmp_path / "pred.csv", index=False
    )
    (tmp_path / "s.txt").write_text("\n".join(planted_world()[3]) + "\n")
    r = CliRunner().invoke(
        cli,
        [
            "sweep",
            "--image-embeddings",
            str(tmp_path / "img.npy"),
            "--sentence-embeddings",
            str(tmp_path / "sen.npy"),
            "--sentences",
            str(tmp_path / "s.txt"),
            "--predictions",
            str(tmp_path / "pred.csv"),
            "--relevance",
            str(tmp_path / "rel.npy"),
            "--k-grid",
            "1,3",
            "--clusters-grid",
            "1,2",
            "--o-grid",
            "0.2",
            "--out",
            str(tmp_path / "sw"),
        ],
        obj={},
    )
    assert r.exit_code == 0, r.output
    table = pd.read_csv(tmp_path / "sw" / "sweep.csv")
    assert len(table) == 5 * 5 and set(table["parameter"]) == {"K", "C", "o"}
    png = (tmp_path / "sw" / "sweep.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10_000
    r = CliRunner().invoke(
        cli,
        [
            "sweep",
            "--image-embeddings",
            str(tmp_path / "img.npy"),
            "--sentence-embeddings",
            str(tmp_path / "sen.npy"),
            "--sentences",
            str(tmp_path / "s.txt"),
            "--predictions",
            str(tmp_path / "pred.csv"),
            "--relevance",
            str(tmp_path / "rel.npy"),
            "--k-grid",
            "1,x",
        ],
        obj={},
    )
    assert r.exit_code == 2 and "--k-grid" in r.output and "'x'" in r.output


def test_plot_sweep_draws_one_row_per_parameter(tmp_path):
    X, S, phi, omega, rel = planted_inputs()
    t = sensitivity_sweep(
        X, S, relevance=rel, performance=omega, confidence=phi, K=[1, 2], C=[], o=[0.1, 0.2], n_clusters=2
    )
    import matplotlib.image

    img = matplotlib.image.imread(plot_sweep(t, tmp_path / "p.png"))
    assert img.shape[0] < img.shape[1]  # 2 rows x 4 metric columns: wider than tall


def test_sweep_over_c_matches_independent_runs():
    """Cutting one cached Ward tree at each C gives the same metrics as clustering from scratch."""
    import lbee

    rng = np.random.default_rng(1)
    X = rng.normal(size=(300, 12))
    S = rng.normal(size=(30, 12))
    phi = rng.normal(size=300)
    omega = (phi > 0).astype(float)
    rel = rng.random((300, 30)) < 0.2
    t = sensitivity_sweep(
        X, S, relevance=rel, performance=omega, confidence=phi, K=[], o=[], C=[1, 4, 9], methods=["tops", "fpdiff"]
    )
    for c in (1, 4, 9):
        exps = lbee.explain_methods(X, S, confidence=phi, methods=["tops", "fpdiff"], n_clusters=c)
        for m, e in exps.items():
            expected = lbee.evaluate(e, rel, omega)
            got = t[(t["value"] == c) & (t["method"] == m)].iloc[0]
            for metric in ("ACR", "AHR", "TPR", "JI"):
                assert got[metric] == pytest.approx(expected[metric])


def test_sweep_rows_say_what_ran_when_the_request_exceeds_the_data(caplog):
    import logging

    caplog.set_level(logging.WARNING, logger="lbee")
    X, S, phi, omega, rel = planted_inputs()
    t = sensitivity_sweep(
        X,
        S,
        relevance=rel,
        performance=omega,
        confidence=phi,
        K=[3, 20],
        C=[2, 50],
        o=[],
        methods=["tops"],
        n_clusters=2,
    )
    eff = t.set_index(["parameter", "value"])["effective"]
    assert eff[("K", 3)] == 3 and eff[("K", 20)] == 8  # 8 sentences exist
    n_hard = int(np.sum(phi < phi.mean() - 0.2 * phi.std()))
    assert eff[("C", 2)] == 2 and eff[("C", 50)] == n_hard < 50
    assert f"sweep C = 50 ran as C = {n_hard} (fewer hard images exist)" in caplog.text
    assert "sweep K = 20 ran as K = 8 (fewer sentences exist)" in caplog.text
