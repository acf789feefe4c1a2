"""Ray plumbing shared by the distributed engines (``lbee embed --engine ray``, ``lbee vqa --engine ray``).

Ray is optional (the ``ray`` extra) and imported only here, lazily.
Work goes to a pool of actors, each holding one model: one GPU per actor when
the cluster has GPUs, one CPU otherwise.
"""

from __future__ import annotations

from .extras import import_extra


def import_ray():
    """``import ray``, or an ImportError naming the install command."""
    return import_extra("ray", "ray", needed_for="The Ray engine")


def ensure_ray(address=None):
    """Connect to Ray: ``address`` ('auto' = the cluster started by ``ray start --head``), else a local one.

    An already initialised Ray (a test's ``ray.init(num_cpus=2)``) is reused. Without ``address`` a new local Ray
    is started ('local'): ``address=None`` joins the cluster that ``TMPDIR/ray/ray_current_cluster`` names, a file
    another user can plant in a shared TMPDIR, and sends them the images and the model (sweep 32ar B3).
    """
    ray = import_ray()
    if not ray.is_initialized():
        # 'local' is a new local Ray too: Ray's shared TMPDIR/ray held its session, another user's folder (sweep 32av)
        local = address in (None, "", "local")
        private = _private_local_ray() if local else {}
        ray.init(
            address="local" if local else _joined_address(address),
            include_dashboard=False,
            log_to_driver=False,
            logging_level="ERROR",
            **private,
        )
    return ray


def _joined_address(address):
    """The cluster ``address`` names; for 'auto', read only from a file no other user can change.

    Ray's 'auto' takes ``RAY_ADDRESS``, else the address in ``TMPDIR/ray/ray_current_cluster``, else any cluster
    it sees running: another user who wrote that file, or ran a cluster, would be sent the images and the model
    (sweep 32av B1). Here the file is read where its folder and itself are this user's or root's alone, and 'auto'
    is refused otherwise.
    """
    import os
    import stat
    import tempfile

    from .io.folder_trust import untrusted_folder

    if address != "auto" or os.environ.get("RAY_ADDRESS"):  # an address given, or the user's own environment's
        return address
    try:
        from ray._private.utils import get_ray_address_file

        path = get_ray_address_file(None)
    except (ImportError, AttributeError):  # another Ray: its documented default place
        path = os.path.join(tempfile.gettempdir(), "ray", "ray_current_cluster")
    give = "give the cluster's address (--ray-address HOST:PORT) or set RAY_ADDRESS"
    found = untrusted_folder(os.path.dirname(path))
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        raise ValueError(
            f"--ray-address auto: no cluster address in {path} (`ray start --head` writes it); {give}."
        ) from None
    me = os.geteuid() if hasattr(os, "geteuid") else st.st_uid
    if found is None and not stat.S_ISREG(st.st_mode):
        found = (path, "not a regular file")
    elif found is None and (st.st_uid not in (me, 0) or st.st_mode & 0o022):
        found = (path, "another user can change it")
    if found is not None:
        raise ValueError(
            f"--ray-address auto reads the cluster's address from {path}, but {found[0]} is not safe ({found[1]}): "
            f"another user could send lbee's images and model to a cluster of theirs; {give}."
        )
    with open(path, encoding="utf-8") as fh:
        found_address = fh.read(4096).strip()
    if not found_address or found_address.lower() in ("auto", "local") or "\n" in found_address:
        # 'auto' there sent Ray to any cluster it sees running, 'local' to a shared session (sweep 32aw N3)
        raise ValueError(f"--ray-address auto: {path} holds no cluster address (HOST:PORT); {give}.")
    return found_address


# Ray's own sources of a cluster token; where the user set any of them, Ray's choice is theirs
_RAY_TOKEN_SOURCES = ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH")


def _private_local_ray():
    """The ``ray.init`` arguments that keep lbee's own local Ray to this user.

    Started plainly, Ray writes its cluster token to ``~/.ray/auth_token`` with the umask (0644: another user who
    read it was let into the cluster), and its session files (logs, sockets) into ``TMPDIR/ray``, a folder
    any user may change (sweep 32as). Here the token, where the user keeps none, lives in this process's
    environment only (Ray's workers inherit it), and the session in a new folder of this user's alone in a
    TMPDIR judged as for any temporary folder, removed when the process ends.
    """
    import atexit
    import os
    import secrets
    from pathlib import Path

    from .io.folder_trust import private_temporary_folder

    if not any(os.environ.get(k) for k in _RAY_TOKEN_SOURCES) and not (Path.home() / ".ray" / "auth_token").exists():
        os.environ["RAY_AUTH_TOKEN"] = secrets.token_hex(32)  # Ray's own length: 256 bits
    # a short name (mkdtemp's) keeps Ray's socket paths under the 107 bytes a Unix socket allows
    session = private_temporary_folder("lbee-ray-")

    def _end():
        import ray

        ray.shutdown()  # Ray's processes first: the folder holds their sockets and logs
        session.cleanup()

    atexit.register(_end)
    # Ray makes its own folder 0777: it goes inside the 0700 one, which keeps others out
    return {"_temp_dir": os.path.join(session.name, "r")}


def actor_pool(worker_cls, args, *, num_actors=None, gpus_per_actor=None, address=None):
    """A ``ray.util.ActorPool`` of ``worker_cls(*args)`` actors.

    Parameters
    ----------
    worker_cls : type
        A plain class; it becomes a Ray actor here.
    args : tuple
        Constructor arguments (picklable).
    num_actors : int, optional
        Default: one per GPU when the cluster has GPUs, else one per CPU.
    gpus_per_actor : float, optional
        Default 1 when the cluster has GPUs, else 0.
    address : str, optional
        Ray address for `ensure_ray`.
    """
    ray = ensure_ray(address)
    resources = ray.cluster_resources()
    gpus = float(resources.get("GPU", 0))
    if gpus_per_actor is None:
        gpus_per_actor = 1 if gpus >= 1 else 0
    if num_actors is None:
        num_actors = int(gpus // gpus_per_actor) if gpus_per_actor else int(resources.get("CPU", 1))
    num_actors = max(1, int(num_actors))
    # an actor the cluster cannot place never starts, and work handed to it waits forever: refused here
    slots = int(gpus // gpus_per_actor) if gpus_per_actor else int(resources.get("CPU", 1))
    if num_actors > max(slots, 1):
        what = f"{gpus:g} GPU(s) at {gpus_per_actor:g} each" if gpus_per_actor else f"{slots} CPU(s)"
        raise ValueError(
            f"{num_actors} actors asked, but the Ray cluster has room for {max(slots, 1)} ({what}); an actor it "
            f"cannot place never starts. Give --num-actors {max(slots, 1)} or fewer, or a larger cluster."
        )
    remote_cls = ray.remote(num_cpus=0 if gpus_per_actor else 1, num_gpus=gpus_per_actor)(worker_cls)
    actors = [remote_cls.remote(*args) for _ in range(num_actors)]
    return ray.util.ActorPool(actors), actors


def kill_actors(actors):
    """End the pool's actors (their models are released)."""
    ray = import_ray()
    for a in actors:
        ray.kill(a)
