"""The tenth hostile-input sweep's findings (issue 32): each one reproduced, and refused or right now."""

import os
import zipfile

import numpy as np
import pandas as pd
import pytest

from lbee.io.confinement import PathEscape, confined_to


def test_files_read_late_in_a_job_are_confined_when_they_are_opened(tmp_path):
    """S1: a job's predictions and Γ were checked at the start and read after the embedding; a file (or its folder)
    swapped for a link out in between was read, and the job error quoted the outside file's first line."""
    from lbee.io.arrays import load_npy
    from lbee.io.table_reader import read_table
    from lbee.scoring.classifier import _load_state_dict

    root, out, outside = tmp_path / "root", tmp_path / "out", tmp_path / "secret"
    for d in (root / "r", out, outside):
        d.mkdir(parents=True)
    (outside / "passwd").write_text("root:x:0:0:hunter2-password:/root:/bin/bash\n")
    np.save(outside / "g.npy", np.ones((2, 2)))
    (root / "r" / "preds.csv").symlink_to(outside / "passwd")
    (root / "r" / "rel.npy").symlink_to(outside / "g.npy")
    (root / "r" / "w.pt").symlink_to(outside / "passwd")
    (root / "r2").symlink_to(outside)  # a folder swapped for a link
    (out / "mine.csv").write_text("image,confidence\na.png,0.5\n")
    with confined_to(root, out):
        for read in (
            lambda: read_table(root / "r" / "preds.csv"),
            lambda: read_table(root / "r2" / "passwd.csv"),
            lambda: load_npy(root / "r" / "rel.npy", "relevance"),
            lambda: _load_state_dict(None, root / "r" / "w.pt"),
        ):
            with pytest.raises(PathEscape, match="leads outside the data root") as err:
                read()
            assert "hunter2" not in str(err.value) and str(outside) not in str(err.value)
        assert len(read_table(out / "mine.csv")) == 1  # the job's own output folder is readable
        from lbee.io.sentences import load_sentence_set

        assert load_sentence_set("spotcheck").sentences  # and lbee's own sentence sets
    assert read_table(root / "r" / "preds.csv").columns.tolist()  # the command line: a user's own links are theirs


def test_a_compressed_weights_archive_is_refused_before_it_inflates(tmp_path):
    """H1: a 4 MB deflated state dict inflated to 4.8 GB in the worker; torch.save writes entries stored."""
    torch = pytest.importorskip("torch")
    from lbee.scoring.classifier import _load_state_dict

    good = tmp_path / "good.pt"
    torch.save({"w": torch.zeros(3)}, good)
    bomb = tmp_path / "bomb.pt"
    with zipfile.ZipFile(good) as src, zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            dst.writestr(info.filename, src.read(info.filename))
    assert torch.load(bomb, weights_only=True)["w"].shape == (3,)  # torch itself reads it
    with pytest.raises(ValueError, match="has compressed entries"):
        _load_state_dict(torch.nn.Linear(3, 1), bomb)
    with pytest.raises(ValueError, match="lacks|missing|parameter"):  # a stored archive goes on to the check
        _load_state_dict(torch.nn.Linear(3, 1), good)


def test_the_client_never_follows_a_redirect_with_the_token(tmp_path):
    """S2: `lbee submit` followed a 302 to another host with the bearer token, and took a GET's answer there as
    the job it had submitted."""
    import http.server
    import threading

    from lbee.service.client import Client, ServiceError

    seen = []

    class Other(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802
            seen.append(self.headers.get("Authorization"))
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b'{"id": "abc", "status": "done"}')

        def log_message(self, *args):
            pass

    other = http.server.HTTPServer(("127.0.0.1", 0), Other)

    class Redirector(http.server.BaseHTTPRequestHandler):
        def _go(self):
            self.send_response(302)
            self.send_header("Location", f"http://127.0.0.1:{other.server_port}{self.path}")
            self.end_headers()

        do_GET = do_POST = _go  # noqa: N815

        def log_message(self, *args):
            pass

    first = http.server.HTTPServer(("127.0.0.1", 0), Redirector)
    for server in (first, other):
        threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        client = Client(f"http://127.0.0.1:{first.server_port}", token="lbee_SECRET")
        with pytest.raises(ServiceError, match="answered with a redirect to .*never redirects, so the token"):
            client.submit({"name": "x", "spotcheck": {"seed": 0}})
        with pytest.raises(ServiceError, match="redirect"):
            client.job("abc")
    finally:
        first.shutdown()
        other.shutdown()
    assert seen == []


