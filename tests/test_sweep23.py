"""Sweep 23 (on 09a008d): weights of zero-stride views passed the fit check (H1), torchvision's RegNets no longer
loaded (L1), the did-you-mean of unread columns was quadratic (H5), the picker repeated its sentences in every group
(H6), three readers read a FIFO or a device (H2-H4), and lower ones."""

import os

import numpy as np
import pytest


def test_weights_that_repeat_a_few_bytes_are_refused_before_the_model_is_built(tmp_path, registry_builds):
    """H1: a 36 KB file of `zeros(1).expand(shape)` tensors had every shape vit_l_16 wants: 2.1 GB built."""
    import torch
    import torchvision

    import lbee.scoring.classifier as classifier

    with torch.device("meta"):
        shapes = {k: v.shape for k, v in torchvision.models.resnet18(num_classes=2).state_dict().items()}
    views = {k: torch.zeros(1).expand(shape) if len(shape) else torch.zeros(()) for k, shape in shapes.items()}
    torch.save(views, tmp_path / "views.pt")
    assert os.path.getsize(tmp_path / "views.pt") < 200_000
    with pytest.raises(ValueError, match="stored in 4 bytes"):
        classifier.load_classifier("torchvision:resnet18", tmp_path / "views.pt", num_classes=2)
    assert registry_builds == ["meta"]


def test_torchvision_s_regnets_load_again_sized_by_their_metadata(tmp_path):
    """L1: RegNets compute their widths from tensors, so the meta build of sweep 22 refused every one."""
    import torch
    import torchvision

    from lbee.scoring.classifier import MAX_WEIGHTS_SHARING, load_classifier

    torch.save(torchvision.models.get_model("regnet_x_400mf", num_classes=2).state_dict(), tmp_path / "r.pt")
    model = load_classifier("torchvision:regnet_x_400mf", tmp_path / "r.pt", num_classes=2)
    assert not model.training and MAX_WEIGHTS_SHARING >= 1
    torch.save(torchvision.models.resnet18(num_classes=2).state_dict(), tmp_path / "small.pt")
    with pytest.raises(ValueError, match="cannot be its state dict"):  # sized before it is built
        load_classifier("torchvision:regnet_y_128gf", tmp_path / "small.pt", num_classes=2)


def test_unread_columns_are_weighed_in_linear_time_and_named_a_few(caplog):
    """H5: 50,000 columns held `lbee describe` 200 s (a list tested per column); L2: a 1.45 MB error named them all."""
    import time

    import pandas as pd

    from lbee.io.predictions import validate_predictions

    n = 20_000
    cols = {"image": ["a.png", "b.png"], "prob_x": [0.5, 0.5], "prob_y": [0.5, 0.5]}
    cols.update({f"probz{i}": [0.0, 0.0] for i in range(n)})
    table = pd.DataFrame(cols)
    t0 = time.perf_counter()
    with caplog.at_level("WARNING", logger="lbee"):
        validate_predictions(table)
    assert time.perf_counter() - t0 < 20  # minutes before on a loaded machine; well under a second alone
    said = caplog.text
    assert "'probz0' (did you mean 'prob_z0'?" in said and f"and {n - 5:,} more" in said and len(said) < 2000
    table = table.drop(columns=["prob_y"])
    with pytest.raises(ValueError) as err:
        validate_predictions(table)
    assert f"and {n - 3:,} more are not read" in str(err.value) and len(str(err.value)) < 2000


def test_a_page_s_picker_shares_a_budget_among_its_groups():
    """H6: 1,000 groups each offering 400 sentences made a 444 MB report.html."""
    from lbee.reports.browse import BROWSE_PAGE_CHOICES, browse_view
    from tests.conftest import fake_report_run

    n, m = 3000, 500
    gamma = np.ones((n, m), bool)
    run = fake_report_run(gamma)
    alone = browse_view(run, np.arange(3), 0, "g", run.image_ids, choices=[0, 1])
    crowded = browse_view(run, np.arange(3), 0, "g", run.image_ids, choices=[0, 1], n_groups=1000)
    assert len(alone["choices"]) == 400 and len(crowded["choices"]) == max(2, BROWSE_PAGE_CHOICES // 1000)


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="needs /dev/zero")
def test_classes_questions_and_sensitivity_images_are_read_as_every_file_is(tmp_path):
    """H2-H4: `--classes`, `--questions` and `lbee sensitivity`'s images and masks read /dev/zero (GBs) or a FIFO
    (never ending) with no check."""
    from lbee._files import NotRegularFile
    from lbee.analyses.sensitivity_inputs import content_hash
    from lbee.cli.sentences import _read_classes
    from vqa.questions import read_overrides

    with pytest.raises(ValueError, match="character device|not a regular file"):
        _read_classes("/dev/zero")
    with pytest.raises(NotRegularFile):
        read_overrides("/dev/zero")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for bad in ("/dev/zero", str(fifo), "/proc/self/status"):
        with pytest.raises((NotRegularFile, ValueError)):
            content_hash(bad)
    img = tmp_path / "a.png"
    from PIL import Image

    Image.new("L", (4, 4)).save(img)
    assert len(content_hash(str(img))) == 64


