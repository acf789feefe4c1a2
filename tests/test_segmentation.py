"""Segmentation: φ = −mean pixel entropy, ω = mIoU / pixel accuracy, the Fig. 4 split option."""

import json

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from PIL import Image

from lbee.cli import cli
from lbee.scoring.segmentation import image_performance, mean_pixel_entropy, read_label_map, segmentation_scores


def test_entropy_of_uniform_and_one_hot_maps():
    uniform = np.full((4, 3, 5), 0.25)
    assert mean_pixel_entropy(uniform) == pytest.approx(np.log(4))
    one_hot = np.zeros((4, 3, 5))
    one_hot[2] = 1
    assert mean_pixel_entropy(one_hot) == pytest.approx(0.0, abs=1e-9)
    # Half the pixels uniform, half certain: the mean of log 4 and 0.
    mixed = one_hot.copy()
    mixed[:, :, :2] = 0.25
    assert mean_pixel_entropy(mixed) == pytest.approx(np.log(4) * 6 / 15)


def test_pixel_accuracy_and_miou_by_hand_with_ignore_index():
    pred = np.array([[0, 0, 1, 1], [0, 2, 1, 1]])
    gt = np.array([[0, 0, 1, 255], [1, 2, 1, 1]])
    acc, miou = image_performance(pred, gt, num_classes=3, ignore_index=255)
    # 7 valid pixels, 6 correct; IoU: class 0 = 2/3, class 1 = 3/4, class 2 = 1/1.
    assert acc == pytest.approx(6 / 7)
    assert miou == pytest.approx((2 / 3 + 3 / 4 + 1) / 3)
    # Without an ignore index, 255 is an unknown class: a clear error.
    with pytest.raises(ValueError, match="class 255"):
        image_performance(pred, gt, num_classes=3, ignore_index=None)
    assert np.isnan(image_performance(pred, np.full_like(gt, 255), 3)[0])


def test_a_label_map_npy_that_is_not_an_array_is_one_clear_line(tmp_path):
    (tmp_path / "empty.npy").write_bytes(b"")
    with pytest.raises(ValueError, match="label map .*empty.npy.*the file is empty"):
        read_label_map(tmp_path / "empty.npy")
    with open(tmp_path / "z.npy", "wb") as fh:
        np.savez(fh, a=np.zeros((2, 2)))
    with pytest.raises(ValueError, match="is an .npz archive"):
        read_label_map(tmp_path / "z.npy")


def test_scores_need_matching_sizes_and_known_classes():
    logits = np.zeros((2, 4, 4))
    with pytest.raises(ValueError, match="img_a.*shape"):
        segmentation_scores([logits], [np.zeros((4, 5), int)], names=["img_a"])
    with pytest.raises(ValueError, match="class 5"):
        segmentation_scores([logits], [np.full((4, 4), 5)])
    scores = segmentation_scores([logits])
    with pytest.raises(ValueError, match="masks"):
        scores.confidence("miou")
    label_only = segmentation_scores([np.zeros((4, 4), int)], [np.zeros((4, 4), int)], num_classes=2)
    assert label_only.miou[0] == 1.0
    with pytest.raises(ValueError, match="entropy"):
        label_only.confidence("entropy")


class BrightnessSegmenter:
    """Factory for a TorchScript model: confident 'class 0' on bright pixels, uniform on dark ones."""

    @staticmethod
    def build():
        import torch

        class Net(torch.nn.Module):
            def forward(self, x):
                lum = x.mean(dim=1, keepdim=True)  # ImageNet-normalised: dark ≈ -2, bright ≈ +2
                return torch.cat([(lum + 2.0).clamp(min=0) * 4.0, torch.zeros_like(lum)], dim=1)

        return torch.jit.script(Net())


# Dark images: all pixels predicted class 0; truth has 511 valid class-0 pixels (one is ignored) and
# 512 class-1 pixels, so IoU_0 = 511 / 1023, IoU_1 = 0. Bright images are all correct.
DARK_MIOU = (511 / 1023 + 0.0) / 2


