"""Sweep 32q B7 (and B5): an output inside a folder another user can change is refused before any work.

A run's stage, written by path, was swapped for a link by the owner of the folder holding it, and root's files
went into the victim's folder. No check during the work closes that window, so such a folder is refused first.
"""

import os

import pytest
from click.testing import CliRunner

from lbee.cli import cli
from lbee.io.folder_trust import TRUST_ENV, SharedFolderError, check_trusted_folder, untrusted_folder

needs_root = pytest.mark.skipif(not hasattr(os, "getuid") or os.getuid() != 0, reason="needs root to chown")


@pytest.fixture(autouse=True)
def _no_trust(monkeypatch):
    monkeypatch.delenv(TRUST_ENV, raising=False)


def test_a_folder_every_user_can_write_is_refused_before_anything_is_written(tmp_path, monkeypatch):
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o777)  # not sticky: anyone may rename lbee's stage there
    out = shared / "sub" / "s.txt"
    r = CliRunner().invoke(cli, ["sentences", "generate", "spotcheck", "--out", str(out)], obj={})
    assert r.exit_code == 1 and "Traceback" not in r.output
    assert f"{str(shared)!r} is writable by every user" in r.output and TRUST_ENV in r.output
    assert list(shared.iterdir()) == []  # not even the folder it would have made
    os.chmod(shared, 0o1777)  # sticky, as /tmp: only an entry's owner renames it
    assert untrusted_folder(out) is None
    os.chmod(shared, 0o777)
    monkeypatch.setenv(TRUST_ENV, "1")  # the user trusts everyone who can change it
    r = CliRunner().invoke(cli, ["sentences", "generate", "spotcheck", "--out", str(out)], obj={})
    assert r.exit_code == 0 and out.is_file()


def test_the_library_stages_nothing_in_such_a_folder(tmp_path):
    from lbee.io.staging import staged_entries

    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o777)
    with pytest.raises(SharedFolderError, match="writable by every user"):
        with staged_entries(shared / "run"):
            pytest.fail("a stage was made")
    assert list(shared.iterdir()) == []
    with pytest.raises(SharedFolderError):  # a link to it is judged by the folder it names
        os.symlink(shared / "run", tmp_path / "lnk")
        check_trusted_folder(tmp_path / "lnk")


def test_the_service_refuses_to_start_with_such_an_output(tmp_path):
    from lbee.service import ServiceSettings

    (tmp_path / "root").mkdir()
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o777)
    with pytest.raises(SharedFolderError):
        ServiceSettings(root=tmp_path / "root", output=shared / "svc")
    assert ServiceSettings(root=tmp_path / "root", output=tmp_path / "svc").output == (tmp_path / "svc").resolve()


@needs_root
def test_a_folder_another_user_owns_is_refused_even_where_only_they_can_write(tmp_path):
    """32q B7's precondition exactly: ``/tmp/A`` owned by nobody, mode 755; root's `describe --out /tmp/A/run`."""
    theirs = tmp_path / "A"
    theirs.mkdir()
    os.chown(theirs, 65534, 65534)
    r = CliRunner().invoke(cli, ["-q", "demo", "--out", str(theirs / "run")], obj={})
    assert r.exit_code == 1 and f"{str(theirs)!r} is owned by user " in r.output
    assert list(theirs.iterdir()) == []
    os.chown(theirs, 0, 0)
    os.chmod(theirs, 0o775)
    os.chown(theirs, 0, 65534)  # root's, writable by a group with other members than root
    from lbee.io.folder_trust import _group

    assert untrusted_folder(theirs / "run") == (str(theirs), f"writable by group {_group(65534)}")


