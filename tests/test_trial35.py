"""Trial 35 (blister packs): a lead's images from the library, below the confirmation floor."""

import warnings

import numpy as np


def test_groups_give_each_lead_s_images_when_nothing_could_be_confirmed():
    """With 300 images `confirmed()` is [] and `groups()` had no images: the trial dug them out of
    `result.main.explanations[...].hard_clusters[i].indices`. Each group now lists its images' ids."""
    import lbee

    rng = np.random.default_rng(0)
    n, d = 300, 16
    X = rng.normal(size=(n, d))
    inside = rng.random(n) < 0.15
    X[inside, 0] += 4.0
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    failed = np.where(inside, rng.random(n) < 0.9, rng.random(n) < 0.03)
    phi = np.where(failed, rng.uniform(0.0, 0.3, n), rng.uniform(0.7, 1.0, n))
    ids = [f"pack_{i:03d}.png" for i in range(n)]
    result = lbee.audit(
        X, np.eye(d)[:8], sentences=[f"s{i}" for i in range(8)], confidence=phi, performance=1.0 * ~failed,
        tau=0.5, image_ids=ids,
    )  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert result.confirmed() == []  # below the floor: nothing tested
    groups = result.groups()
    assert groups and all(len(g["images"]) == g["size"] for g in groups)
    listed = [i for g in groups for i in g["images"]]
    assert len(listed) == len(set(listed)) and set(listed) <= set(ids)  # each image in one group at most
    first = groups[0]["images"]  # the most harmful lead is the planted failure's
    assert sum(inside[int(i[5:8])] for i in first) >= 0.8 * len(first)


def test_a_misspelt_random_tag_is_answered_with_random():
    """`--encoder open_clip:ViT-B-32@randon` listed every pretrained tag, but not @random."""
    import pytest

    from lbee.encoders._base import EncoderLoadError
    from lbee.encoders._open_clip import _check_weights_reachable

    open_clip = pytest.importorskip("open_clip")
    with pytest.raises(EncoderLoadError, match=r"'randon'.*laion2b_s34b_b79k.*Did you mean @random"):
        _check_weights_reachable(open_clip, "ViT-B-32", "randon")
    with pytest.raises(EncoderLoadError, match=r"\(or @random: random weights\)"):
        _check_weights_reachable(open_clip, "ViT-B-32", "laion9")
