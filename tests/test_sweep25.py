"""Sweep 25 (on d95f1ee): stored run files read as genuine after an edit (SW1-SW4), the sensitivity tables of
``--split-by irfs|saliency`` read loosely (SW5), the bench's own records read whole (H1-H3), and lower ones.
The service's cases (S1, SW1 on the server, L2, L3) are in tests/test_service.py's browser test."""

import json
import os
import shutil
import subprocess
import sys
import time

import numpy as np
import pandas as pd
import pytest

from lbee.core.explanation_payload import content_digest

LBEE = "import sys; from lbee.cli import cli; cli(sys.argv[1:], prog_name='lbee', obj={})"


def run_copy(demo_run, tmp_path):
    out, _ = demo_run
    copy = tmp_path / "run"
    copy.mkdir()
    for name in ("explanation.json", "assignments.parquet", "images.parquet"):
        shutil.copy(out / name, copy / name)
    return copy


def rewrite_digested(path, edit):
    """Edit an explanation.json and recompute its digest, as someone who knows the (public) algorithm could."""
    payload = json.loads(path.read_text())
    edit(payload)
    payload["content_sha256"] = content_digest(payload)
    path.write_text(json.dumps(payload))


def _set(path, value):
    def edit(payload):
        *head, last = path
        target = payload
        for k in head:
            target = target[k]
        target[last] = value

    return edit


CONFIRMATION_EDITS = {
    "ranked names a statement from the end": (("confirmation", "ranked"), [-1], "'confirmation.ranked'"),
    "ranked holds a boolean": (("confirmation", "ranked"), [True], "'confirmation.ranked'"),
    "ranked repeats": (("confirmation", "ranked"), [0, 0, 0], "'confirmation.ranked'"),
    "a rate that is NaN": (("confirmation", "statements", 0, "error_rate_in"), float("nan"), "error_rate_in"),
    "a negative rate": (("confirmation", "statements", 0, "error_rate_in"), -5, "error_rate_in"),
    "a rate as text": (("confirmation", "statements", 0, "error_rate_in"), "abc", "error_rate_in"),
    "held out beyond the images": (("confirmation", "held_out"), [10**9], "'confirmation.held_out'"),
    "held out twice": (("confirmation", "held_out"), [2, 2], "'confirmation.held_out'"),
    "a finding's images beyond the run": (("confirmation", "statements", 0, "holds_for"), [10**9], "holds_for'"),
    "a finding without its held-out images": (("confirmation", "statements", 0, "holds_for"), [], "holds_for'"),
    # sweep 32h S-1: every image listed, so Spotlight said finding 1 holds for all 2,000
    "a finding said to hold for every image": (("confirmation", "statements", 0, "holds_for"), "ALL", "holds_for'"),
    "a count that disagrees": (("confirmation", "n_held_out"), 5, "'confirmation.n_held_out'"),
    "a fraction of 5": (("confirmation", "fraction"), 5, "'confirmation.fraction'"),
    "a status of markup": (("confirmation", "status"), "<b>x</b>", "'confirmation.status'"),
    "a hypothesis's negative rate": (("hypotheses", 0, "hypothesis_error_rate"), -3, "hypothesis_error_rate"),
}


@pytest.mark.parametrize("case", sorted(CONFIRMATION_EDITS))
def test_edited_confirmation_blocks_are_refused_even_with_the_digest_recomputed(demo_run, tmp_path, case):
    """SW4: 16 edits of the `confirmation` / `hypotheses` blocks loaded once the digest was recomputed: the
    client reported the last statement as the strongest (`ranked: [-1]`), NaN rates, held-out images out of range."""
    from lbee.reports.stored_table import stored_images_table
    from lbee.run.stored import load_explanations
    from lbee.service.reading import confirmed_statements

    run = run_copy(demo_run, tmp_path)
    where, value, named = CONFIRMATION_EDITS[case]
    if value == "ALL":
        value = list(range(len(json.loads((run / "explanation.json").read_text())["images"])))
    rewrite_digested(run / "explanation.json", _set(where, value))
    with pytest.raises(ValueError, match="an edit is refused") as info:
        load_explanations(run / "explanation.json")
    assert named in str(info.value)
    with pytest.raises(ValueError):  # the service's group pages read it so
        stored_images_table(run)
    with pytest.raises(ValueError):  # the client's reading of a job's explanation
        confirmed_statements(json.loads((run / "explanation.json").read_text()))