def test_a_parquet_that_declares_millions_of_rows_in_a_few_kilobytes_is_refused_before_reading(tmp_path):
    """H2: a 743 KB parquet declared 100 million rows (21.6 GB in pandas); 5 million in 39 KB took 1.5 GB and 22 s."""
    import time

    import pyarrow as pa
    import pyarrow.parquet as pq

    from lbee.io.table_reader import read_table

    n = 3_000_000
    table = pa.table({"image": pa.array(["a.png"] * n).dictionary_encode(), "confidence": pa.array([0.5] * n)})
    pq.write_table(table, tmp_path / "bomb.parquet", compression="zstd")
    assert (tmp_path / "bomb.parquet").stat().st_size < 100_000
    t0 = time.perf_counter()
    with pytest.raises(ValueError, match=r"declares 3,000,000 rows in [\d,]+ bytes"):
        read_table(tmp_path / "bomb.parquet", kind="predictions")
    assert time.perf_counter() - t0 < 5
    ok = pa.table({"image": [f"{i}.png" for i in range(1000)], "confidence": [0.5] * 1000})
    pq.write_table(ok, tmp_path / "ok.parquet")
    assert len(read_table(tmp_path / "ok.parquet", kind="predictions")) == 1000


def test_a_sparse_npy_or_table_costs_nothing_before_its_shape_or_size_is_refused(tmp_path):
    """H3: a 6 GB Γ `.npy` of 4 KB on disk took 6 GB of memory before its shape was refused; a sparse
    `saliency.csv` was read whole (out of memory at 4.5 GB)."""
    import resource
    import time

    from numpy.lib import format as npformat

    from lbee.io.relevance import load_relevance
    from lbee.io.table_reader import read_table

    path = tmp_path / "gamma.npy"
    with open(path, "wb") as fh:  # a header for 2000 x 1,000,000 bools, then a hole: 2 GB declared, nothing written
        npformat.write_array_header_1_0(fh, {"descr": "|b1", "fortran_order": False, "shape": (2000, 1_000_000)})
        fh.truncate(fh.tell() + 2000 * 1_000_000)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t0 = time.perf_counter()
    with pytest.raises(ValueError, match=r"has shape \(2000, 1000000\); expected \(2000, 3\)"):
        load_relevance(path, [f"{i}.png" for i in range(2000)], ["a", "b", "c"])
    assert time.perf_counter() - t0 < 5
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 500_000  # KiB: far from 2 GB
    table = tmp_path / "saliency.csv"
    table.write_text("image,iou\n")
    os.truncate(table, 200 << 20)
    with pytest.raises(ValueError, match="is a sparse file"):
        read_table(table)


def test_embed_and_sweep_never_write_over_their_own_inputs_even_with_overwrite(tmp_path):
    """L1: `lbee embed --overwrite` rewrote its own sentence file (its comments gone) and a manifest named ids.txt;
    `lbee sweep --overwrite` replaced a predictions file named sweep.csv with its table."""
    from click.testing import CliRunner

    from lbee.cli import cli

    (tmp_path / "emb").mkdir()
    sentences = tmp_path / "emb" / "sentences.txt"
    sentences.write_text("# mine, curated\nAn image of a square\n")
    r = CliRunner().invoke(
        cli,
        [
            "embed",
            "--sentences",
            str(sentences),
            "--encoder",
            "spotcheck",
            "--out",
            str(tmp_path / "emb"),
            "--overwrite",
        ],
        obj={},
    )
    assert r.exit_code != 0 and "is the input file" in r.output, r.output
    assert sentences.read_text().startswith("# mine, curated")
    (tmp_path / "sw").mkdir()
    preds = tmp_path / "sw" / "sweep.csv"
    preds.write_text("image,confidence\na.png,0.5\n")
    np.save(tmp_path / "x.npy", np.eye(3))
    r = CliRunner().invoke(
        cli,
        [
            "sweep",
            "--image-embeddings",
            str(tmp_path / "x.npy"),
            "--sentence-embeddings",
            str(tmp_path / "x.npy"),
            "--predictions",
            str(preds),
            "--relevance",
            str(tmp_path / "x.npy"),
            "--out",
            str(tmp_path / "sw"),
            "--overwrite",
        ],
        obj={},
    )
    assert r.exit_code != 0 and "is the input file" in r.output, r.output
    assert preds.read_text() == "image,confidence\na.png,0.5\n"