def test_every_folder_on_the_way_is_checked_not_only_the_real_path(tmp_path):
    """Sweep 32w B1: only the folders of the real path were checked; a link in a folder others can change (or a link
    of another user's in a sticky folder), repointed between two resolutions, took outputs into a victim's folder."""
    safe = tmp_path / "safe"
    safe.mkdir()
    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / "to_safe").symlink_to(safe)
    assert untrusted_folder(shared / "to_safe" / "out") is None
    os.chmod(shared, 0o777)  # not on the real path (safe/out), but walked through: anyone may repoint the link
    assert untrusted_folder(shared / "to_safe" / "out") == (str(shared), "writable by every user")
    assert untrusted_folder(safe / "out") is None
    with pytest.raises(SharedFolderError):
        check_trusted_folder(os.path.join(shared, "to_safe", "..", "safe", "out"))


@needs_root
def test_a_link_another_user_owns_in_a_sticky_folder_is_refused(tmp_path):
    """Sweep 32w B1 exactly: a sticky shared folder the rule trusts, and in it another user's link to a safe folder,
    which they may replace at any time (a sticky folder lets an entry's owner do so)."""
    sticky, safe = tmp_path / "S", tmp_path / "T"
    sticky.mkdir()
    safe.mkdir()
    os.chmod(sticky, 0o1777)
    link = sticky / "new"
    link.symlink_to(safe)
    assert untrusted_folder(link / "out") is None  # this user's own link
    os.lchown(link, 65534, 65534)
    assert untrusted_folder(link / "out")[0] == str(link)
    assert "a symbolic link owned by user" in untrusted_folder(link / "out")[1]


@needs_root
def test_writers_that_resolve_their_folder_check_it_as_given_first(tmp_path):
    """Sweep 32x B2: ExperimentalConfiguration.save, Client.fetch and lbee serve --output resolved a link another
    user owns before the check saw it, and wrote into the folder it named (no race needed)."""
    from lbee.io.staging import staged_entries
    from lbee.service import ServiceSettings

    sticky, victim = tmp_path / "S", tmp_path / "victim"
    sticky.mkdir()
    victim.mkdir()
    os.chmod(sticky, 0o1777)
    (sticky / "out").symlink_to(victim)
    os.lchown(sticky / "out", 65534, 65534)
    with pytest.raises(SharedFolderError, match="a symbolic link owned by user"):
        with staged_entries(sticky / "out"):
            pytest.fail("staged through another user's link")
    (tmp_path / "root").mkdir()
    with pytest.raises(SharedFolderError, match="a symbolic link owned by user"):
        ServiceSettings(root=tmp_path / "root", output=sticky / "out")
    assert list(victim.iterdir()) == []


def test_a_chain_of_links_too_long_to_check_is_refused(tmp_path):
    """Sweep 32x: past 40 links the check gave up and passed, and the write followed the path anyway."""
    from lbee.io.folder_trust import MAX_LINKS

    (tmp_path / "end").mkdir()
    previous = tmp_path / "end"
    for i in range(MAX_LINKS + 2):
        link = tmp_path / f"l{i}"
        link.symlink_to(previous)
        previous = link
    assert "symbolic links in a row" in untrusted_folder(previous / "out")[1]
    # a loop of one's own links is refused without blaming another user, the link named by its whole path
    (tmp_path / "loopa").symlink_to(tmp_path / "loopb")
    (tmp_path / "loopb").symlink_to(tmp_path / "loopa")
    with pytest.raises(SharedFolderError) as caught:
        check_trusted_folder(tmp_path / "loopa" / "out")
    said = str(caught.value)
    assert "symbolic links in a row (a loop?)" in said and "another user" not in said and str(tmp_path) in said
    assert untrusted_folder(tmp_path / "l3" / "out") is None


def test_export_spotlight_makes_and_checks_its_folder_before_the_work(tmp_path, monkeypatch):
    """Sweep 32x B1: `export spotlight --out S/new/sp.parquet` left S/new to be made at the end; another user made
    it a link to a victim's folder meanwhile and root's file replaced theirs. The folder is made and pinned first."""
    import lbee.reports.spotlight as spotlight

    seen = []

    def export(run_dir, target, **kw):
        seen.append(target.parent.is_dir() and not target.parent.is_symlink())
        raise ValueError("stop here")

    monkeypatch.setattr(spotlight, "export_spotlight", export)
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "explanation.json").write_text("{}")
    out = tmp_path / "new" / "deeper" / "sp.parquet"
    r = CliRunner().invoke(cli, ["export", "spotlight", str(tmp_path / "run"), "--out", str(out)], obj={})
    assert seen == [True] and r.exit_code == 1 and "stop here" in r.output


