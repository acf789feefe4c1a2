"""What a file must be for lbee to read it whole: a regular file (not a FIFO or a device), of a bounded size."""

from __future__ import annotations

import errno
import os
import stat
from contextlib import contextmanager
from pathlib import Path


class NotRegularFile(ValueError):
    """A path that exists but is not a regular file where one is read (a folder, a FIFO, a device)."""


class PathEscape(ValueError):
    """A path that leads outside the data root."""


#: The data root every file must lie in when it is opened (``lbee serve``'s ``--root``; None on the command line),
#: then the other folders a job may read (its output folder, the cache, lbee's own files). Process-wide: a service
#: worker runs one job at a time. Set by `lbee.io.confinement.confined_to`.
ROOT: list = [None, ()]


def real_path(path, what="path"):
    """``os.path.realpath(path)``, steady when a link is swapped in or out while it is resolved.

    Python's ``realpath`` tests a component with ``lstat`` and then reads the link: a link replaced by a file in
    between raises a bare ``OSError: [Errno 22] Invalid argument``. That is retried, then said in words.
    """
    for _ in range(3):
        try:
            return os.path.realpath(path)
        except OSError as exc:
            if exc.errno != errno.EINVAL:
                raise
    raise ValueError(f"{what} {str(path)!r} kept changing while it was checked (a link swapped in and out).")


def check_regular_file(path, what):
    """Raise when ``path`` exists but is not a regular file, or leads outside the active data root.

    Read whole, a FIFO would block and a device (``/dev/zero``) never end; a missing path is left to the reader.
    Under ``lbee serve`` (`ROOT` set) the path is resolved when it is opened: a file or a folder swapped for a link
    out of the root after the job's paths were checked is refused here, before any byte of it is read.
    """
    real = Path(real_path(path, what))
    if ROOT[0] is not None:
        _check_inside(real, path, what)
    if real.parts[1:2] in (("proc",), ("sys",)) and not _unresolved_descriptor(real):
        # a kernel file says it holds 0 bytes and never ends (/proc/kmsg): no input of lbee's is one. Judged by
        # where the path leads, whatever it is spelt as ('/proc/self/fd/../../../proc/kmsg', sweep 22)
        raise NotRegularFile(f"{what} {str(path)!r} is a system file ({real}), not a regular file.")
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return
    if not stat.S_ISREG(mode):
        raise NotRegularFile(f"{what} {str(path)!r} is {file_kind(mode)}, not a regular file.")


def _unresolved_descriptor(real):
    """Whether ``real`` is a descriptor of this process that leads to no path (a pipe, a socket).

    Not a kernel file: what it is, the mode check after says.
    """
    parts = real.parts
    return len(parts) == 5 and parts[2] in ("self", str(os.getpid())) and parts[3] == "fd" and ":" in parts[4]


def may_read(real):
    """Whether a job may read ``real`` (a resolved path).

    Always without a data root; under one, inside the root or one of the other folders a job may read (its output
    folder, the cache, lbee's own files).
    """
    real = Path(real)
    return ROOT[0] is None or any(real == top or top in real.parents for top in (ROOT[0], *ROOT[1]))


def _check_inside(real, path, what):
    """Refuse ``real`` (the resolved ``path``) outside the data root and the other folders a job may read."""
    if not may_read(real):
        raise PathEscape(f"{what} {str(path)!r} leads outside the data root (through a symbolic link).")


@contextmanager
def pinned(path, what):
    """``path`` for reading, pinned to the file it names when it is checked.

    The file is opened once, checked through the descriptor (a regular file; under a data root, `ROOT`, inside the
    root by the path the kernel resolved), and read through ``/proc/self/fd/N``: a link or a FIFO swapped in after
    the check changes nothing, however often the reader opens it again (sweep 32t: a FIFO swapped onto a stored
    run's ``explanation.json`` blocked the server's threads for good; the command line's readers pin alike).
    Without ``/proc``, the path itself, checked as `check_regular_file` does.
    """
    check_regular_file(path, what)  # a FIFO is refused before it is opened (opening it would block)
    if not os.path.isdir("/proc/self/fd"):
        yield path
        return
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as exc:  # missing or unreadable now: said so, naming the path (never opened again by name: a
        # link or a FIFO put there an instant later would be followed)
        if ROOT[0] is None:  # on the command line the reader says it in its own words ("does not exist")
            yield path
            return
        raise type(exc)(exc.errno, f"{what} {str(path)!r} cannot be opened: {exc.strerror}") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise NotRegularFile(f"{what} {str(path)!r} is not a regular file.")
        if ROOT[0] is not None:
            _check_inside(Path(os.readlink(f"/proc/self/fd/{fd}")), path, what)
        yield f"/proc/self/fd/{fd}"
    finally:
        os.close(fd)


