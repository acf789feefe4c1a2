"""POSIX ACLs that let another user write: read from a file's ``system.posix_acl_access`` attribute (Linux).

With an ACL, a folder's group bits show the ACL's mask, and its named users and groups are nowhere in the mode: a
folder ``775 me me`` with ``u:nobody:rwx`` was trusted as this user's (sweep 32ak B4).
"""

from __future__ import annotations

import os
import struct

#: Entry tags of Linux's ``posix_acl_xattr`` format (``linux/posix_acl_xattr.h``) and the write permission.
_USER, _GROUP_OBJ, _GROUP, _MASK = 0x02, 0x04, 0x08, 0x10
_WRITE = 0x02


def acl_writers(where, owner_group, me, own_group):
    """Who other than this user an ACL lets write, in words ("user nobody through an ACL"), or None.

    Parameters
    ----------
    where : int or str
        A descriptor (an ``O_PATH`` one too) or a path; links are not followed.
    owner_group : int
        The file's group id (its owning group's ACL entry).
    me : int
        This user's id.
    own_group : callable
        ``own_group(gid, me)``: whether the group is this user's private group.

    Returns
    -------
    str or None
        None without an ACL, or where it grants write only to this user and their private group.
    """
    path = f"/proc/self/fd/{where}" if isinstance(where, int) else os.fspath(where)
    try:
        raw = os.getxattr(path, "system.posix_acl_access", follow_symlinks=isinstance(where, int))
    except (OSError, AttributeError):  # no ACL (ENODATA), no xattr support, not Linux
        return None
    entries = [struct.unpack_from("<HHI", raw, 4 + 8 * k) for k in range((len(raw) - 4) // 8)]
    mask = next((perm for tag, perm, _ in entries if tag == _MASK), 0o7)
    for tag, perm, who in entries:
        if not perm & mask & _WRITE:
            continue
        if tag == _USER and who != me:
            import pwd

            try:
                name = pwd.getpwuid(who).pw_name
            except KeyError:
                name = str(who)
            return f"writable by user {name} through an ACL"
        gid = owner_group if tag == _GROUP_OBJ else who if tag == _GROUP else None
        if gid is not None and not own_group(gid, me):
            import grp

            try:
                name = grp.getgrgid(gid).gr_name
            except KeyError:
                name = str(gid)
            return f"writable by group {name} through an ACL"
    return None
