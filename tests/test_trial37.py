"""A thirty-seventh user's audit (a coffee-bean sorter): what they could not read, fixed."""

import numpy as np
import pandas as pd
from click.testing import CliRunner
from PIL import Image

from lbee.cli import cli


def _beans(tmp_path, n=40):
    """A folder of ``n`` images, their embeddings with an ids file, sentences and a predictions table: the args."""
    rng = np.random.default_rng(0)
    images, emb = tmp_path / "images", tmp_path / "emb"
    images.mkdir()
    emb.mkdir()
    names = [f"bean_{i:04d}.png" for i in range(n)]
    for name in names:
        Image.fromarray(rng.integers(0, 255, (8, 8, 3), dtype=np.uint8)).save(images / name)
    np.save(emb / "embeddings.npy", rng.normal(size=(n, 8)).astype(np.float32))
    (emb / "ids.txt").write_text("\n".join(names) + "\n")
    np.save(tmp_path / "sentences.npy", rng.normal(size=(3, 8)).astype(np.float32))
    (tmp_path / "sentences.txt").write_text("a dark bean\na light bean\nan oily bean\n")
    p = rng.dirichlet(np.ones(2), size=n)
    pd.DataFrame({"image": names, "label": rng.integers(0, 2, n), "prob_0": p[:, 0], "prob_1": p[:, 1]}).to_csv(
        tmp_path / "preds.csv", index=False
    )
    args = ["describe", str(images), "--predictions", str(tmp_path / "preds.csv"), "--out", str(tmp_path / "run")]
    args += ["--sentences", str(tmp_path / "sentences.txt"), "--image-embeddings", str(emb / "embeddings.npy")]
    return args + ["--sentence-embeddings", str(tmp_path / "sentences.npy")]


def test_a_deleted_image_is_named_from_the_ids_file_beside_the_embeddings(tmp_path):
    """With precomputed embeddings and one image deleted, the run said only "has shape (40, 8); expected (39, d)",
    where the ids file beside the rows names the image that is gone."""
    args = _beans(tmp_path)
    (tmp_path / "images" / "bean_0007.png").unlink()
    r = CliRunner().invoke(cli, args, obj={})
    said = " ".join(r.output.split())
    assert r.exit_code != 0 and "Traceback" not in r.output, r.output
    assert "has shape (40, 8); expected (39, d)" in said
    assert "ids.txt lists 'bean_0007.png', not among the images" in said


def test_a_report_titled_by_its_files_says_how_to_title_it(tmp_path):
    """The report's title defaulted to "images · preds"; a thirty-seventh user found --name in the docs only."""
    args = _beans(tmp_path)
    r = CliRunner().invoke(cli, args + ["--html"], obj={})
    assert r.exit_code == 0, r.output
    assert "--name and --model-name title the report" in " ".join(r.output.split())
    r = CliRunner().invoke(cli, args + ["--overwrite", "--name", "beans"], obj={})
    assert r.exit_code == 0 and "title the report" not in " ".join(r.output.split()), r.output


def test_a_misspelt_choice_is_answered_with_the_nearest_one():
    """`--method fpdif` got click's list alone, where `--encoder ViT-B32` got a "did you mean" (trial 37)."""
    r = CliRunner().invoke(cli, ["describe", "images", "--method", "fpdif"], obj={})
    assert r.exit_code == 2 and "(did you mean 'fpdiff'?)" in r.output, r.output
    r = CliRunner().invoke(cli, ["describe", "images", "--method", "zzzz"], obj={})
    assert r.exit_code == 2 and "did you mean" not in r.output and "'zzzz' is not one of" in r.output, r.output


def test_the_ids_file_names_the_images_on_either_side(tmp_path):
    """The run's images it does not list (an extra image), and its ids the run lacks (a deleted one)."""
    from lbee.io.row_ids import missing_images, unlisted_images

    (tmp_path / "ids.txt").write_text("a.png\nsub/b.png\n")
    npy = tmp_path / "e.npy"
    assert unlisted_images(npy, ["/d/a.png", "sub/b.png", "c.png"]) == (["c.png"], "ids.txt")
    assert missing_images(npy, ["/d/a.png"]) == (["sub/b.png"], "ids.txt")
    assert missing_images(tmp_path / "none" / "e.npy", ["a.png"]) is None


def test_a_misspelt_folder_on_the_way_to_an_input_is_mended_in_the_hint(tmp_path):
    """Trial 37: `lbee describe data/smal/images` said only "does not exist" where 'data/small/images' existed."""
    from lbee._files import near_file

    (tmp_path / "data" / "small" / "images").mkdir(parents=True)
    (tmp_path / "data" / "small" / "preds.csv").write_text("image_id,confidence\n")
    (tmp_path / "data" / "large").mkdir()
    r = CliRunner().invoke(cli, ["describe", str(tmp_path / "data" / "smal" / "images")])
    assert r.exit_code == 2
    assert f"(did you mean '{tmp_path / 'data' / 'small' / 'images'}'?)" in " ".join(r.output.split())
    assert near_file(tmp_path / "dta" / "small" / "preds.csv") == str(tmp_path / "data" / "small" / "preds.csv")
    # a mended folder where the rest of the path still does not exist, or nothing near: nothing suggested
    assert near_file(tmp_path / "data" / "smal" / "labels.csv") is None
    assert near_file(tmp_path / "data" / "zzzzz" / "images") is None