#: A file of more bytes than this with under 1/8 of them written is refused as sparse (`refuse_sparse`).
SPARSE_MIN_BYTES = 64 << 20


def refuse_sparse(path, what, name=None):
    """Refuse a large file that holds far fewer bytes on disk than its size: a sparse file, mostly never written.

    ``truncate -s 4G`` makes one in no time; read whole it costs its declared size in memory. A file of more than
    `SPARSE_MIN_BYTES` with less than an eighth of them on disk is refused before it is read. ``name``: how the
    message names the file (``path`` may be a pinned descriptor's).
    """
    try:
        st = os.stat(path)
    except OSError:
        return
    if st.st_size > SPARSE_MIN_BYTES and getattr(st, "st_blocks", st.st_size) * 512 < st.st_size / 8:
        raise ValueError(
            f"{what} {str(name or path)!r} is a sparse file: {st.st_size:,} bytes, of which "
            f"{st.st_blocks * 512:,} were ever written; expected a file written in full."
        )


#: The largest text file lbee reads whole: sentence files, their ``.conditions.tsv``, ``explanation.json``.
MAX_TEXT_BYTES = 1 << 30
#: The largest configuration lbee reads: a grammar, a ``lbee report`` config, a job entry.
MAX_CONFIG_BYTES = 16 << 20


def read_text_file(path, what, *, limit=MAX_TEXT_BYTES, encoding="utf-8-sig"):
    """The text of ``path``, refused unread when it is not a regular file or is over ``limit`` bytes.

    A sparse file can declare gigabytes it never wrote (an 8 GB ``explanation.json`` ended in a MemoryError).

    Raises
    ------
    ValueError
        Naming ``what`` and the file (`NotRegularFile` for a FIFO or device); OSError and UnicodeDecodeError
        as ``read_text`` raises them.
    """
    with pinned(path, what) as src:
        size = os.stat(src).st_size
        if size > limit:
            raise ValueError(f"{what} {str(path)!r} is {size:,} bytes; lbee reads one of at most {limit:,} bytes.")
        refuse_sparse(src, what, name=path)  # 1 GiB of holes took a worker to 2.6 GB
        # as written: a lone carriage return is no line break (universal newlines made 'cat\rdog' two classes,
        # sweep 32c); the line readers (`text_lines`) take '\r\n' as one
        with open(src, encoding=encoding, newline="") as fh:
            return fh.read()


def text_lines(text):
    r"""The lines of a text file as editors and ``wc -l`` count them: split at ``\n`` only (and a ``\r`` before it).

    ``str.splitlines`` also splits at U+2028, U+2029 and U+0085, which made one sentence two in silence (sweep 32);
    left inside a line, the readers refuse them by name.
    """
    return [line[:-1] if line.endswith("\r") else line for line in text.split("\n")]


def read_bytes_file(path, what, *, limit=MAX_TEXT_BYTES):
    """The bytes of ``path``, read as `read_text_file` reads text: pinned to the file checked, at most ``limit``."""
    with pinned(path, what) as src:
        size = os.stat(src).st_size
        if size > limit:
            raise ValueError(f"{what} {str(path)!r} is {size:,} bytes; lbee reads one of at most {limit:,} bytes.")
        refuse_sparse(src, what, name=path)
        return Path(src).read_bytes()