def test_held_out_images_in_a_cluster_and_unconfirmed_ranked_statements_are_refused(demo_run, tmp_path):
    from lbee.run.stored import load_explanations

    run = run_copy(demo_run, tmp_path)
    payload = json.loads((run / "explanation.json").read_text())
    in_cluster = payload["unassigned_hard"][0]
    rewrite_digested(run / "explanation.json", lambda p: p["confirmation"]["held_out"].__setitem__(0, in_cluster))
    rewrite_digested(
        run / "explanation.json",
        lambda p: p["confirmation"].__setitem__("n_held_out", len(p["confirmation"]["held_out"])),
    )
    # (without the findings' image lists, which the edit would contradict first: their held-out images are n_in)
    rewrite_digested(
        run / "explanation.json", lambda p: [s.pop("holds_for", None) for s in p["confirmation"]["statements"]]
    )
    with pytest.raises(ValueError, match="'confirmation.held_out' names an image"):
        load_explanations(run / "explanation.json")
    shutil.copy(demo_run[0] / "explanation.json", run / "explanation.json")
    unconfirmed = next(j for j, s in enumerate(payload["confirmation"]["statements"]) if not s["confirmed"])
    rewrite_digested(run / "explanation.json", lambda p: p["confirmation"]["ranked"].append(unconfirmed))
    with pytest.raises(ValueError, match="each confirmed statement once"):
        load_explanations(run / "explanation.json")


def test_the_client_refuses_an_edited_explanation_and_one_it_cannot_read():
    """SW1: the client's confirmed() returned the statements of an explanation edited without its digest; L13:
    a `confirmation` that is a string raised AttributeError."""
    from lbee.service.reading import confirmed_statements

    payload = {"images": ["a"], "confirmation": {"status": "off", "fraction": 0.0}}
    payload["content_sha256"] = content_digest(payload)
    assert confirmed_statements(payload) == []
    edited = {**payload, "confirmation": {"status": "skipped", "fraction": 0.0}}
    with pytest.raises(ValueError, match="content_sha256"):
        confirmed_statements(edited)
    with pytest.raises(ValueError, match="'confirmation' is 'x'; expected an object"):
        confirmed_statements({"confirmation": "x"})
    with pytest.raises(ValueError, match="expected the object of explanation.json"):
        confirmed_statements("x")


def test_edited_per_image_and_assignment_values_are_refused(demo_run, tmp_path):
    """SW2: φ and ω edited alike in images.parquet and assignments.parquet made lbee serve's page say 'error rate
    0.00' for a failure; SW3: label, prediction, holds and path were never checked. L1: a text column gave a 500."""
    from lbee.reports.stored_table import stored_images_table

    run = run_copy(demo_run, tmp_path)
    assert len(stored_images_table(run)) == len(pd.read_parquet(run / "images.parquet"))
    table, assign = pd.read_parquet(run / "images.parquet"), pd.read_parquet(run / "assignments.parquet")
    hard = ((table["split"] == "hard") & (table["group"] == 0)).to_numpy()
    for frame in (table, assign):
        frame.loc[hard, "performance"] = 1.0
        frame.loc[hard, "confidence"] = 0.99
    table.to_parquet(run / "images.parquet")
    assign.to_parquet(run / "assignments.parquet")
    with pytest.raises(ValueError, match="assignments_sha256"):
        stored_images_table(run)
    shutil.copy(demo_run[0] / "assignments.parquet", run / "assignments.parquet")
    for column, value in (("label", "dog"), ("prediction", "dog"), ("holds", False), ("path", "/elsewhere.png")):
        table = pd.read_parquet(demo_run[0] / "images.parquet")
        table.loc[np.flatnonzero(hard)[0], column] = value
        table.to_parquet(run / "images.parquet")
        with pytest.raises(ValueError, match="images_sha256"):
            stored_images_table(run)
    # without the explanation beside it (allowed: the table alone), a number's column holding text is refused
    (run / "explanation.json").unlink()
    (run / "assignments.parquet").unlink()
    table = pd.read_parquet(demo_run[0] / "images.parquet")
    table["performance"] = table["performance"].astype(str)
    table.to_parquet(run / "images.parquet")
    with pytest.raises(ValueError, match="column .performance. holds (object|str) values; expected numbers"):
        stored_images_table(run)


def _sensitivity(tmp_path, rows, name="sensitivity.csv"):
    path = tmp_path / name
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


