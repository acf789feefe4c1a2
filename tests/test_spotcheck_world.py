import numpy as np
import pytest

from lbee.spotcheck import (
    ATTRIBUTES,
    Blindspot,
    DatasetDefinition,
    UnsatisfiableError,
    relevance_matrix,
    render,
    sample_blindspots,
    sample_dataset,
    spotcheck_sentences,
)
from lbee.spotcheck._render import COLORS
from lbee.spotcheck._world import _unambiguous


def test_dataset_sampling_follows_appendix_a2():
    rng = np.random.default_rng(0)
    for _ in range(200):
        d = sample_dataset(rng)
        assert d.layers[:2] == ["background", "square"] and 1 <= len(d.layers) - 2 <= 3
        assert 6 <= len(d.rollable) <= 8 and len(set(d.rollable)) == len(d.rollable)
        for layer in d.layers[1:]:
            assert (layer, "presence") in d.rollable
        assert all(a[0] in d.layers for a in d.rollable)


def test_blindspots_follow_appendix_a3():
    rng = np.random.default_rng(1)
    for _ in range(200):
        d = sample_dataset(rng)
        bs = sample_blindspots(rng, d)
        assert 1 <= len(bs) <= 3
        for b in bs:
            t = b.as_dict()
            assert 5 <= len(b.triplets) <= 7
            for layer, attr in t:
                assert (layer, attr) in d.rollable or (layer, attr) == ("background", "position")
                if layer != "background" and attr != "presence":  # feasibility constraint
                    assert t[(layer, "presence")] == "true"
            if ("background", "position") in t:
                assert t[("square", "presence")] == "true"
        for i in range(len(bs)):
            for j in range(i + 1, len(bs)):
                assert _unambiguous(bs[i], bs[j])  # ambiguity constraint


def test_same_seed_same_world():
    a = np.random.default_rng(5)
    b = np.random.default_rng(5)
    da, db = sample_dataset(a), sample_dataset(b)
    assert da == db and sample_blindspots(a, da) == sample_blindspots(b, db)


def test_unsatisfiable_settings_name_the_constraint():
    rng = np.random.default_rng(0)
    with pytest.raises(UnsatisfiableError, match="n_rollable"):
        sample_dataset(rng, n_other_layers=0, n_rollable=9)
    tiny = DatasetDefinition(["background", "square", "circle"], [("square", "presence"), ("circle", "presence")])
    with pytest.raises(UnsatisfiableError, match="more rollable attributes"):
        sample_blindspots(rng, tiny, n_blindspots=1)
    d = DatasetDefinition(
        ["background", "square", "circle"],
        [
            ("square", "presence"),
            ("circle", "presence"),
            ("circle", "color"),
            ("background", "color"),
            ("background", "texture"),
            ("square", "color"),
        ],
    )
    with pytest.raises(UnsatisfiableError, match="ambiguity constraints"):
        sample_blindspots(rng, d, n_blindspots=3, max_tries=2)


def test_render_background_objects_and_position():
    rng = np.random.default_rng(0)
    d = DatasetDefinition(["background", "square", "rectangle", "circle", "text"], list(ATTRIBUTES))
    for _ in range(50):
        attrs = d.sample_attributes(rng)
        img, out = render(attrs, rng, 64)
        assert img.shape == (64, 64, 3) and img.dtype == np.uint8
        has_square = attrs[("square", "presence")] == "true"
        assert (out[("background", "position")] == "none") == (not has_square)
    attrs = {k: v[0] for k, v in ATTRIBUTES.items()}  # all defaults: white, nothing present
    img, out = render(attrs, rng, 32)
    assert (img == 255).all() and out[("background", "position")] == "none"
    attrs[("square", "presence")] = "true"
    attrs[("square", "color")] = "orange"
    for side in ("above", "below"):
        img, out = render(attrs, rng, 64, position=side)
        rows = np.flatnonzero((img == COLORS["orange"]).all(-1).any(1))
        centre = (rows.min() + rows.max()) / 2  # official rule: the square's centre against the image centre
        assert out[("background", "position")] == side and (centre < 31.5) == (side == "above")
    # unforced, squares go anywhere (the official placement): some straddle the centre line
    straddle = 0
    for _ in range(100):
        img, out = render(attrs, rng, 64)
        rows = np.flatnonzero((img == COLORS["orange"]).all(-1).any(1))
        straddle += rows.min() < 32 <= rows.max()
        assert out[("background", "position")] == ("above" if (rows.min() + rows.max()) / 2 < 31.5 else "below")
    assert straddle > 0