@needs_root
def test_a_link_put_where_an_output_folder_is_being_made_is_refused(tmp_path, monkeypatch):
    """Sweeps 32y, 32z B1: the output's folder was made with mkdir(parents=True, exist_ok=True) (then one at a time,
    by path), which took a link another user put in the gap (in a sticky folder they may write); the pin recorded
    no folder, and the write at the end followed the link into a victim's folder. The folders are now walked and
    made through descriptors, each checked as it is opened."""
    from lbee.cli._base import check_writable_folder

    victim = tmp_path / "victim"
    victim.mkdir()
    out = tmp_path / "S" / "new"
    real_mkdir = os.mkdir

    def racing(path, *args, dir_fd=None, **kwargs):
        full = os.path.join(os.readlink(f"/proc/self/fd/{dir_fd}"), path) if dir_fd is not None else str(path)
        if full == str(out) and not os.path.lexists(out):  # the racer's link lands first, and is theirs
            os.symlink(victim, out)
            os.lchown(out, 65534, 65534)
        return real_mkdir(path, *args, dir_fd=dir_fd, **kwargs)

    monkeypatch.setattr(os, "mkdir", racing)
    with pytest.raises(SharedFolderError, match="a symbolic link owned by user"):
        check_writable_folder(out, "--out")
    assert list(victim.iterdir()) == []


def test_a_link_to_slash_then_dot_dot_goes_where_the_kernel_goes(tmp_path):
    """Sweep 32aa B3: after a link to '/', a '..' climbed back to the link's own folder instead of staying at '/':
    `--out ~/r/../tmp/x` wrote into ~/tmp/x, and with --overwrite replaced a run there."""
    from lbee.io.folder_trust import trusted_real_folder

    (tmp_path / "r").symlink_to("/")
    target = tmp_path / "out"
    given = f"{tmp_path / 'r'}/..{target}"  # the kernel: '/', then '..' stays at '/', then tmp_path/out
    assert os.path.realpath(given) == str(target)
    real, identity = trusted_real_folder(given, make=True)
    assert real == str(target) and target.is_dir() and identity == (target.stat().st_dev, target.stat().st_ino)
    wrong = tmp_path / str(tmp_path).lstrip("/")  # where the walk went before: below the link's folder
    assert not wrong.exists() and not (tmp_path / "tmp").exists()
    # a relative link's '..' still pops what the link pushed: a/link/.. is a/b when link -> b/c
    (tmp_path / "a" / "b" / "c").mkdir(parents=True)
    (tmp_path / "a" / "link").symlink_to("b/c")
    assert trusted_real_folder(tmp_path / "a" / "link" / ".." / "x", make=True)[0] == str(tmp_path / "a" / "b" / "x")


@needs_root
def test_a_folder_this_user_cannot_read_is_judged_too(tmp_path):
    """Sweep 32aa B1: the walk opened folders for reading; another user's drop folder (mode 0733: writable, not
    readable) failed to open and was taken as trusted, and a database, a cache and `serve --output` went there.
    Root reads every folder, so the check runs in a forked child that has become an unprivileged user."""
    import grp  # noqa: F401  (imported before the fork: the child may not read Python's own files)
    import pwd  # noqa: F401
    import shutil
    import tempfile

    from lbee.io.cache import cache_folder

    top = tempfile.mkdtemp(dir="/tmp")  # searchable by the unprivileged user (pytest's tmp_path is root's own)
    os.chmod(top, 0o755)
    drop = os.path.join(top, "drop")
    os.mkdir(drop)
    os.chown(drop, 12345, 12345)  # another user's drop folder
    os.chmod(drop, 0o733)

    def checks(out):  # the two checks, as nobody
        out.append(repr(untrusted_folder(drop + "/x.db")))
        try:
            cache_folder(drop + "/cache")
            out.append("cache accepted")
        except SharedFolderError as exc:
            out.append(f"cache refused: {exc.why}")

    said = _as_nobody(checks).splitlines()
    made = os.listdir(drop)
    shutil.rmtree(top, ignore_errors=True)
    assert said == [repr((drop, "owned by user 12345")), "cache refused: owned by user 12345"], said
    assert made == []  # nothing made in the other user's folder


