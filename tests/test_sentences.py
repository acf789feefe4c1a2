import pytest

from lbee.io.sentences import list_sentence_sets, load_sentence_set, parse_sentences


def test_builtin_sets_load_with_headers():
    names = list_sentence_sets()
    assert {"urban_scenes", "imagenet", "nico", "conditions"} <= set(names)
    sizes = {n: len(load_sentence_set(n)) for n in names}
    assert 140 <= sizes["urban_scenes"] <= 180
    assert 1350 <= sizes["imagenet"] <= 1450
    assert 110 <= sizes["nico"] <= 150
    assert 170 <= sizes["conditions"] <= 230
    for n in names:
        assert "Built by" in load_sentence_set(n).header


def test_imagenet_starts_with_the_1000_classes_in_order():
    from torchvision.models import ResNet50_Weights

    classes = ResNet50_Weights.IMAGENET1K_V1.meta["categories"]
    s = load_sentence_set("imagenet").sentences
    assert s[0] == "An image of a tench" and s[1] == "An image of a goldfish"
    assert all(line.startswith("An image of") for line in s[:1000])
    assert not s[1000].startswith("An image of")
    assert s[999].endswith(classes[999])


def test_user_file_and_rejections(tmp_path):
    f = tmp_path / "mine.txt"
    f.write_text("# my set\n\nAn image of a cat\nAn image of a dog\n")
    s = load_sentence_set(f)
    assert s.sentences == ("An image of a cat", "An image of a dog") and s.header == "my set"
    f.write_text("A\nB\na\n")
    with pytest.raises(ValueError, match="line 3 repeats the sentence of line 1"):
        load_sentence_set(f)
    f.write_text("# only comments\n\n")
    with pytest.raises(ValueError, match="no sentence"):
        load_sentence_set(f)
    with pytest.raises(ValueError, match="Unknown sentence set 'nope'.*Built-in sets: conditions"):
        load_sentence_set("nope")
    assert parse_sentences("x\n  \ny")[0] == ["x", "y"]
