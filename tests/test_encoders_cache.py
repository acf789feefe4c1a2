from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from lbee.encoders import EncoderLoadError, create_encoder, list_encoders, parse_encoder_spec
from lbee.encoders.embedding import embed_images, embed_sentences


def write_images(folder, n, size=(48, 40)):
    rng = np.random.default_rng(0)
    paths = []
    for i in range(n):
        p = folder / f"img{i}.png"
        Image.fromarray((rng.random((size[1], size[0], 3)) * 255).astype("uint8")).save(p)
        paths.append(str(p))
    return paths


def test_spec_parsing():
    assert parse_encoder_spec("open_clip") == ("open_clip", None, None)
    assert parse_encoder_spec("open_clip:ViT-B-32@laion2b_s34b_b79k") == ("open_clip", "ViT-B-32", "laion2b_s34b_b79k")
    assert parse_encoder_spec("open_clip:hf-hub:org/repo") == ("open_clip", "hf-hub:org/repo", None)
    assert parse_encoder_spec("open_clip:RN50@/x/y.pt") == ("open_clip", "RN50", "/x/y.pt")
    assert "open_clip" in list_encoders()
    with pytest.raises(ValueError, match="Unknown encoder 'clipx'; valid encoders: .*open_clip"):
        create_encoder("clipx")
    with pytest.raises(ValueError, match="Unknown open_clip model"):
        create_encoder("open_clip:NotAModel@random")


def test_missing_weights_offline_gives_one_clear_error(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path))  # empty hub cache
    with pytest.raises(EncoderLoadError) as info:
        create_encoder("open_clip:ViT-B-32@laion2b_s34b_b79k", device="cpu")
    msg = str(info.value)
    assert "ViT-B-32" in msg and "laion2b_s34b_b79k" in msg and "HF_HUB_OFFLINE" in msg and "local checkpoint" in msg
    with pytest.raises(EncoderLoadError, match="does not exist"):
        create_encoder(f"open_clip:ViT-B-32@{tmp_path}/missing.pt")


def test_open_clip_embeddings_and_cache(random_clip, tmp_path, caplog):
    paths = write_images(tmp_path, 5)
    calls = []
    original = random_clip.encode_image_batch

    def counting(batch):
        calls.append(len(batch))
        return original(batch)

    random_clip.encode_image_batch = counting
    try:
        first = embed_images(random_clip, paths, cache_dir=tmp_path / "cache", batch_size=2)
        assert first.embeddings.shape == (5, 512) and first.embeddings.dtype == np.float32
        assert np.allclose(np.linalg.norm(first.embeddings, axis=1), 1, atol=1e-5)
        assert sum(calls) == 5 and first.n_encoded == 5
        calls.clear()
        second = embed_images(random_clip, paths, cache_dir=tmp_path / "cache", batch_size=2)
        assert calls == [] and second.n_encoded == 0
        assert np.array_equal(first.embeddings, second.embeddings)
        # a copy of an image with the same content is not encoded again
        dup = tmp_path / "copy.png"
        dup.write_bytes(open(paths[0], "rb").read())
        third = embed_images(random_clip, paths + [str(dup)], cache_dir=tmp_path / "cache")
        assert calls == [] and np.array_equal(third.embeddings[5], first.embeddings[0])
        # and the run says so: a sixth user's bar counted 299 of their 300 images without a word
        with caplog.at_level("INFO", logger="lbee"):
            embed_images(random_clip, [str(dup), *paths], cache_dir=tmp_path / "cache2")
        said = f"({dup.parent.name}/copy.png = {'/'.join(Path(paths[0]).parts[-2:])})"  # folders too (a twelfth user)
        assert f"1 image(s) are byte-identical to another image {said}" in caplog.text
        assert sum(calls) == 5
    finally:
        random_clip.encode_image_batch = original
    text = embed_sentences(random_clip, ["an image of a dog", "an image taken at night"], cache_dir=tmp_path / "cache")
    assert text.shape == (2, 512) and np.allclose(np.linalg.norm(text, axis=1), 1, atol=1e-5)


def test_interrupted_run_resumes(random_clip, tmp_path, monkeypatch):
    import lbee.encoders.embedding as emb_mod

    monkeypatch.setattr(emb_mod, "FLUSH_EVERY", 2)
    paths = write_images(tmp_path, 6)
    original = random_clip.encode_image_batch
    seen = []

    def dying(batch):
        if len(seen) == 2:
            raise KeyboardInterrupt
        seen.append(len(batch))
        return original(batch)

    random_clip.encode_image_batch = dying
    try:
        with pytest.raises(KeyboardInterrupt):
            embed_images(random_clip, paths, cache_dir=tmp_path / "c", batch_size=2)
    finally:
        random_clip.encode_image_batch = original
    resumed = embed_images(random_clip, paths, cache_dir=tmp_path / "c", batch_size=2)
    assert resumed.n_encoded == 2  # 4 of 6 were kept from the interrupted run