@pytest.fixture(scope="module")
def seg_world(tmp_path_factory):
    root = tmp_path_factory.mktemp("seg")
    (root / "images").mkdir()
    (root / "masks").mkdir()
    (root / "preds").mkdir()
    rng = np.random.default_rng(0)
    dark = np.zeros(16, bool)
    dark[rng.permutation(16)[:6]] = True
    for i in range(16):
        level = 15 if dark[i] else 235
        img = np.clip(level + rng.integers(-10, 10, size=(32, 32, 3)), 0, 255).astype(np.uint8)
        Image.fromarray(img).save(root / "images" / f"im{i:02d}.png")
        mask = np.zeros((32, 32), np.uint8)
        if dark[i]:
            mask[:, 16:] = 1  # the uniform prediction's argmax (class 0) gets half of it wrong
        mask[0, 0] = 255
        Image.fromarray(mask).save(root / "masks" / f"im{i:02d}.png")
        logits = np.zeros((2, 32, 32))
        logits[0] = 0.1 if dark[i] else 8.0
        np.save(root / "preds" / f"im{i:02d}.npy", logits)
    BrightnessSegmenter.build().save(str(root / "model.pt"))
    return root, dark


@pytest.mark.parametrize("split_by", ["entropy", "pixel_accuracy", "miou"])
def test_cli_segmentation_splits_dark_images_as_hard(seg_world, split_by, tmp_path):
    root, dark = seg_world
    out = tmp_path / "out"
    r = CliRunner().invoke(
        cli,
        [
            "-q",
            "--cache-dir",
            str(tmp_path / "cache"),
            "describe",
            str(root / "images"),
            "--task",
            "segmentation",
            "--predictions",
            str(root / "preds"),
            "--masks",
            str(root / "masks"),
            "--split-by",
            split_by,
            "--encoder",
            "spotcheck",
            "--sentences",
            "spotcheck",
            "--clusters",
            "2",
            "--out",
            str(out),
            "--num-workers",
            "0",
        ],
        obj={},
    )
    assert r.exit_code == 0, r.output
    table = pd.read_parquet(out / "assignments.parquet")
    assert (table["split"] == "hard").to_numpy().tolist() == dark.tolist()
    np.testing.assert_allclose(table["performance"], np.where(dark, DARK_MIOU, 1.0))
    payload = json.loads((out / "explanation.json").read_text())
    assert payload["task"] == "segmentation" and payload["split_by"] == split_by


def test_cli_segmentation_model_path_and_bad_masks(seg_world, tmp_path):
    root, dark = seg_world
    args = [
        "-q",
        "--cache-dir",
        str(tmp_path / "cache"),
        "describe",
        str(root / "images"),
        "--task",
        "segmentation",
        "--model",
        str(root / "model.pt"),
        "--encoder",
        "spotcheck",
        "--sentences",
        "spotcheck",
        "--clusters",
        "2",
        "--overwrite",
        "--out",
        str(tmp_path / "out"),
        "--num-workers",
        "0",
    ]
    r = CliRunner().invoke(cli, args + ["--masks", str(root / "masks")], obj={})  # (reruns replace the run)
    assert r.exit_code == 0, r.output
    table = pd.read_parquet(tmp_path / "out" / "assignments.parquet")
    assert (table["split"] == "hard").to_numpy().tolist() == dark.tolist()
    np.testing.assert_allclose(table["performance"], np.where(dark, DARK_MIOU, 1.0))

    bad = tmp_path / "bad_masks"
    bad.mkdir()
    for i in range(16):
        Image.fromarray(np.zeros((32, 30), np.uint8)).save(bad / f"im{i:02d}.png")
    r = CliRunner().invoke(cli, args + ["--masks", str(bad)], obj={})
    assert r.exit_code == 1 and "im00.png" in r.output and "(32, 30)" in r.output, r.output
    r = CliRunner().invoke(cli, args[:-2] + ["--split-by", "miou"], obj={})
    assert r.exit_code == 1 and "masks" in r.output, r.output