def test_zero_padded_class_names_are_read_as_written(tmp_path):
    """W1: classes named 01, 10, 00 were read as the column positions 1, 10, 0 (pandas makes '01' the number 1): a
    model right on every image was reported wrong on 68 % of them, under a warning saying the opposite; manifest
    labels 01 / 00 gave an error rate of 1.0 with no warning."""
    from lbee.io.predictions import validate_predictions
    from lbee.io.schemas import validate_manifest
    from lbee.io.table_reader import read_table
    from lbee.run.scores import with_manifest_labels

    path = tmp_path / "p.csv"
    rows = ["image,prob_01,prob_10,prob_00,label", "a.png,0.9,0.05,0.05,01", "b.png,0.05,0.9,0.05,10"]
    path.write_text("\n".join([*rows, "c.png,0.05,0.05,0.9,00"]) + "\n")
    pred = validate_predictions(read_table(path))
    assert pred.labels.tolist() == [0, 1, 2] and (pred.probs.argmax(1) == pred.labels).all()
    path.write_text("image,prob_cat,prob_dog,label\na.png,0.9,0.1,00\nb.png,0.2,0.8,01\n")  # no class so named
    with pytest.raises(ValueError, match=r"column 'label' holds invalid class value"):
        validate_predictions(read_table(path))
    manifest = tmp_path / "m.csv"
    manifest.write_text("path,label\na.png,01\nb.png,00\n")
    _, labels = validate_manifest(read_table(manifest))
    assert labels.tolist() == ["01", "00"]
    table = tmp_path / "q.csv"
    table.write_text("image,prob_01,prob_00\na.png,0.9,0.1\nb.png,0.2,0.8\n")
    scores = with_manifest_labels(_scores(read_table(table)), labels, ["01", "00"])
    assert scores.labels.tolist() == [0, 1] and scores.performance.tolist() == [1.0, 1.0]


def _scores(table):
    from types import SimpleNamespace

    probs = table[["prob_01", "prob_00"]].to_numpy()
    return SimpleNamespace(probs=probs, confidence=probs.max(1), labels=None, preds=None, performance=None)


def test_a_slicer_s_groups_hold_hard_images_only(tmp_path):
    """W2: Domino with an explicit n_slices put every easy image into the "hard" groups; the run ended done and
    lbee's own evaluate and image browser refused it."""
    import lbee
    from lbee.core.explanation_checks import check_partition
    from lbee.slicers import DominoSlicer

    rng = np.random.default_rng(0)
    X, S = rng.normal(size=(400, 8)), rng.normal(size=(10, 8))
    phi = rng.random(400)
    exp = lbee.explain(X, S, confidence=phi, slicer=DominoSlicer(n_slices=20, random_state=0), method="tops")
    check_partition(exp.hard_clusters, exp.easy_clusters, "explanation")
    hard = set(np.concatenate([c.indices for c in exp.hard_clusters]).tolist())
    easy = set(np.concatenate([c.indices for c in exp.easy_clusters]).tolist())
    assert hard and not hard & easy and len(hard) == exp.params["n_hard"]