def test_render_follows_the_official_look():
    """Grey 200, noise to 100 on 10 % of the pixels, black stripes, text option makes text larger."""
    attrs = {k: v[0] for k, v in ATTRIBUTES.items()}
    attrs.update({("background", "color"): "grey", ("background", "texture"): "noise"})
    img, _ = render(attrs, np.random.default_rng(0), 64)
    grey = (img == 200).all(-1).mean()
    noisy = (img == 100).all(-1).mean()
    assert grey + noisy == 1 and 0.07 < noisy < 0.13
    attrs = {k: v[0] for k, v in ATTRIBUTES.items()}
    attrs.update({("rectangle", "presence"): "true", ("rectangle", "texture"): "stripes"})
    img, _ = render(attrs, np.random.default_rng(0), 64)
    assert (img == 0).all(-1).any() and (img == COLORS["blue"]).all(-1).any()
    sizes = {}
    for value in ATTRIBUTES[("text", "size")]:
        attrs = {k: v[0] for k, v in ATTRIBUTES.items()}
        attrs.update({("text", "presence"): "true", ("text", "size"): value})
        _, _, mask = render(attrs, np.random.default_rng(0), 64, return_mask=True)
        sizes[value] = mask.sum()
    assert sizes["large"] > 3 * sizes["normal"]
    big = render(attrs, np.random.default_rng(3), 224)[0]
    assert big.shape == (224, 224, 3)


def test_two_squares_do_not_overlap():
    attrs = {k: v[0] for k, v in ATTRIBUTES.items()}
    attrs.update(
        {
            ("square", "presence"): "true",
            ("square", "number"): "2",
            ("circle", "presence"): "true",
            ("rectangle", "presence"): "true",
            ("text", "presence"): "true",
        }
    )
    rng = np.random.default_rng(0)
    for _ in range(20):
        img, _ = render(attrs, rng, 64)
        blue = (img == COLORS["blue"]).all(-1)
        # connected blue regions: four objects (squares, rectangle, circle) + text glyph pieces, never merged
        from scipy.ndimage import label

        _, n = label(blue)
        assert n >= 4


def test_relevance_is_exact():
    sents = spotcheck_sentences()
    texts = [s for s, _, _ in sents]
    conds = [c for _, c, _ in sents]
    base = {k: v[0] for k, v in ATTRIBUTES.items()}
    base[("background", "position")] = "none"
    img = dict(base)
    img.update({("circle", "presence"): "true", ("circle", "color"): "orange", ("background", "color"): "grey"})
    rel = relevance_matrix([base, img], conds)
    j = texts.index("An image with an orange circle")
    assert rel[:, j].tolist() == [False, True]
    assert rel[:, texts.index("An image on a grey background")].tolist() == [False, True]
    assert rel[:, texts.index("An image with a square")].tolist() == [False, False]
    assert rel[:, texts.index("An image on a white background")].tolist() == [True, False]


def test_sentence_file_matches_generator():
    from lbee.io.sentences import load_sentence_set

    assert list(load_sentence_set("spotcheck").sentences) == [s for s, _, _ in spotcheck_sentences()]


def test_blindspot_membership_and_words():
    b = Blindspot([("circle", "presence", "true"), ("circle", "color", "orange"), ("background", "position", "above")])
    assert b.describe() == "circle present, circle orange, square above the centre"
    attrs = {("circle", "presence"): "true", ("circle", "color"): "orange", ("background", "position"): "above"}
    assert b.contains(attrs) and not b.contains({**attrs, ("circle", "color"): "blue"})