def test_the_cache_folder_is_made_when_it_is_checked_leaving_no_gap(tmp_path):
    """Sweep 32aa B2: the cache folder was checked at the start and made at the first write, after the encoding;
    a folder or link another user put there in between was used. Now it is made (through the checked walk) when
    it is checked, and its real path is what the cache writes below."""
    from lbee.io.cache import EmbeddingCache, cache_folder

    sticky = tmp_path / "S"
    sticky.mkdir()
    os.chmod(sticky, 0o1777)
    base = sticky / "cache"
    assert cache_folder(base) == base and base.is_dir() and not base.is_symlink()
    assert base.stat().st_uid == os.geteuid()
    other = sticky / "other"
    EmbeddingCache({"encoder": "x"}, cache_dir=other)
    assert other.is_dir() and not other.is_symlink()  # before any embedding is computed or written
    (tmp_path / "home").mkdir()
    (sticky / "via").symlink_to(tmp_path / "home")  # this user's own link: followed, the real folder returned
    assert cache_folder(sticky / "via" / "c") == tmp_path / "home" / "c"


@needs_root
def test_a_relative_path_climbing_out_of_another_users_folder_is_refused(tmp_path, monkeypatch):
    """Sweep 32ab B1: from a folder of one's own inside another user's, `--out ../../x` was accepted; they moved
    their folder into a sticky one during the run, the kernel's '..' followed it, and the output went there."""
    theirs = tmp_path / "N2"
    theirs.mkdir()
    inner = theirs / "inner"
    inner.mkdir()  # this user's working folder, inside theirs
    os.chown(theirs, 65534, 65534)
    os.chmod(theirs, 0o733)
    monkeypatch.chdir(inner)
    assert untrusted_folder("../../out") == (str(theirs), "owned by user nobody")
    with pytest.raises(SharedFolderError, match="owned by user nobody"):
        check_trusted_folder(os.path.join("..", "..", "out"))
    os.chown(theirs, 0, 0)  # the same folder, this user's (root's) and closed to others: the climb is trusted
    os.chmod(theirs, 0o755)
    assert untrusted_folder("../../out") is None


@needs_root
def test_a_database_file_another_user_could_replace_or_redirect_is_refused(tmp_path):
    """Sweep 32ab B2: `--db sqlite:////tmp/x.db`, x.db another user's link into their folder: the token database was
    made there, then swapped for theirs with their submit token, which the server accepted. SQLite opens the file
    and makes its journals by name, so the folder must be one's own alone and the file no one else's."""
    from lbee.io.folder_trust import check_database_file

    sticky, theirs, mine = tmp_path / "S", tmp_path / "theirs", tmp_path / "mine"
    for d in (sticky, theirs, mine):
        d.mkdir()
    os.chmod(sticky, 0o1777)
    os.chown(theirs, 65534, 65534)
    for folder in (sticky, mine):  # their link in a sticky folder (and, as root can make one, in one's own)
        (folder / "x.db").symlink_to(theirs / "tokens.db")
        os.lchown(folder / "x.db", 65534, 65534)
    with pytest.raises(SharedFolderError, match="a folder other users can write") as caught:  # sticky: journals too
        check_database_file(sticky / "x.db")
    assert "sticky one such as /tmp" not in str(caught.value)
    with pytest.raises(SharedFolderError, match="a folder other users can write"):
        check_database_file(sticky / "new.db")
    with pytest.raises(SharedFolderError, match="a symbolic link owned by user nobody"):
        check_database_file(mine / "x.db")
    (mine / "planted.db").write_bytes(b"")
    os.chown(mine / "planted.db", 65534, 65534)
    with pytest.raises(SharedFolderError, match="a database file owned by user nobody"):
        check_database_file(mine / "planted.db")
    (mine / "own.db").symlink_to(mine / "real.db")  # one's own link, to a file of one's own folder: followed
    assert check_database_file(mine / "own.db") == str(mine / "real.db")
    assert check_database_file(mine / "sub" / "a.db") == str(mine / "sub" / "a.db") and (mine / "sub").is_dir()
    (mine / "l1").symlink_to(mine / "l2")
    (mine / "l2").symlink_to(mine / "l1")
    with pytest.raises(SharedFolderError, match="symbolic links in a row"):
        check_database_file(mine / "l1")
    assert list(theirs.iterdir()) == []
    r = CliRunner().invoke(cli, ["serve", "token", "create", "a", "--db", f"sqlite:///{sticky / 'x.db'}"], obj={})
    assert r.exit_code == 1 and "a folder other users can write" in r.output and "Traceback" not in r.output
    assert list(theirs.iterdir()) == []