def test_an_edited_assignments_parquet_is_refused_by_evaluate(tmp_path):
    """W3: `lbee evaluate` reads ω from assignments.parquet by default, and an inverted ω changed every metric with
    no warning (explanation.json's digest covers only itself)."""
    from click.testing import CliRunner

    from lbee.cli import cli

    rng = np.random.default_rng(0)
    n, d = 120, 6
    np.save(tmp_path / "x.npy", rng.normal(size=(n, d)))
    np.save(tmp_path / "s.npy", rng.normal(size=(d, d)))
    (tmp_path / "s.txt").write_text("\n".join(f"sentence {j}" for j in range(d)) + "\n")
    (tmp_path / "p.csv").write_text(
        "image,confidence,performance\n" + "".join(f"{i}.png,{rng.random():.4f},{i % 3 != 0:d}\n" for i in range(n))
    )
    np.save(tmp_path / "g.npy", rng.random((n, d)) < 0.3)
    args = ["describe", "--image-embeddings", str(tmp_path / "x.npy"), "--sentence-embeddings", str(tmp_path / "s.npy")]
    args += ["--sentences", str(tmp_path / "s.txt"), "--predictions", str(tmp_path / "p.csv"), "--tau", "0.25"]
    r = CliRunner().invoke(cli, [*args, "--clusters", "2", "--confirm", "0", "--out", str(tmp_path / "run")], obj={})
    assert r.exit_code == 0, r.output
    evaluate = ["evaluate", str(tmp_path / "run"), "--relevance", str(tmp_path / "g.npy")]
    assert CliRunner().invoke(cli, evaluate, obj={}).exit_code == 0
    table = pd.read_parquet(tmp_path / "run" / "assignments.parquet")
    table["performance"] = 1.0 - table["performance"]
    table.to_parquet(tmp_path / "run" / "assignments.parquet", index=False)
    r = CliRunner().invoke(cli, [*evaluate, "--overwrite"], obj={})
    assert r.exit_code != 0 and "differ from the ones its run recorded" in r.output, r.output
    # eleventh sweep: a file without the digest (older, or downgraded) is read, and the user is told ω is unchecked
    import json

    from lbee.core.explanation_payload import content_digest

    payload = json.loads((tmp_path / "run" / "explanation.json").read_text())
    payload.pop("assignments_sha256")
    payload.pop("content_sha256")
    payload["content_sha256"] = content_digest(payload)
    (tmp_path / "run" / "explanation.json").write_text(json.dumps(payload))
    r = CliRunner().invoke(cli, [*evaluate, "--overwrite"], obj={})
    assert r.exit_code == 0 and "assignments.parquet is not checked" in " ".join(r.output.split()), r.output


def test_a_world_whose_metadata_was_edited_is_refused(demo_run, tmp_path):
    """W4: a world whose metadata.parquet said a square was both present and absent loaded without a word, and
    the metrics moved (AHR of compose 1.0 -> 0.21)."""
    import shutil

    from lbee.spotcheck import ExperimentalConfiguration
    from lbee.spotcheck._configuration import CorruptECError

    out, _ = demo_run
    world = tmp_path / "ec"
    shutil.copytree(out / "ec", world)
    assert ExperimentalConfiguration.load(world, load_images=False).seed is not None
    meta = pd.read_parquet(world / "metadata.parquet")
    column = next(c for c in meta.columns if "presence" in c and "square" in c)
    meta.loc[meta["split"] == "test", column] = "false"
    meta.to_parquet(world / "metadata.parquet", index=False)
    with pytest.raises(CorruptECError, match="metadata.parquet differs from the one the world was saved with"):
        ExperimentalConfiguration.load(world, load_images=False)


