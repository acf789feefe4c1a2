"""Sweep 32av's blocking cases: Ray's 'local' and 'auto' addresses, the SpotCheck encoder's caveat kept with the
embeddings and not lifted by another user's ec.json, and true-label columns that slipped past the look-alike check."""

import os

import pytest


def test_ray_local_is_lbees_own_private_ray(monkeypatch):
    """B1: `--ray-address local` started Ray in the shared TMPDIR/ray, a folder another user owned."""
    import lbee.ray_pool as rp

    calls = []

    class FakeRay:
        @staticmethod
        def is_initialized():
            return False

        @staticmethod
        def init(**kwargs):
            calls.append(kwargs)

    monkeypatch.setattr(rp, "import_ray", lambda: FakeRay)
    monkeypatch.setattr(rp, "_private_local_ray", lambda: {"_temp_dir": "private"})
    for address in (None, "", "local"):
        rp.ensure_ray(address)
        assert calls[-1]["address"] == "local" and calls[-1]["_temp_dir"] == "private"
    rp.ensure_ray("10.0.0.5:6379")  # a cluster the user named: theirs, as given
    assert calls[-1]["address"] == "10.0.0.5:6379" and "_temp_dir" not in calls[-1]


def test_ray_auto_reads_only_an_address_file_no_other_user_can_change(tmp_path, monkeypatch):
    """B1: `--ray-address auto` joined the cluster another user wrote into TMPDIR/ray/ray_current_cluster."""
    import ray._private.utils as ray_utils

    from lbee.ray_pool import _joined_address

    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    folder = tmp_path / "ray"
    folder.mkdir(mode=0o755)
    os.chmod(folder, 0o755)
    path = folder / "ray_current_cluster"
    monkeypatch.setattr(ray_utils, "get_ray_address_file", lambda temp_dir: str(path))
    with pytest.raises(ValueError, match="no cluster address in .*ray_current_cluster"):
        _joined_address("auto")
    path.write_text("127.0.0.1:6379\n")
    os.chmod(path, 0o644)
    assert _joined_address("auto") == "127.0.0.1:6379"
    os.chmod(path, 0o666)
    with pytest.raises(ValueError, match="another user can change it.* give the cluster's address"):
        _joined_address("auto")
    os.chmod(path, 0o644)
    os.chmod(folder, 0o777)  # a folder anyone may write in: the file can be swapped
    with pytest.raises(ValueError, match="is not safe"):
        _joined_address("auto")
    monkeypatch.setenv("RAY_ADDRESS", "10.0.0.7:6379")  # the user's own environment decides
    assert _joined_address("auto") == "auto"