def file_kind(mode):
    """What a ``st_mode`` is, in words ('a folder', 'a FIFO', ...), for messages."""
    for test, words in (
        (stat.S_ISDIR, "a folder"),
        (stat.S_ISFIFO, "a FIFO (named pipe)"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
    ):
        if test(mode):
            return words
    return "a special file (neither a file, a folder nor a device)"


def _near_name(folder, name, keep):
    """The name in ``folder`` nearest ``name`` among those ``keep`` accepts (not ``name`` itself), or None."""
    import difflib

    try:  # a folder of millions of images: the first thousand names are enough for a typo
        names = sorted(p.name for p in folder.iterdir() if keep(p))[:1000]
    except OSError:
        return None
    near = [n for n in difflib.get_close_matches(name, names, n=1) if n != name]
    return near[0] if near else None


def near_file(path):
    """An existing path a misspelling of ``path`` meant, or None.

    A file or folder beside ``path`` of the same suffix and a near name, else the path with one misspelt folder
    on the way mended where that path exists ('data/smal/images' for 'data/small/images': trial 37).
    """
    path = Path(path)
    if path.name and path.parent.is_dir():  # (a folder has no suffix: its siblings without one)
        near = _near_name(path.parent, path.name, lambda p: p.suffix == path.suffix)
        return None if near is None else str(path.with_name(near))
    parts = path.parts
    found = next((i for i in range(len(parts) - 1, 0, -1) if Path(*parts[:i]).is_dir()), 0)
    folder = Path(*parts[:found]) if found else Path(".")
    if not path.name or found >= len(parts) - 1 or (not found and path.is_absolute()):
        return None
    near = _near_name(folder, parts[found], lambda p: p.is_dir())
    mended = None if near is None else Path(*parts[:found], near, *parts[found + 1 :])
    return str(mended) if mended is not None and os.path.lexists(mended) else None


def _stat(pid):
    """The fields of ``/proc/PID/stat`` after the command name (state first); None unreadable."""
    try:
        with open(f"/proc/{int(pid)}/stat", "rb") as fh:
            data = fh.read()
        return data[data.rindex(b")") + 2 :].split()
    except (OSError, ValueError):
        return None


def _start_time(pid):
    """When process ``pid`` started (``/proc/PID/stat``'s field 22, in clock ticks since boot); None unreadable."""
    fields = _stat(pid)
    return None if fields is None or len(fields) < 20 else fields[19].decode()


def process_tag():
    """The running process as leftovers name their writer: ``PID.START.TABLE.BOOT`` (START 0 where unreadable).

    A pid alone is not a process: in a container lbee gets the same pid at every start, and a killed writer's
    leftovers were then taken for a live writer's, and later finished over a newer run (sweep 32d). TABLE names
    the process table the pid is read in, BOOT the machine's boot (`_process_table`): a live writer in another
    container or on another host sharing the folder looked dead from here, and its stage was deleted under it
    (sweep 32g).
    """
    table, boot = _process_table()
    return f"{os.getpid()}.{_start_time(os.getpid()) or 0}.{table}.{boot}"


def _process_table():
    """8 hex digits each of the process table (host name, machine id, pid namespace) and of the boot it runs in."""
    import hashlib
    import socket

    def read(how):
        try:
            return how()
        except OSError:
            return ""

    def machine():  # two hosts of one hostname (localhost, ubuntu) sharing a folder are told apart by it
        for path in ("/etc/machine-id", "/var/lib/dbus/machine-id"):
            try:
                return Path(path).read_text().strip()
            except OSError:
                continue
        return ""

    table = "\0".join((socket.gethostname(), machine(), read(lambda: os.readlink("/proc/self/ns/pid"))))
    boot = read(lambda: Path("/proc/sys/kernel/random/boot_id").read_text().strip())
    return tuple(hashlib.sha256(v.encode()).hexdigest()[:8] for v in (table, boot))


def tag_alive(tag):
    """Whether the process a `process_tag` (or a bare pid, as older names have it) names still runs.

    Its pid must exist and, where both start times are known, it must have started when the tag says; a tag that
    is no pid, or one of another process table (another host or container: its pid cannot be looked up here), is
    taken as alive (left alone); one of an earlier boot of this machine is gone. On Windows, where signal 0 would
    end a process, every one counts.
    """
    pid, start, table, boot = (str(tag).split(".") + ["", "", ""])[:4]
    if not pid.isdigit() or os.name == "nt":
        return True
    if table or boot:
        here, booted = _process_table()
        if table != here:  # its pid means nothing in this process table
            return True
        if boot != booted:  # written before this machine last started: that process is gone
            return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except (OSError, OverflowError):  # another user's process: it exists
        pass
    fields = _stat(pid)
    if fields and fields[0] in (b"Z", b"X"):  # killed, not yet reaped: it writes nothing more (sweep 32e)
        return False
    now = None if fields is None or len(fields) < 20 else fields[19].decode()
    return not (start not in ("", "0") and now is not None and now != start)


#: The largest commit mark read (a report's lists every entry of its folders: far below this).
MAX_MARK_BYTES = 16 << 20


def read_mark_text(path):
    """A commit mark's text: a regular file of this user's, at most `MAX_MARK_BYTES`, never through a link.

    Another user planted a leftover stage in /tmp whose mark was a FIFO (every later run into that output hung) or
    a link to /dev/zero (memory without bound), read before whose leftover it was had been asked (sweep 32ah H1).
    Opened without following a link and without waiting, checked through the descriptor. `OSError` or
    `ValueError` otherwise.
    """
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or (hasattr(os, "geteuid") and st.st_uid != os.geteuid()):
            raise ValueError(f"{str(path)!r} is not lbee's commit mark (not a regular file of this user's)")
        if st.st_size > MAX_MARK_BYTES:
            raise ValueError(f"{str(path)!r} is {st.st_size:,} bytes, over the {MAX_MARK_BYTES:,} of a commit mark")
        with os.fdopen(os.dup(fd), "rb") as fh:
            data = fh.read(MAX_MARK_BYTES + 1)
    finally:
        os.close(fd)
    if len(data) > MAX_MARK_BYTES:
        raise ValueError(f"{str(path)!r} grew past the {MAX_MARK_BYTES:,} bytes of a commit mark")
    return data.decode("utf-8")
