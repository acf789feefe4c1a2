"""The twelfth hostile-input sweep's findings, each reproduced and fixed (sweep report: 3 security, 4 hang, 1 silently
wrong, 7 lower)."""

import numpy as np
import pytest

from lbee.io.confinement import confined_to


def _outside(tmp_path):
    root, outside = tmp_path / "root", tmp_path / "secret"
    root.mkdir()
    outside.mkdir()
    (outside / "passwd").write_text("root:x:0:0:hunter2-password\n")
    return root, outside / "passwd"


def test_a_row_ids_sidecar_swapped_for_a_link_after_its_check_is_never_read(tmp_path, monkeypatch):
    """S1: the ids.txt beside embeddings was checked, then read by path; a flip race quoted an outside file's first
    line in the job error (3 of 25 jobs). It is now read through the descriptor checked."""
    import lbee.io.confinement as confinement
    from lbee.io.row_ids import check_row_ids

    root, secret = _outside(tmp_path)
    emb = root / "e.npy"
    np.save(emb, np.eye(1, 4))
    (root / "e.ids.txt").write_text("a.png\n")
    checked = confinement.sidecar

    def then_swapped(path, **kw):  # the race, made certain: the name leads out right after its check
        found = checked(path, **kw)
        if found is not None:
            found.unlink()
            found.symlink_to(secret)
        return found

    monkeypatch.setattr(confinement, "sidecar", then_swapped)
    with confined_to(root), pytest.raises(ValueError, match="leads outside the data root") as err:
        check_row_ids(emb, 1, ["b.png"], "image_embeddings", against="the predictions table 'p.csv'")
    assert "hunter2" not in str(err.value) and "root:x" not in str(err.value)


def test_a_provenance_record_swapped_for_a_link_after_its_check_is_never_read(tmp_path, monkeypatch):
    """S1, the same pattern in the provenance reader."""
    import lbee.io.confinement as confinement
    from lbee.io.provenance import read_provenance

    root, secret = _outside(tmp_path)
    emb = root / "e.npy"
    np.save(emb, np.eye(2, 4))
    (root / "e.provenance.json").write_text('{"kind": "image_embeddings"}')
    checked = confinement.sidecar

    def then_swapped(path, **kw):
        found = checked(path, **kw)
        if found is not None:
            found.unlink()
            found.symlink_to(secret)
        return found

    monkeypatch.setattr(confinement, "sidecar", then_swapped)
    with confined_to(root), pytest.raises(ValueError, match="leads outside the data root") as err:
        read_provenance(emb, "image_embeddings")
    assert "hunter2" not in str(err.value)


def test_a_report_thumbnail_is_never_made_from_a_file_outside_the_root(tmp_path):
    """S2: thumbnails were opened by the images' paths with no root check; an image replaced by a link out after
    the embedding put the outside image into report.html (75 of 95 thumbnails)."""
    from PIL import Image

    from lbee.reports.thumbnails import ThumbnailCache

    root, _ = _outside(tmp_path)
    secret = tmp_path / "secret" / "red.png"
    Image.new("RGB", (32, 32), (255, 0, 0)).save(secret)
    inside = root / "ok.png"
    Image.new("RGB", (32, 32), (0, 0, 255)).save(inside)
    swapped = root / "swapped.png"
    swapped.symlink_to(secret)
    thumbs = ThumbnailCache(tmp_path / "cache")
    with confined_to(root):
        assert thumbs.data_uri(inside).startswith("data:image/jpeg;base64,")
        assert thumbs.data_uri(swapped) is None
    assert thumbs.data_uri(swapped) is not None  # on the command line (no root) a link is the user's own file
