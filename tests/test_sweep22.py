"""Sweep 22 (on 54dd322): a timm source spec read a file anywhere (S1), a model spec built gigabytes before its
weights were checked (H3), '/proc/self/fd/..' spelt a kernel file past the check (H1), the Spotlight export hashed a
kernel file (H2), and three lower ones."""

import datetime
import os

import pytest


@pytest.mark.parametrize("arch", ["local-dir:/etc", "hf-hub:evil/repo", "resnet18/../x", "a b"])
def test_a_timm_or_torchvision_spec_names_an_architecture_never_a_source(arch, tmp_path):
    """S1: 'timm:local-dir:PATH' read PATH/config.json anywhere and the job's error quoted it."""
    from lbee.scoring.classifier import check_model_spec, load_classifier

    for prefix in ("timm:", "torchvision:"):
        with pytest.raises(ValueError, match="an architecture is a name of letters"):
            check_model_spec(prefix + arch)
    (tmp_path / "config.json").write_text('{"architecture": "TOPSECRET", "num_classes": 2}')
    with pytest.raises(ValueError) as err:
        load_classifier(f"timm:local-dir:{tmp_path}")
    assert "TOPSECRET" not in str(err.value)
    with pytest.raises(ValueError, match="Unknown timm architecture 'no_such_net'"):
        load_classifier("timm:no_such_net")


def test_a_model_is_checked_against_its_weights_before_it_is_built(tmp_path, monkeypatch, registry_builds):
    """H3: 'timm:vit_giant_patch14_clip_224' with a resnet18 state dict took 4.9 GB before "lacks 489 parameters"."""
    import torch
    import torchvision

    import lbee.scoring.classifier as classifier

    w = tmp_path / "w.pt"
    torch.save(torchvision.models.resnet18(num_classes=2).state_dict(), w)
    built = registry_builds
    with pytest.raises(ValueError, match=r"needs 343,200,776: it cannot be its state dict"):
        classifier.load_classifier("torchvision:vit_b_16", w, num_classes=2)
    assert built == ["meta"]  # never allocated
    with pytest.raises(ValueError, match=r"'fc.weight' has shape \(2, 512\) in the file and \(3, 512\)"):
        classifier.load_classifier("torchvision:resnet18", w, num_classes=3)
    built.clear()
    model = classifier.load_classifier("torchvision:resnet18", w, num_classes=2)
    assert built == ["meta", "cpu"] and not model.training
    state = torch.load(w, weights_only=True)
    assert torch.equal(model.state_dict()["fc.weight"], state["fc.weight"])
    # without weights, a registry architecture is built up to a bound of parameters
    monkeypatch.setattr(classifier, "MAX_UNWEIGHTED_PARAMETERS", 1_000_000)
    built.clear()
    with pytest.raises(ValueError, match=r"has 11,177,538 parameters; without `weights` at most 1,000,000"):
        classifier.load_classifier("torchvision:resnet18", num_classes=2)
    assert built == ["meta"]


@pytest.mark.skipif(not os.path.exists("/proc/self/fd"), reason="needs /proc")
def test_a_kernel_file_is_refused_however_its_path_is_spelt(tmp_path):
    """H1: '/proc/self/fd/../../../proc/kmsg' skipped the kernel-file check and a read of it never ended."""
    from lbee._files import NotRegularFile, check_regular_file, read_text_file

    for path in ("/proc/self/fd/../../../proc/self/status", "/proc/self/fd/../status"):
        with pytest.raises(NotRegularFile, match="is a system file"):
            read_text_file(path, "Row ids")
    r, w = os.pipe()
    try:
        with pytest.raises(NotRegularFile, match="FIFO"):  # a descriptor of this process: what it is, said
            check_regular_file(f"/proc/self/fd/{r}", "Row ids")
    finally:
        os.close(r)
        os.close(w)
    f = tmp_path / "ids.txt"
    f.write_text("a\n")
    fd = os.open(f, os.O_RDONLY)
    try:
        check_regular_file(f"/proc/self/fd/{fd}", "Row ids")  # a pinned file's descriptor reads as the file
    finally:
        os.close(fd)


def test_the_spotlight_export_hashes_no_kernel_file_and_finds_the_run_s_id_column(tmp_path):
    """H2: a run's images.parquet naming /proc/kmsg blocked the export; L1: a predictions.csv whose id column is
    'path' (or none) was an internal error."""
    import json

    import numpy as np
    import pandas as pd

    from lbee.reports.spotlight import _image_file, run_embeddings

    assert _image_file({"path": "/proc/self/status", "image": "x.png"}, tmp_path) is None
    (tmp_path / "explanation.json").write_text(json.dumps({"encoder": {"encoder": "open_clip", "model": "m"}}))
    table = pd.DataFrame({"image": ["/proc/self/status"], "image_id": ["a.png"]})
    emb, why = run_embeddings(tmp_path, table, cache_dir=tmp_path / "cache")
    assert emb is None and "is a system file" in why
    inputs = tmp_path / "inputs"
    inputs.mkdir()
    np.save(inputs / "image_embeddings.npy", np.ones((1, 4), np.float32))
    for header in ("foo\n1\n", "path,prob\na.png,0.5\n"):
        (inputs / "predictions.csv").write_text(header)
        emb, why = run_embeddings(tmp_path, table, cache_dir=tmp_path / "cache")
        assert emb is None and isinstance(why, str)  # said, never a KeyError


def test_lower_ones_dates_and_torch_s_unformatted_messages():
    """L3: a YAML timestamp as a name was shown as datetime.datetime(...); L2: torch's 'expected %ld got %ld'."""
    from lbee._validation import check_name_text
    from lbee.scoring.classifier import load_error_line

    stamp = datetime.datetime(2001, 12, 14, 21, 59, 43, tzinfo=datetime.timezone(datetime.timedelta(hours=-5)))
    with pytest.raises(ValueError) as err:
        check_name_text(stamp, "name")
    assert "2001-12-14T21:59:43-05:00" in str(err.value) and "datetime.datetime" not in str(err.value)
    line = load_error_line(RuntimeError("storage has wrong byte size: expected %ld got %ld4938281073741824"))
    assert line == "storage has wrong byte size"