def test_matching_ids_that_share_a_file_name_is_linear_and_gives_the_rule_s_rows():
    """H4: 20,000 images all named rgb.png, matched from a table of absolute paths, took 196 s (each id was
    compared with every image of that name)."""
    import time

    from lbee.io.matching import IdMatcher, match_table_rows, same_image_id

    n = 20_000
    ids = [f"scene{i:06d}/rgb.png" for i in range(n)]
    t0 = time.perf_counter()
    rows, unmatched = match_table_rows([f"/data/set/{i}" for i in reversed(ids)], ids)
    assert time.perf_counter() - t0 < 10
    assert rows.tolist() == list(range(n - 1, -1, -1)) and unmatched == []
    # the same matches as the rule says, on ids of every shape
    rng = np.random.default_rng(0)
    words = ["a", "b", "c", "x.png", "y.png"]
    run = sorted({"/".join(rng.choice(words, rng.integers(1, 4))) for _ in range(60)})
    for key in {"/".join(rng.choice(words, rng.integers(1, 5))) for _ in range(300)} | {"/" + r for r in run}:
        want = sorted(j for j, f in enumerate(run) if same_image_id(key, f))
        matcher = IdMatcher(run)
        if key in matcher.exact:
            continue
        assert sorted(matcher._candidates(key)) == want, key


def test_a_sensitivity_summary_of_thousands_of_classes_draws_a_bounded_figure():
    """H5: a 1.4 MB summary.json of 15,000 classes took 162 s and 2.5 GB to draw (one line, bar and tick each)."""
    import time

    from lbee.analyses.sensitivity_outputs import CLASSES_DRAWN, drawn_classes
    from lbee.reports.sensitivity import sensitivity_panel_html

    sig = [{"sigma": s, "a_fg": 0.5, "a_bg": 0.6, "rfs": 0.1} for s in (8, 16)]
    per_class = {f"c{i}": {"rfs_mean": (i % 97) / 97 - 0.5, "per_sigma": sig} for i in range(3000)}
    summary = {"n_images": 3000, "per_sigma": sig, "per_class": per_class}
    t0 = time.perf_counter()
    html = sensitivity_panel_html(summary)
    assert time.perf_counter() - t0 < 20 and len(html) < 2_000_000
    assert f"The {CLASSES_DRAWN} classes of lowest mean RFS of 3,000 are drawn" in html
    shown = drawn_classes(summary)
    rest = [v["rfs_mean"] for c, v in per_class.items() if c not in set(shown)]
    assert len(shown) == CLASSES_DRAWN and max(per_class[c]["rfs_mean"] for c in shown) <= min(rest)


def test_a_model_batch_is_bounded_by_its_pixels():
    """H6: four 4,096-px images asked a resnet18 for more than 6 GB; the side is now at most 1,024 and a batch holds
    at most MAX_BATCH_PIXELS input pixels."""
    from lbee.run.limits import MAX_BATCH_PIXELS, MAX_IMAGE_SIZE
    from lbee.run.scores import model_batch_size

    assert MAX_IMAGE_SIZE == 1024
    assert model_batch_size(64, 224) == 64 and model_batch_size(1000, 224) == MAX_BATCH_PIXELS // 224**2
    assert model_batch_size(64, 1024) == 16 and model_batch_size(64, None) == 64
    assert all(
        model_batch_size(b, s) * s * s <= MAX_BATCH_PIXELS or model_batch_size(b, s) == 1
        for b in (1, 7, 64, 4096)
        for s in (32, 224, 518, 1024)
    )


def test_a_csv_whose_rows_all_have_one_field_more_than_its_header_is_refused(tmp_path):
    """Lower 7: pandas took the first field of every row as the index and dropped it in silence."""
    from lbee.io.table_reader import read_table

    (tmp_path / "p.csv").write_text("image,confidence\na.png,0.5,9\nb.png,0.6,9\n")
    with pytest.raises(ValueError, match=r"every row has 1 field\(s\) more than the header's 2"):
        read_table(tmp_path / "p.csv")


def test_a_sweep_with_compose_among_the_methods_scores_the_others_and_says_so(caplog):
    """Lower 2: a job with `methods` holding compose and a `sweep:` was accepted, then failed after the whole
    analysis ("method 'compose' needs a grammar's sentence set")."""
    from lbee.analyses.sweep import sensitivity_sweep

    rng = np.random.default_rng(0)
    X, S = rng.normal(size=(200, 6)), rng.normal(size=(8, 6))
    rel, omega = rng.random((200, 8)) < 0.3, (rng.random(200) > 0.3).astype(float)
    table = sensitivity_sweep(
        X,
        S,
        relevance=rel,
        performance=omega,
        confidence=rng.random(200),
        K=[1, 2],
        C=[],
        o=[],
        methods=["compose", "tops"],
        n_clusters=2,
        tau=0.0,
    )
    assert set(table["method"]) == {"tops"} and "leaves 'compose' out" in caplog.text
    with pytest.raises(ValueError, match="'compose' alone cannot be scored"):
        sensitivity_sweep(
            X, S, relevance=rel, performance=omega, confidence=rng.random(200), K=[1], methods=["compose"]
        )