@pytest.mark.parametrize("cell", ["abc", "inf", "nan", "1_000", "\u0663"])
def test_sensitivity_cells_are_numbers_or_blank(tmp_path, cell):
    """SW5: a cell that was not a number became φ = 0 (893 hard images became 853), in silence."""
    from lbee.analyses.sensitivity import confidence_from_sensitivity

    ids = [f"img/{i}.png" for i in range(4)]
    rows = {"image": ids, "sigma": [30] * 4, "irfs": ["0.5", "-0.2", cell, ""]}
    with pytest.raises(ValueError, match=r"column 'irfs' .*row 3"):
        confidence_from_sensitivity(_sensitivity(tmp_path, rows), ids)
    rows["irfs"][2] = "0.1"  # blank: iRFS undefined at every σ, no measured preference
    np.testing.assert_allclose(confidence_from_sensitivity(_sensitivity(tmp_path, rows), ids), [0.5, -0.2, 0.1, 0])


def test_sensitivity_rows_are_one_per_image_and_matched_by_the_shared_rule(tmp_path, caplog):
    """SW5: repeated rows were averaged (893 hard became 100), and rows were matched by bare file name: 'a/x.png'
    and 'b/x.png' both fitted 'x.png' (the last won), 'other/dir/x.png' fitted 'ec/x.png'."""
    from lbee.analyses.sensitivity import confidence_from_sensitivity

    ids = ["ec/test/0.png", "ec/test/1.png"]
    twice = {"image": [ids[0], ids[1], ids[0]], "sigma": [30, 30, 30], "irfs": [0.5, 0.1, -50]}
    with pytest.raises(ValueError, match=r"'ec/test/0.png' at sigma 30 has two rows, row 1 .* and row 3"):
        confidence_from_sensitivity(_sensitivity(tmp_path, twice), ids)
    sigmas = {"image": [ids[0], ids[0], ids[1]], "sigma": [10, 30, 30], "irfs": [0.4, 0.6, 0.1]}
    np.testing.assert_allclose(confidence_from_sensitivity(_sensitivity(tmp_path, sigmas), ids), [0.5, 0.1])
    elsewhere = {"image": ["other/dir/0.png", "other/dir/1.png"], "sigma": [30, 30], "irfs": [0.5, 0.1]}
    with pytest.raises(ValueError, match="no row for 2 of the 2 images|none of its 2 row"):
        confidence_from_sensitivity(_sensitivity(tmp_path, elsewhere), ids)
    two = {"image": ["a/0.png", "b/0.png", ids[1]], "sigma": [30, 30, 30], "irfs": [-1, 1, 0.1]}
    with pytest.raises(ValueError, match="'a/0.png' and 'b/0.png' both match the image '0.png'"):
        confidence_from_sensitivity(_sensitivity(tmp_path, two), ["0.png", ids[1]])
    extra = {"image": [*ids, "ec/test/9.png"], "sigma": [30] * 3, "irfs": [0.5, 0.1, 0.3]}
    with caplog.at_level("WARNING", logger="lbee"):  # L11: rows of no image were ignored in silence
        confidence_from_sensitivity(_sensitivity(tmp_path, extra), ids)
    assert "1 of 3 row(s) match no image of the run" in caplog.text


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_the_bench_reads_its_records_as_every_file_is_read(tmp_path):
    """H1-H3: `lbee spotcheck bench` read ecs/ec_NNNN.json whole: a link to /dev/zero took 6 GB, a FIFO blocked."""
    (tmp_path / "ecs").mkdir()
    record = tmp_path / "ecs" / "ec_0000.json"
    args = ["-q", "spotcheck", "bench", "--n-ecs", "1", "--out", str(tmp_path), "--no-slicers", "--epochs", "1"]
    for make, said in ((os.mkfifo, "a FIFO"), (lambda p: p.symlink_to("/dev/zero"), "a character device")):
        if record.exists() or record.is_symlink():
            record.unlink()
        make(record)
        t0 = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-c", LBEE, *args, "--per-combination", "4,2,2"],
            capture_output=True,
            text=True,
            timeout=120,  # a hang bound, not a timing: it blocked forever
            env={**os.environ, "HF_HUB_OFFLINE": "1"},
        )
        assert done.returncode == 1 and said in done.stderr and "Traceback" not in done.stderr, done.stderr
        assert time.perf_counter() - t0 < 120


