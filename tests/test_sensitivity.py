import json

import numpy as np
import pandas as pd
import pytest
import torch
from click.testing import CliRunner
from PIL import Image

from lbee.analyses.saliency import alignment, gradcam, saliency_alignment
from lbee.analyses.sensitivity import (
    Preprocess,
    confidence_from_sensitivity,
    gray_background,
    region_noise,
    region_sensitivity,
    relative_foreground_sensitivity,
)
from lbee.cli import cli
from lbee.reports.sensitivity import sensitivity_panel_html

S = 16
PLAIN = Preprocess(S, None, (0.0, 0.0, 0.0), (1.0, 1.0, 1.0))  # no resize, identity normalisation


class HalfStd(torch.nn.Module):
    """Class 1 while the watched half (left = object here) is smooth: logits (0, 5 - 100·std(half))."""

    def __init__(self, side):
        super().__init__()
        self.side = side
        self.dummy = torch.nn.Parameter(torch.zeros(1))

    def forward(self, x):
        half = x[..., : S // 2] if self.side == "left" else x[..., S // 2 :]
        std = half.flatten(1).std(1)
        return torch.stack([torch.zeros_like(std), 5 - 100 * std + self.dummy], 1)


def fg_model():  # watches the object: noise on the object breaks it
    return HalfStd("left")


def bg_model():  # watches the background
    return HalfStd("right")


def _world(n=4):
    images = [np.full((S, S, 3), 100 + 10 * i, np.uint8) for i in range(n)]  # smooth, all different
    mask = np.zeros((S, S), bool)
    mask[:, : S // 2] = True  # the object is the left half
    return images, [mask] * n, np.ones(n, int)


def test_rfs_hand_values_and_undefined_edge():
    assert relative_foreground_sensitivity(0.2, 0.6) == pytest.approx(0.5)  # ā = .4: .4 / .8
    assert relative_foreground_sensitivity(0.9, 0.7) == pytest.approx(-0.5)  # ā = .8: -.2 / .4
    assert relative_foreground_sensitivity(0.0, 1.0) == pytest.approx(1.0)
    out = relative_foreground_sensitivity([0.0, 1.0, 0.25], [0.0, 1.0, 0.75])
    assert np.isnan(out[0]) and np.isnan(out[1]) and out[2] == pytest.approx(0.5)  # ā = .5: .5 / 1
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        relative_foreground_sensitivity(1.2, 0.5)


def test_region_noise_touches_only_its_region():
    x = torch.rand(3, S, S)
    m = torch.zeros(1, S, S)
    m[..., :4] = 1
    fg, bg = region_noise(x, m, 120, torch.Generator().manual_seed(0))
    assert torch.equal(fg[..., 4:], x[..., 4:]) and torch.equal(bg[..., :4], x[..., :4])
    assert not torch.equal(fg[..., :4], x[..., :4]) and fg.min() >= 0 and fg.max() <= 1
    # one shared draw: where neither clips, fg noise on the object equals bg noise would there
    n_fg = (fg - x)[..., :4]
    assert 0.3 < float(n_fg.std()) < 0.55  # σ = 120/255 = 0.47, shrunk a little by clipping
    g = gray_background(x, m)
    assert torch.equal(g[..., :4], x[..., :4]) and torch.all(g[..., 4:] == 0.5)


def test_background_model_has_rfs_minus_one_and_object_model_plus_one(tmp_path):
    images, masks, labels = _world()
    r_bg = region_sensitivity(
        bg_model(), images, masks, labels, sigmas=[30, 90], trials=3, preprocess=PLAIN, class_names=["no", "yes"]
    )
    r_fg = region_sensitivity(fg_model(), images, masks, labels, sigmas=[30, 90], trials=3, preprocess=PLAIN)
    for b in r_bg.summary["per_sigma"]:  # a_fg = 1 (background clean), a_bg = 0: ā = .5, RFS = -1
        assert (b["a_fg"], b["a_bg"], b["rfs"]) == (1.0, 0.0, -1.0)
    assert [b["rfs"] for b in r_fg.summary["per_sigma"]] == [1.0, 1.0]
    t = r_bg.table
    assert len(t) == 4 * 2 and set(t.columns) >= {"image", "sigma", "p_fg", "p_bg", "irfs", "p_gray"}
    p_clean = 1 / (1 + np.exp(-5))  # std 0 -> logits (0, 5)
    assert t["p_fg"].to_numpy() == pytest.approx(p_clean, abs=1e-6)
    assert t["p_bg"].max() < 0.002  # σ = 30: std ≈ 30/255 -> logit 5 - 11.8
    # iRFS = (p_bg - p_fg) / (2 min(p̄, 1 - p̄)) = (p_bg - p_fg) / (p_bg + p_fg) here, ≈ -1
    expect = (t["p_bg"] - t["p_fg"]) / (t["p_bg"] + t["p_fg"])
    assert t["irfs"].to_numpy() == pytest.approx(expect.to_numpy()) and t["irfs"].max() < -0.99
    assert r_bg.summary["per_class"]["yes"]["rfs_mean"] == -1.0
    assert r_bg.summary["accuracy_gray_background"] == 1.0  # gray 0.5 on a 0.5 image changes nothing


def test_undefined_rfs_is_null_with_reason():
    images, masks, labels = _world(2)
    r = region_sensitivity(bg_model(), images, masks, labels, sigmas=[0], trials=1, preprocess=PLAIN)
    b = r.summary["per_sigma"][0]  # σ = 0: a_fg = a_bg = 1, ā = 1
    assert b["rfs"] is None and "ā is 0 or 1" in b["rfs_reason"] and r.summary["rfs_mean"] is None
    json.dumps(r.summary, allow_nan=False)


def test_deterministic_cached_and_seeded(tmp_path):
    rng = np.random.default_rng(0)
    images = [rng.integers(0, 255, (S, S, 3), dtype=np.uint8) for _ in range(3)]
    _, masks, labels = _world(3)
    kw = dict(sigmas=[60], trials=2, preprocess=PLAIN, seed=1)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(3 * S * S, 2))
    a = region_sensitivity(model, images, masks, labels, cache_dir=tmp_path, **kw)
    b = region_sensitivity(model, images, masks, labels, cache_dir=tmp_path, **kw)
    assert a.n_computed == 3 and b.n_computed == 0
    pd.testing.assert_frame_equal(a.table, b.table)
    c = region_sensitivity(model, images[::-1], masks, labels, batch_size=1, **kw)  # order / batching free
    assert c.table.set_index("sigma")["p_fg"].tolist()[::-1] == pytest.approx(a.table["p_fg"].tolist())
    d = region_sensitivity(model, images, masks, labels, **{**kw, "seed": 2})
    assert not np.allclose(d.table["p_fg"], a.table["p_fg"])


def test_input_validation():
    images, masks, labels = _world(2)
    with pytest.raises(ValueError, match="same length"):
        region_sensitivity(bg_model(), images, masks[:1], labels, preprocess=PLAIN)
    with pytest.raises(ValueError, match="outside the model's 2 classes"):
        region_sensitivity(bg_model(), images, masks, [0, 7], sigmas=[30], trials=1, preprocess=PLAIN)
    with pytest.raises(ValueError, match=r"has size \(8, 8\)"):
        region_sensitivity(bg_model(), images, [np.zeros((8, 8), bool)] * 2, labels, preprocess=PLAIN)


class Brightness(torch.nn.Module):
    """A 1×1 conv summing channels; class 1's logit is the mean of that map, so GradCAM ∝ brightness."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 1, 1, bias=False)
        torch.nn.init.constant_(self.conv.weight, 1.0)

    def forward(self, x):
        a = self.conv(x).mean((1, 2, 3))
        return torch.stack([torch.zeros_like(a), a], 1)


def test_gradcam_and_alignment_hand_values():
    s = np.array([[1.0, 0.6], [0.4, 0.0]])
    m = np.array([[True, False], [True, False]])
    out = alignment(s, m)
    assert out["iou"] == pytest.approx(1 / 3)  # s ≥ .5 = top row; ∩ = 1, ∪ = 3
    assert (out["fg_density"], out["bg_density"], out["delta_density"]) == pytest.approx((0.7, 0.3, 0.4))
    obj = np.zeros((S, S), bool)
    obj[4:12, 4:12] = True
    bright_obj = np.where(obj[..., None], 255, 0).astype(np.uint8).repeat(3, -1)
    dark_obj = (255 - bright_obj).astype(np.uint8)
    x = PLAIN.normalize(
        torch.stack(
            [
                PLAIN.prepare(Image.fromarray(i), Image.fromarray(obj.astype(np.uint8) * 255))[0]
                for i in (bright_obj, dark_obj)
            ]
        )
    )
    cams = gradcam(Brightness(), x, [1, 1])
    assert np.allclose(cams[0], obj) and np.allclose(cams[1], ~obj)
    table = saliency_alignment(
        Brightness(), [bright_obj, dark_obj], [obj, obj], [1, 1], preprocess=PLAIN, ids=["good", "bad"]
    )
    assert table["image"].tolist() == ["bad", "good"]  # least aligned first
    assert table["iou"].tolist() == [0.0, 1.0] and table["layer"].iloc[0] == "conv"


def test_confidence_from_sensitivity():
    frame = pd.DataFrame(
        {"image": ["a.png", "a.png", "b.png", "b.png"], "sigma": [30, 60, 30, 60], "irfs": [0.2, 0.4, np.nan, np.nan]}
    )
    phi = confidence_from_sensitivity(frame, ["dir/b.png", "a.png"])
    assert phi.tolist() == pytest.approx([0.0, 0.3])  # b: no defined iRFS -> 0; matched by file name
    assert confidence_from_sensitivity(frame, ["a.png"], sigma=60).tolist() == [0.4]
    sal = pd.DataFrame({"image": ["a.png", "b.png"], "iou": [0.9, 0.1]})
    assert confidence_from_sensitivity(sal, ["b.png", "a.png"], kind="saliency").tolist() == [0.1, 0.9]
    with pytest.raises(ValueError, match="no row for 1 of the 2 images, e.g. 'c.png'"):
        confidence_from_sensitivity(frame, ["a.png", "c.png"])
    with pytest.raises(ValueError, match="`kind`"):
        confidence_from_sensitivity(frame, ["a.png"], kind="entropy")


def test_cli_manifest_run_writes_outputs_and_panel(tmp_path):
    images, masks, labels = _world(3)
    (tmp_path / "masks").mkdir()
    rows = []
    for i, (img, m) in enumerate(zip(images, masks)):
        Image.fromarray(img).save(tmp_path / f"im{i}.png")
        Image.fromarray(m.astype(np.uint8) * 255).save(tmp_path / "masks" / f"im{i}.png")
        rows.append({"path": f"im{i}.png", "label": 1, "class": "<thing>"})
    pd.DataFrame(rows).to_csv(tmp_path / "manifest.csv", index=False)
    out = tmp_path / "out"
    args = [
        "--cache-dir",
        str(tmp_path / "cache"),
        "-q",
        "sensitivity",
        str(tmp_path / "manifest.csv"),
        "--masks",
        str(tmp_path / "masks"),
        "--model",
        "test_sensitivity:bg_model",
        "--sigmas",
        "30,90",
        "--trials",
        "2",
        "--preprocess",
        "spotcheck",
        "--image-size",
        str(S),
        "--out",
        str(out),
    ]
    result = CliRunner().invoke(cli, args, obj={})
    assert result.exit_code == 0, result.output
    assert "RFS averaged over σ: -1.000" in result.output and "3 computed" in result.output
    table = pd.read_csv(out / "sensitivity.csv")
    assert len(table) == 6 and table["class"].unique().tolist() == ["<thing>"]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["rfs_mean"] == -1.0 and (out / "rfs.png").stat().st_size > 1000
    before = (out / "sensitivity.csv").read_bytes()
    refused = CliRunner().invoke(cli, args, obj={})  # the outputs are there: never replaced in silence
    assert refused.exit_code == 2 and "--overwrite" in refused.output and "Traceback" not in refused.output
    assert (out / "sensitivity.csv").read_bytes() == before
    again = CliRunner().invoke(cli, args + ["--overwrite"], obj={})
    assert again.exit_code == 0, again.output
    assert "0 computed, 3 from the cache" in again.output
    (out / "sensitivity.csv").rename(out / "keep.csv")
    (out / "keep.csv").write_bytes((tmp_path / "manifest.csv").read_bytes())
    (out / "keep.csv").rename(out / "sensitivity.csv")  # a manifest that bears an output's name, in --out
    own = [args[0], args[1], args[2], args[3], str(out / "sensitivity.csv")] + args[5:] + ["--overwrite"]
    refused = CliRunner().invoke(cli, own, obj={})
    assert refused.exit_code == 2 and "input file" in refused.output  # never replaced, even with --overwrite
    assert (out / "sensitivity.csv").read_bytes() == (tmp_path / "manifest.csv").read_bytes()
    panel = sensitivity_panel_html(out)
    assert panel.startswith('<section class="lbee-sensitivity">') and "data:image/png;base64," in panel
    assert "RFS (mean over σ): -1.000" in panel and "<thing>" not in panel
    (tmp_path / "empty").mkdir()
    bad = CliRunner().invoke(
        cli,
        args[:4]
        + [
            str(tmp_path / "manifest.csv"),
            "--masks",
            str(tmp_path / "empty"),
            "--model",
            "test_sensitivity:bg_model",
            "--out",
            str(tmp_path / "out2"),
        ],
        obj={},
    )
    assert bad.exit_code == 1 and "3 of 3 images have no mask" in bad.output and "Traceback" not in bad.output


def test_render_masks_and_their_recovery_from_pixels():
    from lbee.analyses.sensitivity import spotcheck_masks_from_pixels
    from lbee.spotcheck import DatasetDefinition, render
    from lbee.spotcheck._world import ATTRIBUTES

    rng = np.random.default_rng(0)
    world = DatasetDefinition(["square", "rectangle", "circle", "text"], list(ATTRIBUTES))
    attrs, images, masks = [], [], []
    for _ in range(30):
        img, a, m = render(world.sample_attributes(rng), rng, 64, return_mask=True)
        attrs.append(a)
        images.append(img)
        masks.append(m)
    img2, _ = render(attrs[0], np.random.default_rng(1), 64)  # return_mask leaves the drawing unchanged
    img3, _, _ = render(attrs[0], np.random.default_rng(1), 64, return_mask=True)
    assert np.array_equal(img2, img3)
    rec = spotcheck_masks_from_pixels(np.stack(images), attrs)
    union = (rec | np.stack(masks)).sum((1, 2))
    iou = (rec & np.stack(masks)).sum((1, 2))[union > 0] / union[union > 0]
    assert np.median(iou) > 0.8