def test_report_config_runs_a_segmentation_dataset(seg_world, tmp_path):
    from lbee.reports.batch import run_report

    root, dark = seg_world
    cfg = tmp_path / "r.yaml"
    cfg.write_text(f"""\
datasets:
  - name: seg
    task: segmentation
    images: {root}/images
    masks: {root}/masks
    split_by: miou
    encoder: spotcheck
    sentences: spotcheck
    clusters: 2
    models:
      - {{name: folder, predictions: {root}/preds}}
      - {{name: scripted, model: {root}/model.pt}}
  - name: no masks
    images: {root}/images
    split_by: miou
    predictions: {root}/preds
""")
    from lbee.reports.config import ConfigError

    with pytest.raises(ConfigError, match="line 15.*needs ground-truth 'masks'"):  # checked before anything runs
        run_report(cfg, output=tmp_path / "out", cache_dir=tmp_path / "cache")
    res = run_report(cfg, output=tmp_path / "out", cache_dir=tmp_path / "cache", keep_going=True)
    assert [r["model"] for r in res.reports] == ["folder", "scripted"], res.failures
    assert (
        len(res.failures) == 1
        and "line 15" in res.failures[0][1]
        and "needs ground-truth 'masks'" in res.failures[0][1]
    )
    for model in ("folder", "scripted"):
        table = pd.read_parquet(tmp_path / "out" / "seg" / model / "assignments.parquet")
        assert (table["split"] == "hard").to_numpy().tolist() == dark.tolist()
        html = (tmp_path / "out" / "seg" / model / "report.html").read_text()
        assert "per-image mIoU" in html and "mIoU" in html


def test_split_by_switches_the_signal_fig4():
    """Entropy and mIoU can disagree: a confidently wrong image is easy by entropy, hard by mIoU."""
    confident = np.zeros((2, 4, 4))
    confident[0] = 10.0  # certain of class 0 everywhere
    unsure = np.zeros((2, 4, 4))  # uniform: maximal entropy, argmax class 0
    masks = [np.ones((4, 4), int), np.zeros((4, 4), int)]  # the confident image is entirely wrong
    s = segmentation_scores([confident, unsure], masks)
    assert s.confidence("entropy")[0] > s.confidence("entropy")[1]
    assert s.confidence("miou").tolist() == [0.0, 1.0] and s.confidence("pixel_accuracy").tolist() == [0.0, 1.0]
    assert s.performance().tolist() == [0.0, 1.0]
    with pytest.raises(ValueError, match="split_by"):
        s.confidence("iou")


def test_a_failed_model_run_leaves_inference_mode_off(seg_world, tmp_path):
    """An error while the per-image predictions are being consumed must not leak torch's inference mode."""
    import torch

    from lbee.scoring.classifier import load_classifier
    from lbee.scoring.segmentation import predict_segmentation

    root, _ = seg_world
    bad = tmp_path / "bad"
    bad.mkdir()
    Image.fromarray(np.zeros((32, 30), np.uint8)).save(bad / "m.png")
    model = load_classifier(str(root / "model.pt"))
    paths = sorted(str(p) for p in (root / "images").glob("*.png"))[:2]
    with pytest.raises(ValueError, match="shape") as err:
        predict_segmentation(model, paths, masks=[bad / "m.png"] * 2, device="cpu")
    # While the error (and its traceback, as the CLI runner keeps it) is alive, inference mode must be off.
    assert err.value is not None and not torch.is_inference_mode_enabled()


def test_label_map_predictions_are_scored_over_the_num_classes_given(seg_world, tmp_path):
    """Fourteenth sweep, lower 3: (H, W) label-map predictions, which the docs allow, always failed with
    "`num_classes` is needed"; the entry's (or --num-classes) was ignored."""
    root, dark = seg_world
    labels = tmp_path / "labels"
    labels.mkdir()
    for f in sorted((root / "preds").glob("*.npy")):
        np.save(labels / f.name, np.load(f).argmax(axis=0))  # the logits' argmax: the same maps as labels
    args = ["-q", "--cache-dir", str(tmp_path / "cache"), "describe", str(root / "images"), "--task", "segmentation"]
    args += ["--predictions", str(labels), "--masks", str(root / "masks"), "--split-by", "miou", "--encoder"]
    args += ["spotcheck", "--sentences", "spotcheck", "--clusters", "2", "--num-workers", "0"]
    r = CliRunner().invoke(cli, [*args, "--out", str(tmp_path / "no")], obj={})
    assert r.exit_code == 1 and "`num_classes` is needed" in r.output
    r = CliRunner().invoke(cli, [*args, "--num-classes", "2", "--out", str(tmp_path / "o")], obj={})
    assert r.exit_code == 0 and "not used by this run" not in r.output, r.output
    table = pd.read_parquet(tmp_path / "o" / "assignments.parquet")
    np.testing.assert_allclose(table["performance"], np.where(dark, DARK_MIOU, 1.0))