def test_a_file_swapped_for_a_link_after_its_check_is_still_the_file_checked(tmp_path):
    """Eleventh sweep S1: the open-time check was check-then-open; a file flipped for a link out between the check
    and a later open (2 of 50 racing jobs) was read, and the job error quoted it. Under a root a reader now reads
    through the descriptor it checked."""
    from lbee._files import pinned

    root, outside = tmp_path / "root", tmp_path / "secret"
    root.mkdir()
    outside.mkdir()
    (outside / "passwd").write_text("root:x:0:0:hunter2-password\n")
    good = root / "preds.csv"
    good.write_text("image,confidence\na.png,0.5\n")
    with confined_to(root), pinned(good, "Table") as src:
        good.rename(root / "preds.real")  # the race: after the check, the name now leads out
        good.symlink_to(outside / "passwd")
        assert open(src).read().startswith("image,confidence") and pd.read_csv(src).columns[0] == "image"


def test_a_parquet_that_unpacks_to_far_more_than_its_size_is_refused_from_its_footer(tmp_path, monkeypatch):
    """Eleventh sweep H1: an 88 KB parquet of 1,500 rows, each a unique 1 MB compressible id, took more than 4 GB
    (the row cap did not apply: few rows). The footer's uncompressed size is bounded too (here scaled down)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    import lbee.io.table_header as header
    from lbee.io.table_reader import read_table

    monkeypatch.setattr(header, "PARQUET_FREE_BYTES", 1 << 20)
    ids = [f"{i:04d}" + "a" * 500_000 for i in range(20)]  # 10 MB of text, a few KB compressed
    pq.write_table(pa.table({"image": ids, "confidence": [0.5] * 20}), tmp_path / "b.parquet", compression="zstd")
    assert (tmp_path / "b.parquet").stat().st_size < 50_000
    with pytest.raises(ValueError, match=r"unpacks to [\d,]+ bytes from [\d,]+"):
        read_table(tmp_path / "b.parquet")


def test_sensitivity_trials_are_bounded():
    """Eleventh sweep H2: `lbee sensitivity --trials 1500` took 2 GB for one image (no upper bound)."""
    from click.testing import CliRunner

    from lbee.cli import cli

    r = CliRunner().invoke(cli, ["sensitivity", "x", "--trials", "101"], obj={})
    assert r.exit_code == 2 and "101 is not in the range 1<=x<=100" in r.output, r.output


def test_the_spotlight_export_never_pairs_permuted_embeddings_with_images(demo_run, tmp_path):
    """Eleventh sweep W1: with the rows of the demo's inputs/image_embeddings.npy permuted, the export gave 1,994 of
    2,000 images another image's embedding, with no warning (describe refuses the same inputs)."""
    import shutil

    from lbee.reports.spotlight import export_spotlight

    out, _ = demo_run
    run = tmp_path / "run"
    shutil.copytree(out, run, ignore=shutil.ignore_patterns("ec", "cache", "spotlight.parquet"))
    (run / "ec").symlink_to(out / "ec")  # the renders stay where they are
    emb = np.load(run / "inputs" / "image_embeddings.npy")
    np.save(run / "inputs" / "image_embeddings.npy", emb[::-1])
    path, said = export_spotlight(run, tmp_path / "s.parquet", cache_dir=tmp_path / "cache")
    assert "no embedding column" in said and "is not the run's" in said, said
    assert "embedding" not in pd.read_parquet(path).columns