def test_sweep24_regnet_heads_parquet_bombs_attribute_labels_and_row_contents(tmp_path):
    """Sweep 24: a RegNet's metadata ignored num_classes (H2: 100,000 classes, 1.55 GB from 160 MB); a run folder's
    images.parquet was read bare (H3: 698 KB took 2.8 GB); RIVAL10's attribute labels skipped the .npy checks (H1);
    the row ids' content check read a kernel file (H4)."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    import torch

    from lbee.io.row_ids import check_row_ids
    from lbee.reports.stored_table import stored_images_table
    from lbee.rival10._dataset import _read_attr_labels
    from lbee.scoring.classifier import MAX_HEAD_WIDTH, _torchvision_size, load_classifier

    base = _torchvision_size("regnet_x_400mf")
    assert _torchvision_size("regnet_x_400mf", 100_000) == base + 99_000 * (MAX_HEAD_WIDTH + 1)
    torch.save({"x": torch.zeros(700_000)}, tmp_path / "w.pt")  # 2.8 MB
    with pytest.raises(ValueError, match="cannot be its state dict"):
        load_classifier("torchvision:regnet_x_400mf", tmp_path / "w.pt", num_classes=100_000)
    run = tmp_path / "run"
    run.mkdir()
    column = pa.array(np.zeros(9_000_000, np.int8))
    pq.write_table(pa.table({f"c{i}": column for i in range(8)}), run / "images.parquet", compression="zstd")
    with pytest.raises(ValueError, match="declares 9,000,000 rows × 8 columns"):
        stored_images_table(run)
    sparse = tmp_path / "x_attr_labels.npy"
    with open(sparse, "wb") as fh:
        fh.truncate(1 << 30)
    with pytest.raises(ValueError, match="Cannot read attribute labels"):
        _read_attr_labels(sparse)
    np.save(tmp_path / "e.npy", np.zeros((1, 2), np.float32))
    (tmp_path / "e.ids.txt").write_text("status\n")
    check_row_ids(  # the folder's file is a kernel file: its content is not read, the names were checked
        tmp_path / "e.npy", 1, ["status"], "e", against="x", images_folder="/proc/self", run_files=["/proc/self/status"]
    )


def test_unassigned_hard_images_are_checked_against_the_clusters(demo_run, tmp_path):
    """Sweep 24 L3: repeats, or images already in a cluster, were accepted in 'unassigned_hard' once the file's
    digest was recomputed."""
    import json
    import shutil

    from lbee.core.explanation_payload import content_digest
    from lbee.run.pipeline import load_explanations

    out, _ = demo_run
    payload = json.loads((out / "explanation.json").read_text())
    first = payload["clustering"]["hard"][0]["indices"][0]
    for bad in ([*payload["unassigned_hard"], payload["unassigned_hard"][0]], [*payload["unassigned_hard"], first]):
        edited = {k: v for k, v in payload.items() if k != "content_sha256"}
        edited["unassigned_hard"] = bad
        edited["content_sha256"] = content_digest(json.loads(json.dumps(edited)))
        path = tmp_path / "explanation.json"
        path.write_text(json.dumps(edited))
        with pytest.raises(ValueError, match="'unassigned_hard' repeats an image or names one of a cluster"):
            load_explanations(path)
    shutil.copy(out / "explanation.json", tmp_path / "ok.json")
    exps, _ = load_explanations(tmp_path / "ok.json")
    assert list(next(iter(exps.values())).unassigned) == payload["unassigned_hard"]