def test_corrupt_and_missing_images(random_clip, tmp_path):
    paths = write_images(tmp_path, 3)
    bad = tmp_path / "bad.jpg"
    bad.write_bytes(b"\xff\xd8\xff garbage")
    trunc = tmp_path / "trunc.png"
    trunc.write_bytes(open(paths[0], "rb").read()[:60])
    allp = paths + [str(bad), str(trunc), str(tmp_path / "nope.png")]
    with pytest.warns(UserWarning, match="Skipped 3 unreadable"):
        res = embed_images(random_clip, allp, cache_dir=tmp_path / "c")
    assert res.ok.tolist() == [True, True, True, False, False, False]
    assert res.embeddings.shape[0] == 3 and len(res.failures) == 3
    with pytest.raises((ValueError, OSError)):
        embed_images(random_clip, allp, cache_dir=tmp_path / "c2", strict=True)


def test_embedding_reports_its_progress_without_a_terminal(random_clip, tmp_path):
    """A new user's `lbee submit` sat at "embedding images 0% (0 of 300)" for the whole embedding: a job has no
    terminal, so its tqdm bar was disabled, and the count reported to the job was the disabled bar's (always 0)."""
    from lbee.progress import listening

    paths = []
    for i in range(6):
        p = tmp_path / f"{i}.png"
        Image.fromarray(np.full((16, 16, 3), 40 * i, np.uint8)).save(p)
        paths.append(str(p))
    calls = []
    with listening(lambda phase, done, total: calls.append((phase, done, total))):
        embed_images(random_clip, paths, cache_dir=tmp_path / "c", batch_size=2, num_workers=0, progress=False)
    counts = [done for phase, done, total in calls if phase == "embedding images"]
    assert counts == [0, 2, 4, 6], calls
    # the sentences' phase ends at N of N, from the encoder and from the cache (a fifth user's job sat at
    # "embedding sentences 0% (0 of 47)" until it was done)
    for _ in range(2):
        calls.clear()
        with listening(lambda phase, done, total: calls.append((phase, done, total))):
            embed_sentences(random_clip, ["a dog", "a cat", "a car"], cache_dir=tmp_path / "c")
        assert calls == [("embedding sentences", 0, 3), ("embedding sentences", 3, 3)], calls


def test_a_cache_that_cannot_be_written_is_a_warning_not_the_run_s_end(random_clip, tmp_path, monkeypatch):
    """Tenth sweep, lower 5: a full embedding-cache disk ended the run with a bare `OSError: [Errno 28]`, though the
    embeddings were computed and the cache is only a cache."""
    import errno

    from lbee.io.cache import EmbeddingCache

    def full(self, *args):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(EmbeddingCache, "put_images", full)
    monkeypatch.setattr(EmbeddingCache, "put_sentences", full)
    paths = []
    for i in range(3):
        p = tmp_path / f"{i}.png"
        Image.fromarray(np.full((16, 16, 3), 60 * i, np.uint8)).save(p)
        paths.append(str(p))
    with pytest.warns(UserWarning, match="could not be written .*No space left on device.*kept"):
        res = embed_images(random_clip, paths, cache_dir=tmp_path / "c", batch_size=2, num_workers=0)
    assert res.embeddings.shape[0] == 3
    with pytest.warns(UserWarning, match="could not be written"):
        assert embed_sentences(random_clip, ["a dog"], cache_dir=tmp_path / "c").shape[0] == 1


def test_sentences_are_embedded_in_reported_chunks_with_the_same_result(random_clip, tmp_path, monkeypatch):
    """Tenth sweep, lower 11: a grammar of 152,100 sentences sat at "embedding sentences 0 %" for minutes."""
    import lbee.encoders.embedding as embedding
    from lbee.progress import listening

    sentences = [f"a photo of thing {i}" for i in range(5)]
    whole = embed_sentences(random_clip, sentences, use_cache=False)
    monkeypatch.setattr(embedding, "SENTENCE_CHUNK", 2)
    calls = []
    with listening(lambda phase, done, total: calls.append((done, total))):
        chunked = embed_sentences(random_clip, sentences, use_cache=False)
    assert calls == [(0, 5), (2, 5), (4, 5), (5, 5)] and np.allclose(chunked, whole, atol=1e-6)