def test_render_never_drops_an_object(monkeypatch):
    """A crowded image is redrawn, never returned without an object its attributes promise (Γ stays exact)."""
    from scipy.ndimage import label

    attrs = {k: v[0] for k, v in ATTRIBUTES.items()}
    attrs.update({(layer, "presence"): "true" for layer in ("square", "rectangle", "circle", "text")})
    attrs.update({("square", "number"): "2", ("text", "size"): "large", ("text", "color"): "orange"})
    rng = np.random.default_rng(0)
    for _ in range(200):
        img, _, mask = render(attrs, rng, 64, position="below", return_mask=True)
        assert (img == COLORS["orange"]).all(-1).any()  # the large orange text is there
        assert label((img == COLORS["blue"]).all(-1))[1] >= 4  # two squares, the rectangle and the circle
    import lbee.spotcheck._render as r

    monkeypatch.setattr(r, "_place", lambda *a: None)  # nowhere to put anything: an error, not a short image
    with pytest.raises(ValueError, match="do not fit"):
        render(attrs, rng, 64)


def _gate_world(groups):
    """An EC of val images only, blindspot 'square present, circle absent'; ``groups`` is a list of
    (square, circle, n, n_correct): n images with that presence, the model right on the first n_correct."""
    from lbee.spotcheck import Blindspot, DatasetDefinition, ExperimentalConfiguration

    attrs, correct = [], []
    for square, circle, n, n_correct in groups:
        for i in range(n):
            attrs.append({("square", "presence"): square, ("circle", "presence"): circle})
            correct.append(i < n_correct)
    dataset = DatasetDefinition(["background", "square", "circle"], [("square", "presence"), ("circle", "presence")])
    blindspot = Blindspot([("square", "presence", "true"), ("circle", "presence", "false")])
    ec = ExperimentalConfiguration(
        dataset, [blindspot], {"val": np.zeros((len(attrs), 8, 8, 3), np.uint8)}, {"val": attrs}, {}, 0, 8
    )
    truth = ec.true_labels("val")
    predicted = np.where(correct, truth, 1 - truth)
    probs = np.stack([1.0 - predicted, predicted], axis=1).astype(float)
    return ec, probs


@pytest.mark.parametrize(
    ("neighbour", "passes"),
    [
        ((20, 18), True),  # right on the neighbour 'square present, circle present': exactly the planted blindspot
        ((20, 2), False),  # wrong on most of it: the model fails wherever a square is, a broader blindspot
        ((3, 0), True),  # three images wrong: not significant evidence (p = 0.125), no rejection by chance
    ],
)
def test_the_gate_rejects_a_blindspot_broader_than_planted(monkeypatch, neighbour, passes):
    from lbee.spotcheck import _classifier

    n, n_correct = neighbour
    ec, probs = _gate_world([("true", "false", 20, 0), ("true", "true", n, n_correct), ("false", "true", 400, 400)])
    monkeypatch.setattr(_classifier, "predict", lambda model, images: (probs, None))
    v = _classifier.verify_blindspots(ec)
    # outside the blindspot and inside it, the paper's two checks pass in every case
    assert v["accuracy_outside"] == pytest.approx((n_correct + 400) / (n + 400)) and v["accuracy_outside"] >= 0.9
    assert v["accuracy_inside"] == [0.0]
    assert _classifier.verify_blindspots(ec, min_neighbour=0.0)["passed"]
    flips = {nb["flipped"]: nb for nb in v["neighbours"]}
    assert set(flips) == {"circle present"}  # 'square absent, circle absent' has no image here
    assert flips["circle present"]["n"] == n and flips["circle present"]["accuracy"] == pytest.approx(n_correct / n)
    assert v["passed"] is passes
    reason = _classifier.verification_failure(v)
    assert ("where blindspot 0 holds but for circle present: 0.100 on 20 images" in reason) is not passes
