"""The Ray engines: embeddings and VQA answers equal the local path's and share its caches.

Skipped when Ray is not installed, except under CI=true, where it must run.
"""

import os
import warnings

import numpy as np
import pytest
from PIL import Image

if os.environ.get("CI", "").lower() != "true":
    pytest.importorskip("ray")

import ray  # noqa: E402
from click.testing import CliRunner  # noqa: E402

from lbee.cli import cli  # noqa: E402
from lbee.encoders import create_encoder  # noqa: E402
from lbee.encoders.embedding import EncoderSpec, embed_images, embed_images_ray  # noqa: E402


@pytest.fixture(scope="module")
def local_ray():
    import sys

    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])  # workers cannot import this test module
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
    yield
    ray.shutdown()


@pytest.fixture(scope="module")
def image_folder(tmp_path_factory):
    folder = tmp_path_factory.mktemp("imgs")
    rng = np.random.default_rng(0)
    for i in range(300):
        Image.fromarray((rng.random((24, 24, 3)) * 255).astype("uint8")).save(folder / f"im{i:03d}.png")
    (folder / "im150.png").write_bytes(b"not an image")  # unreadable, in the middle of a chunk
    return folder


def _paths(folder):
    return sorted(str(p) for p in folder.glob("*.png"))


def test_ray_embeddings_equal_local_and_share_the_cache(local_ray, image_folder, tmp_path):
    paths = _paths(image_folder)
    encoder = create_encoder("spotcheck", device="cpu")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        local = embed_images(encoder, paths, cache_dir=tmp_path / "local", batch_size=32)
        out = tmp_path / "out" / "embeddings.npy"
        remote = embed_images_ray(
            EncoderSpec("spotcheck", device="cpu"),
            paths,
            out=out,
            cache_dir=tmp_path / "ray",
            batch_size=32,
            chunk_size=64,
            num_actors=2,
        )
    assert local.n_encoded == remote.n_encoded == 299
    assert np.array_equal(local.ok, remote.ok) and not remote.ok[150]
    assert [p for p, _ in remote.failures] == [paths[150]]
    assert isinstance(remote.embeddings, np.memmap) or remote.embeddings.base is not None  # streamed from disk
    assert remote.embeddings.shape == local.embeddings.shape
    assert np.abs(np.asarray(remote.embeddings) - local.embeddings).max() < 1e-5
    assert not list(out.parent.glob("*.partial.npy"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # a rerun of either path over the cache the Ray run filled encodes nothing
        again = embed_images_ray(
            EncoderSpec("spotcheck", device="cpu"), paths, cache_dir=tmp_path / "ray", chunk_size=100, num_actors=2
        )
        assert again.n_encoded == 0
        assert embed_images(encoder, paths, cache_dir=tmp_path / "ray").n_encoded == 0
    assert np.abs(again.embeddings - local.embeddings).max() < 1e-5


def test_cli_embed_local_then_ray_encodes_nothing(local_ray, image_folder, tmp_path):
    cache = str(tmp_path / "cache")
    args = ["--cache-dir", cache, "-q", "embed", str(image_folder), "--encoder", "spotcheck"]
    r = CliRunner().invoke(cli, args + ["--out", str(tmp_path / "a")], obj={})
    assert r.exit_code == 0, r.output
    assert "299 images embedded" in r.output and "299 encoded" in r.output
    r = CliRunner().invoke(
        cli,
        args + ["--engine", "ray", "--num-actors", "2", "--chunk-size", "100", "--out", str(tmp_path / "b")],
        obj={},
    )
    assert r.exit_code == 0, r.output
    assert "0 encoded, 299 from the cache" in r.output
    a, b = np.load(tmp_path / "a" / "embeddings.npy"), np.load(tmp_path / "b" / "embeddings.npy")
    assert np.array_equal(a, b)
    ids = (tmp_path / "b" / "ids.txt").read_text().splitlines()
    assert len(ids) == 299 and ids[0] == "im000.png" and "im150.png" not in ids
    assert (tmp_path / "a" / "ids.txt").read_text() == (tmp_path / "b" / "ids.txt").read_text()


def _answers(images, questions):
    return [
        float(np.asarray(im).mean() > 127) if "bright" in q else (len(q) % 2 == 0) for im, q in zip(images, questions)
    ]


def test_ray_vqa_equals_local_and_shares_the_answer_cache(local_ray, image_folder, tmp_path):
    from functools import partial

    from vqa import CallableBackend, compute_relevance
    from vqa.runner import compute_relevance_ray

    paths = _paths(image_folder)[:80] + [_paths(image_folder)[150]]
    sentences = ["A bright image", "An image of a dog", "An image taken at night"]
    questions = ["Is the image bright?", "Is there a dog?", "Was it taken at night?"]
    make = partial(CallableBackend, _answers, name="toy")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        local = compute_relevance(paths, sentences, {"toy": make()}, questions=questions, cache_dir=tmp_path / "local")
        remote = compute_relevance_ray(
            paths,
            sentences,
            {"toy": make},
            questions=questions,
            cache_dir=tmp_path / "ray",
            chunk_size=16,
            num_actors=2,
        )
        assert remote.n_computed["toy"] == local.n_computed["toy"] == 240
        np.testing.assert_array_equal(remote.probabilities["toy"], local.probabilities["toy"])
        np.testing.assert_array_equal(remote.relevance, local.relevance)
        assert remote.image_ids == local.image_ids and len(remote.failures) == 1
        rerun = compute_relevance(paths, sentences, {"toy": make()}, questions=questions, cache_dir=tmp_path / "ray")
    assert rerun.n_computed["toy"] == 0
    np.testing.assert_array_equal(rerun.relevance, local.relevance)


def test_more_actors_than_the_cluster_can_place_are_refused_at_once(local_ray, image_folder, tmp_path):
    """Tenth sweep H7: `lbee embed --engine ray --num-actors 3` on 2 CPUs hung forever (the third actor never
    started) and left actors running after the command was killed."""
    import time

    from lbee.ray_pool import actor_pool

    t0 = time.perf_counter()
    with pytest.raises(ValueError, match=r"3 actors asked, but the Ray cluster has room for 2 \(2 CPU\(s\)\)"):
        actor_pool(object, (), num_actors=3)
    assert time.perf_counter() - t0 < 10
    r = CliRunner().invoke(
        cli,
        [
            "embed",
            str(image_folder),
            "--encoder",
            "spotcheck",
            "--engine",
            "ray",
            "--num-actors",
            "3",
            "--out",
            str(tmp_path / "o"),
        ],
        obj={},
    )
    assert r.exit_code != 0 and "room for 2" in r.output and "Traceback" not in r.output, r.output