def test_a_world_without_its_metadata_digest_is_refused_when_its_rows_contradict_themselves(demo_run, tmp_path):
    """Eleventh sweep W2: with ec.json's metadata_sha256 deleted (or a world saved before it), a metadata.parquet
    saying 'square absent' beside has_square and a square's number loaded, and compose's AHR fell 1.0 -> 0.21."""
    import json
    import shutil

    from lbee.spotcheck import ExperimentalConfiguration
    from lbee.spotcheck._configuration import CorruptECError

    out, _ = demo_run
    world = tmp_path / "ec"
    shutil.copytree(out / "ec", world)
    definition = json.loads((world / "ec.json").read_text())
    definition.pop("metadata_sha256")
    (world / "ec.json").write_text(json.dumps(definition))
    # an old world loads, and says its rows are unchecked (twelfth sweep W1: a consistent edit moved the metrics)
    with pytest.warns(UserWarning, match=r"records no digest of its metadata.parquet .*Save the world again"):
        assert ExperimentalConfiguration.load(world, load_images=False).seed is not None
    meta = pd.read_parquet(world / "metadata.parquet")
    column = next(c for c in meta.columns if "presence" in c and "square" in c)
    meta.loc[(meta["split"] == "test") & meta["has_square"], column] = "false"
    meta.to_parquet(world / "metadata.parquet", index=False)
    with (
        pytest.raises(CorruptECError, match="has has_square.* disagreeing with its attributes"),
        pytest.warns(UserWarning),
    ):
        ExperimentalConfiguration.load(world, load_images=False)


def test_a_sensitivity_summary_whose_class_lists_disagree_with_its_sigmas_names_the_key(tmp_path):
    """Eleventh sweep, lower 4: a class's per-σ list shorter than 'per_sigma' gave matplotlib's "x and y must have
    same first dimension", naming no file or key."""
    import json

    from lbee.reports.sensitivity import sensitivity_panel_html

    block = {"a_fg": 0.5, "a_bg": 0.7, "rfs": 0.2}
    summary = {
        "per_sigma": [{"sigma": s, **block} for s in (8.0, 16.0, 32.0)],
        "rfs_mean": 0.2,
        "per_class": {"cat": {"rfs_mean": 0.1, "per_sigma": [{"sigma": 8.0, "rfs": 0.1}]}},
    }
    (tmp_path / "summary.json").write_text(json.dumps(summary))
    with pytest.raises(ValueError, match=r"per_class\['cat'\]\.per_sigma has 1 blocks; expected 3"):
        sensitivity_panel_html(tmp_path)
    summary["per_class"]["cat"]["per_sigma"] *= 3
    summary["per_sigma"][1]["a_bg"] = "high"
    with pytest.raises(ValueError, match=r"'per_sigma'\[1\]\.a_bg is 'high'; expected a finite number"):
        sensitivity_panel_html(summary)
    summary["per_sigma"][1]["a_bg"] = 0.7
    assert "<img" in sensitivity_panel_html(summary)  # the checked file draws


def test_a_link_swapped_for_a_file_while_it_is_resolved_is_said_in_words(tmp_path, monkeypatch):
    """Eleventh sweep, lower 1: a job whose table was swapped between a link and a file failed with a bare
    "OSError: [Errno 22] Invalid argument: 'r/preds.csv'" (Python's realpath read a link that had become a file)."""
    import errno

    from lbee import _files

    calls = []

    def racing(path):
        calls.append(path)
        raise OSError(errno.EINVAL, "Invalid argument", str(path))

    monkeypatch.setattr(_files.os.path, "realpath", racing)
    with pytest.raises(ValueError, match=r"Table 'r/preds.csv' kept changing while it was checked"):
        _files.real_path("r/preds.csv", "Table")
    assert len(calls) == 3  # retried first
    monkeypatch.undo()
    flips = iter([OSError(errno.EINVAL, "Invalid argument"), None])

    def once(path):
        exc = next(flips)
        if exc:
            raise exc
        return "/resolved"

    monkeypatch.setattr(_files.os.path, "realpath", once)
    assert _files.real_path("x", "Table") == "/resolved"  # a passing race is no error
