"""Matching the rows of a user table to the images of a run: one rule, exact or refused.

Rows that match nothing in the run (an image id or sentence that is not
part of it) are reported by [`report_unmatched`][lbee.io.matching.report_unmatched]: an error when no row
matches, a warning on the ``lbee`` logger with counts otherwise.
"""

from __future__ import annotations

import numpy as np

from .._validation import shown as cut  # an id quoted in a message: at most 80 characters of it
from .table_reader import logger


def report_unmatched(n_unmatched, n_total, *, what, source, examples=(), hint=""):
    """Report rows of a table that matched nothing in the run.

    Raises ``ValueError`` when no row matched (``n_unmatched == n_total``);
    logs a warning on the ``lbee`` logger with the counts when some did not.
    """
    if n_unmatched == 0:
        return
    shown = ", ".join(cut(e) for e in list(examples)[:3])
    more = f" (e.g. {shown})" if shown else ""
    if n_unmatched >= n_total:
        raise ValueError(f"{source}: none of its {n_total} row(s) matches {what}{more}.{(' ' + hint) if hint else ''}")
    logger.warning(
        "%s: %d of %d row(s) match no %s and are ignored%s.%s",
        source,
        n_unmatched,
        n_total,
        what,
        more,
        (" " + hint) if hint else "",
    )


#: The folder levels of an id or path that are matched by their tails (``a/f.png`` of ``x/a/f.png``): the last 64.
#: Every tail is a string of its own, so an id of thousands of '/' cost thousands of them (61 KB of such ids held a
#: worker for 330 s); a real image path is a few levels deep.
MAX_TAIL_PARTS = 64
#: The longest tail indexed, in characters: 64 levels of long names made 126 KB of tails an id (190 KB of ids took
#: a worker to 1.8 GB); a real path's last levels are a few hundred characters at most.
MAX_TAIL_CHARS = 512
#: The most characters of tails kept for one id, all its tails together: 64 tails of 450 characters above U+FFFF
#: were 114 KB an id of 508 characters.
MAX_TAILS_CHARS = 2048


def _tails(text):
    """``text``'s tails at a folder boundary ('a/f.png', 'f.png' of 'x/a/f.png'), shortest first.

    At most `MAX_TAIL_PARTS` levels and `MAX_TAIL_CHARS` characters each, `MAX_TAILS_CHARS` in all.
    """
    out, pos, kept = [], len(text), 0
    while len(out) < MAX_TAIL_PARTS:
        pos = text.rfind("/", 0, pos)
        size = len(text) - pos - 1
        if pos < 0 or size > MAX_TAIL_CHARS or kept + size > MAX_TAILS_CHARS:
            break
        out.append(text[pos + 1 :])
        kept += size
    return out


def _posix(text):
    return str(text).replace("\\", "/")


def same_image_id(a, b):
    """One id ends with the other at a folder boundary (``x/a/f.png`` and ``a/f.png`` or ``f.png``)."""
    a, b = _posix(a), _posix(b)
    return a == b or a.endswith("/" + b) or b.endswith("/" + a)


def local_path(key):
    """``key`` as an absolute path of this machine: itself, or a ``file:`` URL's (``file:///w/p0.png``); else None.

    A relative path names no file here. A URL's host is not read: this machine goes by many names (``127.0.0.1``,
    its hostname, ``user@localhost:80``), and where the path exists here it names that file, as a
    plain path does, whichever host wrote it (at worst an id is refused, never matched to another image).
    """
    import os

    if not isinstance(key, str):
        return None
    if key[:5].lower() == "file:":  # sweep 32ax: file:///w/photos2/p0.png matched the image p0.png by its end
        from urllib.parse import unquote, urlsplit

        try:
            parts = urlsplit(key)
        except ValueError:  # 'file://[x/p0.png': no URL, so no file here either
            return None
        key = unquote(parts.path)
    return key if os.path.isabs(key) else None


def exists_here(key):
    """Whether ``key`` is an absolute path (or ``file:`` URL) of an existing file (inside the data root, if any)."""
    return file_here(key) is not None


def file_here(key):
    """The existing file ``key`` names (`local_path`), or None; under a data root, only a file inside it.

    Under a root its ``..`` are read first, in the text (``/r/imgs/../other/p0.png`` is ``/r/other/p0.png``): the
    root's rule refuses them, and such an id, taken for a file not here, was matched to the image ``imgs/p0.png``
    by its end. What is stat'ed is the path inside the root, never one the kernel's ``..`` reads out. A key that
    names no file as written is read again with its backslashes as '/', as `IdMatcher` matches it, and (without a
    root) with its ``..`` read in the text: such a path of another folder's file matched an image of the run by its
    end.
    """
    import os

    path = local_path(key)
    if path is None:
        return None
    from .confinement import PathEscape, confine, data_root

    root = data_root()
    # as written, then with its backslashes as '/' (sweep 32bb: /w/photos2\p0.png matched photos/p0.png); without a
    # root each also with its '..' read in the text, where the kernel finds no file (sweep 32bd: /w/gone/../photos2/
    # p0.png, through a folder that does not exist, matched photos/p0.png by its end)
    forms = [f for p in (path, _posix(path)) for f in ((p,) if root is not None else (p, os.path.normpath(p)))]
    for form in dict.fromkeys(forms):
        try:
            if root is not None:
                form = str(confine(os.path.normpath(form), root, "table id"))
            if os.path.lexists(form):
                return form
        except (OSError, ValueError, PathEscape):
            continue
    return None


