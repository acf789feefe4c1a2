"""A thirty-seventh user's audit (a coffee-bean sorter): what they could not read, fixed."""

import numpy as np
import pandas as pd
from click.testing import CliRunner
from PIL import Image

from lbee.cli import cli


def test_a_deleted_image_is_named_from_the_ids_file_beside_the_embeddings(tmp_path):
    """With precomputed embeddings and one image deleted, the run said only "has shape (12, 8); expected (11, d)",
    where the ids file beside the rows names the image that is gone."""
    rng = np.random.default_rng(0)
    images, emb = tmp_path / "images", tmp_path / "emb"
    images.mkdir()
    emb.mkdir()
    names = [f"bean_{i:04d}.png" for i in range(12)]
    for name in names:
        Image.fromarray(rng.integers(0, 255, (8, 8, 3), dtype=np.uint8)).save(images / name)
    np.save(emb / "embeddings.npy", rng.normal(size=(12, 8)).astype(np.float32))
    (emb / "ids.txt").write_text("\n".join(names) + "\n")
    np.save(tmp_path / "sentences.npy", rng.normal(size=(3, 8)).astype(np.float32))
    (tmp_path / "sentences.txt").write_text("a dark bean\na light bean\nan oily bean\n")
    p = rng.dirichlet(np.ones(2), size=12)
    pd.DataFrame({"image": names, "label": rng.integers(0, 2, 12), "prob_0": p[:, 0], "prob_1": p[:, 1]}).to_csv(
        tmp_path / "preds.csv", index=False
    )
    (images / "bean_0007.png").unlink()
    args = ["describe", str(images), "--predictions", str(tmp_path / "preds.csv"), "--out", str(tmp_path / "run")]
    args += ["--sentences", str(tmp_path / "sentences.txt"), "--image-embeddings", str(emb / "embeddings.npy")]
    args += ["--sentence-embeddings", str(tmp_path / "sentences.npy")]
    r = CliRunner().invoke(cli, args, obj={})
    said = " ".join(r.output.split())
    assert r.exit_code != 0 and "Traceback" not in r.output, r.output
    assert "has shape (12, 8); expected (11, d)" in said
    assert "ids.txt lists 'bean_0007.png', not among the images" in said


def test_a_misspelt_choice_is_answered_with_the_nearest_one():
    """`--method fpdif` got click's list alone, where `--encoder ViT-B32` got a "did you mean" (trial 37)."""
    r = CliRunner().invoke(cli, ["describe", "images", "--method", "fpdif"], obj={})
    assert r.exit_code == 2 and "(did you mean 'fpdiff'?)" in r.output, r.output
    r = CliRunner().invoke(cli, ["describe", "images", "--method", "zzzz"], obj={})
    assert r.exit_code == 2 and "did you mean" not in r.output and "'zzzz' is not one of" in r.output, r.output