@needs_root
def test_replacing_another_users_entry_in_a_sticky_folder_is_refused_before_the_work(tmp_path):
    """Sweep 32ab N4: `sentences generate --overwrite --out /tmp/x.txt`, x.txt another user's, failed only at the swap
    ("Operation not permitted"), after the work, and left a finished stage in /tmp. Now said before the work. Root
    may replace any entry, so the check runs in a forked child that has become an unprivileged user."""
    import grp  # noqa: F401  (imported before the fork: the child may not read Python's own files)
    import pwd  # noqa: F401
    import shutil
    import tempfile

    from lbee.io.no_replace import OutputExistsError, check_no_replace

    top = tempfile.mkdtemp(dir="/tmp")
    os.chmod(top, 0o1777)  # sticky, as /tmp
    theirs = os.path.join(top, "x.txt")
    with open(theirs, "w") as f:
        f.write("theirs\n")
    os.chown(theirs, 12345, 12345)
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        said = "no refusal"
        try:
            os.setgroups([])
            os.setresgid(65534, 65534, 65534)
            os.setresuid(65534, 65534, 65534)
            try:
                check_no_replace([theirs], overwrite=True)
            except OutputExistsError as exc:
                said = str(exc)
            try:
                check_no_replace([os.path.join(top, "new.txt")], overwrite=True)  # nothing there: fine
            except OutputExistsError as exc:
                said += f" | and refused a new name: {exc}"
        except BaseException as exc:  # noqa: BLE001 - said to the parent, which fails the test
            said = f"child error: {exc!r}"
        os.write(write, said.encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as pipe:
        said = pipe.read()
    os.waitpid(pid, 0)
    shutil.rmtree(top, ignore_errors=True)
    assert "belongs to user 12345 in a sticky folder, where only they may replace it" in said, said
    assert "and refused" not in said, said


def test_the_database_checked_is_the_file_sqlite_opens_whatever_the_url_spelling(tmp_path):
    """Sweep 32ac B1: lbee checked the text after 'sqlite:///' while SQLAlchemy opened '%2Ftmp%2F...' decoded, a
    'file:' URI, or the path before '?timeout=5': another user's file in a sticky folder took root's tokens."""
    from urllib.parse import quote

    from lbee.service.db import Database

    sticky = tmp_path / "S"
    sticky.mkdir()
    os.chmod(sticky, 0o1777)
    encoded = quote(str(sticky / "v6.db"), safe="")
    for url in (f"sqlite:///{encoded}", f"sqlite:///{sticky / 'v6.db'}?timeout=5", f"sqlite:///{sticky}/v6.db"):
        with pytest.raises(SharedFolderError, match="a folder other users can write"):
            Database(url)
    for url in (f"sqlite:///file:{sticky}/u.db?uri=true", f"sqlite:///{tmp_path}/u.db?uri=true"):
        with pytest.raises(ValueError, match="URI forms"):
            Database(url)
    assert list(sticky.iterdir()) == [] and not (tmp_path / "file:").exists()
    db = Database(f"sqlite:///{quote(str(tmp_path / 'mine' / 'ok.db'), safe='')}?timeout=5")  # decoded, checked
    assert (tmp_path / "mine" / "ok.db").is_file()
    db.dispose()


def test_the_services_default_database_lies_in_its_output_whatever_the_folders_name(tmp_path):
    """Sweep 32ad B1: the default database URL pasted the output's path unquoted; SQLAlchemy decoded 'a%2Fb' and
    lbee.db went into a new folder a/b, outside the output."""
    from lbee.service import ServiceSettings
    from lbee.service.db import Database

    (tmp_path / "root").mkdir()
    for name in ("a%2Fb", "c?timeout=5", "d#e"):
        settings = ServiceSettings(root=tmp_path / "root", output=tmp_path / name, workers=0)
        Database(settings.db_url).dispose()
        assert (tmp_path / name / "lbee.db").is_file(), name
    assert not (tmp_path / "a").exists() and not (tmp_path / "c").exists()


def test_a_service_refused_for_its_database_makes_no_output_folder(tmp_path):
    """Sweep 32ae: `lbee serve --output NEW --db` naming a database in a shared folder was refused after NEW was
    made: an empty folder left behind. The database is checked first."""
    from lbee.service import ServiceSettings

    sticky = tmp_path / "S"
    sticky.mkdir()
    os.chmod(sticky, 0o1777)
    (tmp_path / "root").mkdir()
    for url, error in (
        (f"sqlite:///{sticky}/x.db", SharedFolderError),
        (f"sqlite:///{tmp_path}/d?uri=true", ValueError),
    ):
        with pytest.raises(error):
            ServiceSettings(root=tmp_path / "root", output=tmp_path / "out", db_url=url, workers=0)
        assert not (tmp_path / "out").exists()
    ServiceSettings(root=tmp_path / "root", output=tmp_path / "out", db_url=f"sqlite:///{tmp_path}/ok.db", workers=0)
    assert (tmp_path / "out").is_dir()


def test_a_folder_made_open_to_all_by_the_umask_is_refused_saying_so_and_not_left(tmp_path):
    """Sweep 32ae: under umask 000 lbee made the output's missing folders writable by every user, then refused them
    as another user's to change, and left them (each later run refused too). Now the umask is named and they go."""
    from lbee.io.folder_trust import trusted_real_folder

    old = os.umask(0)
    try:
        with pytest.raises(SharedFolderError) as info:
            trusted_real_folder(tmp_path / "a" / "b" / "c", make=True)
    finally:
        os.umask(old)
    said = str(info.value)
    assert f"{str(tmp_path / 'a')!r} is writable by every user (lbee made it just now" in said, said
    assert "umask 000" in said and "set a umask such as 022" in said
    assert list(tmp_path.iterdir()) == []
    real, _ = trusted_real_folder(tmp_path / "a" / "b", make=True)  # the process's own umask: made and kept
    assert real == str(tmp_path / "a" / "b") and os.path.isdir(real)


def test_a_relative_path_inside_another_users_folder_is_judged_as_its_absolute_spelling(tmp_path, monkeypatch):
    """Sweep 32af B1: from a folder of one's own inside another user's, `LBEE_CACHE_DIR=c4` was accepted where
    `/their/me/c4` was refused: the walk of a relative path started at the current folder and never judged the
    folders above it. That user then swapped the folder for a link, and the cache's shards went into theirs."""
    from lbee.io.cache import cache_folder
    from lbee.io.folder_trust import trusted_real_folder

    theirs = tmp_path / "theirs"
    (theirs / "me").mkdir(parents=True)
    os.chown(theirs, 12345, -1)
    monkeypatch.chdir(theirs / "me")
    for path in ("c4", "../c", "./x/../c5"):
        with pytest.raises(SharedFolderError, match=f"{str(theirs)!r} is owned by user 12345"):
            cache_folder(path)
    with pytest.raises(SharedFolderError, match="owned by user 12345"):
        trusted_real_folder("out", make=True)
    assert sorted(p.name for p in theirs.rglob("*")) == ["me"]  # nothing made
    monkeypatch.chdir(tmp_path)
    assert trusted_real_folder("mine/c", make=True)[0] == str(tmp_path / "mine" / "c")  # one's own: made


def test_a_database_refused_in_another_users_folder_never_suggests_a_sticky_one(tmp_path):
    """Sweep 32af N2: `--db` in another user's folder was refused with "or in a sticky one such as /tmp", where a
    database is refused too."""
    from lbee.io.folder_trust import check_database_file

    theirs = tmp_path / "theirs"
    theirs.mkdir()
    os.chown(theirs, 12345, -1)
    with pytest.raises(SharedFolderError, match="owned by user 12345") as info:
        check_database_file(theirs / "x.db")
    assert "sticky" not in str(info.value)


def test_a_database_path_through_a_link_and_dotdot_goes_where_the_kernel_goes(tmp_path, monkeypatch):
    """Sweep 32ag N2: `--db sqlite:///lnk/../x.db` was resolved as text (`lnk/..` dropped), unlike every other
    output: the database was made beside the link, where SQLite and `--out lnk/../x` go to the link's parent."""
    from lbee.io.folder_trust import check_database_file

    (tmp_path / "w").mkdir()
    (tmp_path / "elsewhere" / "res").mkdir(parents=True)
    (tmp_path / "w" / "lnk").symlink_to(tmp_path / "elsewhere" / "res")
    monkeypatch.chdir(tmp_path / "w")
    assert check_database_file("lnk/../x.db") == str(tmp_path / "elsewhere" / "x.db")
    assert check_database_file("y.db") == str(tmp_path / "w" / "y.db")


@pytest.mark.parametrize("mark", ["fifo", "dev-zero", "own-fifo"])
def test_a_planted_leftover_beside_an_output_is_never_read_or_waited_on(tmp_path, mark):
    """Sweep 32ah H1: another user planted a leftover stage beside an output in /tmp, its writer's tag read as
    running and its commit mark a FIFO: every later run into that output hung (a link to /dev/zero: memory without
    bound), as the mark was read before whose leftover it was. Another user's leftover is never read; this user's
    own mark is read only as a regular file, without following a link or waiting."""
    import threading

    from lbee.io.staging import _dead_owners, read_mark_text

    sticky = tmp_path / "tmp"
    sticky.mkdir()
    os.chmod(sticky, 0o1777)
    stage = sticky / ".run.lbee-staging-1.0.deadbeef.deadbeef-0123456789ab"  # a tag of another process table
    stage.mkdir()
    if mark == "dev-zero":
        (stage / ".lbee-complete.json").symlink_to("/dev/zero")
    else:
        os.mkfifo(stage / ".lbee-complete.json")
    if mark != "own-fifo":
        os.chown(stage, 12345, -1)
    from lbee.io.staging import _read_mark

    def committed(owner):  # as a run under the output's lock asks it: by reading the leftover's mark
        return _read_mark(sticky / f".run.lbee-staging-{owner}") is not None

    found = []
    reader = threading.Thread(
        target=lambda: found.append(_dead_owners(sticky, "run", committed=committed)), daemon=True
    )
    reader.start()
    reader.join(10)
    assert not reader.is_alive() and found, "the leftover was waited on"
    if mark != "own-fifo":
        assert found[0] == set()  # another user's: left alone, unread
    with pytest.raises((OSError, ValueError)):
        read_mark_text(stage / ".lbee-complete.json")
    done = []
    t = threading.Thread(target=lambda: done.append(_read_mark(stage)), daemon=True)
    t.start()
    t.join(10)
    assert not t.is_alive() and done == [None]


def test_leftovers_in_a_folder_one_may_not_list_are_none(tmp_path):
    """Sweep 32ah N1: with ~/index.html and /home of mode 0711, every `describe --out ~/a/b` stopped with
    "Permission denied: /home" (looking for a report's leftovers beside ~). A folder this user may not list holds
    none it could settle. (As root every folder is listable: the listing is made to refuse here.)"""
    from unittest import mock

    from lbee.io.staging import _dead_owners

    home = tmp_path / "home"
    home.mkdir()
    with mock.patch("pathlib.Path.iterdir", side_effect=PermissionError(13, "Permission denied")):
        assert _dead_owners(home, "me") == set()


def test_the_stage_is_this_users_alone_whatever_the_umask(tmp_path):
    """Sweep 32ai B1: under umask 000 (or 002 with a shared group) the stage was writable by others, and another
    user's file went out as the run's. The stage and the aside folder are made 0700; what the run writes in them
    keeps the umask. A stage name another process took first is said so, not as a bare "File exists"."""
    from lbee.io.staging import _new_stage, own_folder

    old = os.umask(0)
    try:
        owner, stage, aside = _new_stage(tmp_path, lambda o: (tmp_path / f".x.lbee-staging-{o}", tmp_path / f".x-{o}"))
        own_folder(aside / "sub")
        (stage / "made").mkdir()
    finally:
        os.umask(old)
    assert [oct(p.stat().st_mode & 0o777) for p in (stage, aside, aside / "sub")] == ["0o700"] * 3
    assert (stage / "made").stat().st_mode & 0o777 == 0o777  # the run's own folder: as its umask says
    taken = tmp_path / ".y.lbee-staging-1"
    taken.mkdir()
    with pytest.raises(FileExistsError, match="already exists .another process or user made it first.; nothing"):
        _new_stage(tmp_path, lambda o: (taken, tmp_path / f".y-{o}"))
    assert not list(tmp_path.glob(".y-*"))  # its aside folder removed


def test_a_relative_path_from_a_deleted_current_folder_is_said_to_lead_nowhere(tmp_path, monkeypatch):
    """Sweep 32ag N1, and `lbee serve` from a deleted folder ("cannot be made a folder: No such file or directory")."""
    import os

    from lbee.io.folder_trust import trusted_real_folder

    here = tmp_path / "gone"
    here.mkdir()
    monkeypatch.chdir(here)
    os.rmdir(here)
    for make in (True, False):
        with pytest.raises(FileNotFoundError, match="the current folder no longer exists .deleted or moved., so 'a/b'"):
            trusted_real_folder("a/b", make=make)
    assert not (tmp_path / "a").exists()


@needs_root
def test_a_relative_path_under_a_folder_that_cannot_be_opened_is_said_so():
    """The walk above a relative path met a folder it may not search: "--out 'w' is not a writable folder:
    Permission denied", of a folder the user could write. Run in a forked child that became an unprivileged user."""
    import shutil
    import tempfile

    from lbee.io.folder_trust import trusted_real_folder

    top = tempfile.mkdtemp(dir="/tmp")  # root's, 0700: nobody may not search it
    here = os.path.join(top, "in")
    os.mkdir(here)
    os.chown(here, 65534, 65534)

    def make(out):
        try:
            trusted_real_folder("w", make=True)
            out.append("accepted")
        except PermissionError as exc:
            out.append(f"refused: {exc.strerror}")

    said = _as_nobody(make, cwd=here)  # chdir as root, then nobody: as a folder's mode changed under a shell in it
    made = os.listdir(here)
    shutil.rmtree(top, ignore_errors=True)
    assert said.startswith("refused: a folder above the current one cannot be opened (permission denied)"), said
    assert made == []


def _as_nobody(checks, cwd=None):
    """Run ``checks(out)`` in a forked child that became user nobody (after ``chdir(cwd)``); the lines it appended.

    Root reads and searches every folder: what an unprivileged user meets is only seen as one.
    """
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: its outcome through the pipe
        out = []
        try:
            if cwd is not None:
                os.chdir(cwd)
            os.setgroups([])
            os.setresgid(65534, 65534, 65534)
            os.setresuid(65534, 65534, 65534)
            checks(out)
        except BaseException as exc:  # noqa: BLE001 - said to the parent, which fails the test
            out.append(f"child error: {exc!r}")
        os.write(write, "\n".join(out).encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as pipe:
        said = pipe.read()
    os.waitpid(pid, 0)
    return said