class IdMatcher:
    """Match the ids of a user table to the images of a run: exactly, or refused.

    The one rule for predictions tables, Γ tables and ω tables alike: a table
    id matches the image whose id (or path) it equals; failing that, the image
    whose id or path ends with it, or which it ends with, at a folder boundary
    (``f00.png`` or ``/data/a/f00.png`` for the image ``a/f00.png``), but only
    when exactly one image of the run matches that way. A shorter id that fits
    two images (``f00.png`` for ``a/f00.png`` and ``b/f00.png``) raises
    ``ValueError`` naming the colliding images, and so do two table ids that
    fall on one image.

    Parameters
    ----------
    run_ids : list of str
        The run's image ids, in row order.
    run_paths : list of str, optional
        The images' file paths (also matched).
    source : str
        How messages name the table.
    """

    def __init__(self, run_ids, run_paths=None, *, source="table"):
        self.run_ids = [str(i) for i in run_ids]
        self.forms = [[i] for i in self.run_ids]
        if run_paths is not None:
            for forms, p in zip(self.forms, run_paths):
                if p is not None and str(p) != forms[0]:
                    forms.append(str(p))
        self.source = source
        # every form of an image, and every one of its tails at a folder boundary ('a/f.png', 'f.png' of 'x/a/f.png'):
        # a table id is then matched by a few lookups, never by comparing it with every image of the same file name
        # (20,000 images all named rgb.png took 196 s)
        self.exact, self.by_form, self.by_tail, self.depths = {}, {}, {}, set()
        for i, forms in enumerate(self.forms):
            for f in forms:
                self.exact.setdefault(f, i)
                text = _posix(f)
                parts = text.split("/")
                self.by_form.setdefault(text, set()).add(i)
                if len(parts) <= MAX_TAIL_PARTS:  # a deeper form is matched exactly or by its tails only
                    self.depths.add(len(parts))
                for tail in _tails(text):
                    self.by_tail.setdefault(tail, set()).add(i)
        self.claimed, self._seen = {}, {}

    def _candidates(self, key):
        """Rows of the images one of whose forms equals ``key`` or ends with it, or ``key`` ends with, at a '/'."""
        text = _posix(key)
        found = set(self.by_form.get(text, ())) | set(self.by_tail.get(text, ()))
        starts = [0] + [i + 1 for i, c in enumerate(text) if c == "/"]  # where each level begins
        for depth in self.depths:  # the key is longer: its tail of as many levels as an image's form may be it
            if depth < len(starts):
                found |= self.by_form.get(text[starts[len(starts) - depth] :], set())
        return found

    def _another_file(self, key, i):
        """Whether ``key``, an absolute path, names an existing file that is not image ``i``'s (sweep 32aw B2).

        A path ending with an image's id matched it: ``/w/photos2/p0.png`` named the image ``p0.png`` of
        ``/w/photos``, and the run took another folder's predictions. A path that exists here names that file;
        one that does not (a table written on another machine) is matched by its end as before. Under a data
        root, only paths inside it are looked at (no file outside it is stat'ed for a job).
        """
        import os

        path = file_here(key) if len(self.forms[i]) >= 2 else None
        if path is None:
            return False  # (no path of the image known: its id is all there is)
        try:
            return not os.path.samefile(path, self.forms[i][-1])
        except (OSError, ValueError):
            return False

    def index(self, key):
        """Row of the run's image that ``key`` names, or None when it names none."""
        key = str(key)
        i = self.exact.get(key)
        if i is None and key in self._seen:  # a repeated key (a long Γ table): matched once
            i = self._seen[key]
        elif i is None:
            cands = sorted(self._candidates(key))
            if len(cands) > 1:
                shown = ", ".join(cut(self.run_ids[j]) for j in cands[:4]) + (", ..." if len(cands) > 4 else "")
                raise ValueError(
                    f"{self.source}: the id {cut(key)} matches {len(cands)} images of the run by its file "
                    f"name ({shown}); expected an id that names one image: the image's id (its path "
                    "relative to the folder, or the manifest's 'path'), or a path ending with it."
                )
            i = cands[0] if cands else None
            if i is not None and self._another_file(key, i):
                i = None
            self._seen[key] = i
        if i is not None:
            prev = self.claimed.setdefault(i, key)
            if prev != key:
                raise ValueError(
                    f"{self.source}: the ids {cut(prev)} and {cut(key)} both match the image "
                    f"{cut(self.run_ids[i])} of the run; expected one id per image."
                )
        return i


def match_table_rows(table_ids, image_ids, image_paths=None, *, source="table"):
    """The table row of each image of the run (-1 for none), by [`IdMatcher`][lbee.io.matching.IdMatcher]'s rule.

    Returns
    -------
    rows : ndarray of int64, shape (n_images,)
    unmatched : list of str
        The table ids that name no image of the run, in table order.
    """
    matcher = IdMatcher(image_ids, image_paths, source=source)
    rows = np.full(len(image_ids), -1, dtype=np.int64)
    unmatched = []
    for r, tid in enumerate(table_ids):
        i = matcher.index(tid)
        if i is None:
            unmatched.append(str(tid))
        elif rows[i] < 0:
            rows[i] = r
    return rows, unmatched