def test_torch_files_are_named_as_what_they_are_and_torchscript_is_bounded(tmp_path):
    """L5-L8: a TorchScript file as weights was 'an archive with compressed entries', a state dict as --model got
    torch's 'checkpoint file is corrupted', the service's error advised a TorchScript model it refuses, and a
    975 KB TorchScript file of one deflated 1 GB buffer was loaded (640 MB more)."""
    import zipfile

    import torch

    from lbee.scoring.classifier import load_classifier
    from lbee.scoring.torch_files import MAX_SCRIPT_INFLATED

    net = torch.nn.Linear(3, 2)
    script = tmp_path / "net_ts.pt"
    torch.jit.save(torch.jit.script(net), script)
    torch.save(net.state_dict(), tmp_path / "state.pt")
    assert load_classifier(str(script)) is not None  # a TorchScript file loads
    with pytest.raises(ValueError, match="is a TorchScript file, which carries its own weights") as info:
        load_classifier("torchvision:resnet18", script, num_classes=2)
    assert "--model FILE" in str(info.value)
    with pytest.raises(ValueError, match="is not a TorchScript file .* --model torchvision:ARCH"):
        load_classifier(str(tmp_path / "state.pt"))
    (tmp_path / "pickle.pt").write_bytes(b"\x80\x04K\x01.")
    with pytest.raises(ValueError, match="is not a TorchScript file"):
        load_classifier(str(tmp_path / "pickle.pt"))
    bomb = tmp_path / "bomb_ts.pt"  # the archive repacked with a deflated entry inflating past the bound
    with zipfile.ZipFile(script) as src, zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as dst:
        for item in src.infolist():
            dst.writestr(item.filename, src.read(item.filename))
        dst.writestr(f"{src.namelist()[0].split('/')[0]}/extra/zeros", b"\0" * (MAX_SCRIPT_INFLATED + 1))
    assert bomb.stat().st_size < 1_000_000
    with pytest.raises(ValueError, match="compressed entries that inflate to"):
        load_classifier(str(bomb))


def test_spotlight_export_of_a_run_whose_paths_are_partly_missing(tmp_path):
    """L14: an images table whose path mixed strings and None ended in 'TypeError: expected str ... not float'."""
    from lbee.reports.spotlight import run_embeddings

    table = pd.DataFrame({"image": ["/x/a.png", None], "image_id": ["a", "b"]})
    table.loc[1, "image"] = np.nan  # as pandas stores a None among strings once a column is rebuilt
    (tmp_path / "explanation.json").write_text(json.dumps({"encoder": {"encoder": "open_clip"}}))
    emb, why = run_embeddings(tmp_path, table)
    assert emb is None and why == "some image files are missing"


def test_a_finding_whose_held_out_images_were_swapped_is_refused(demo_run, tmp_path):
    """Sweep 32h S-1: a finding's held-out images replaced by as many others (n_in kept) loaded: its browser and
    Spotlight's column then listed images the statement does not hold for. They fail as its test counted, or the
    run's files are refused."""
    import numpy as np

    from lbee.reports.stored_table import stored_images_table

    run = run_copy(demo_run, tmp_path)
    payload = json.loads((run / "explanation.json").read_text())
    conf = payload["confirmation"]
    first = next(j for j in conf["ranked"] if "holds_for" in conf["statements"][j])  # the first finding
    s = conf["statements"][first]
    held = set(conf["held_out"])
    omega = pd.read_parquet(run / "assignments.parquet")["performance"].to_numpy()
    mine = [i for i in s["holds_for"] if i in held]
    others = [i for i in sorted(held - set(s["holds_for"])) if omega[i] == 1][: len(mine)]  # right answers
    assert len(others) == len(mine) and s["errors_in"] > 0

    def swap(p):
        st = p["confirmation"]["statements"][first]
        st["holds_for"] = sorted([i for i in st["holds_for"] if i not in held] + others)

    rewrite_digested(run / "explanation.json", swap)
    with pytest.raises(ValueError, match="holds_for lists fail 0 times by their ω"):
        stored_images_table(run)
    assert np.sum(omega[mine] == 0) == s["errors_in"]  # the untouched run: the count its test made


@pytest.mark.parametrize("shared", [[10**9, 1], "many", [-1]])
def test_edited_shares_of_a_companion_are_refused(demo_run, tmp_path, shared):
    """Trial 30: a companion now records the held-out images it shares with each stronger statement (`beyond.shared`,
    which names what it goes with); an edit of them is refused as the other counts are."""
    from lbee.run.stored import load_explanations

    run = run_copy(demo_run, tmp_path)
    statements = json.loads((run / "explanation.json").read_text())["confirmation"]["statements"]
    j = next(j for j, s in enumerate(statements) if s.get("beyond") and "shared" in s["beyond"])
    rewrite_digested(run / "explanation.json", _set(("confirmation", "statements", j, "beyond", "shared"), shared))
    with pytest.raises(ValueError, match="an edit is refused") as info:
        load_explanations(run / "explanation.json")
    assert f"'confirmation.statements[{j}].beyond.shared" in str(info.value)
