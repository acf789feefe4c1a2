"""The row ids beside image embeddings (``ids.txt``): which image each row is, checked against the run's ids."""

from __future__ import annotations

from pathlib import Path

#: The row ids of image embeddings: ``<stem>.ids.txt`` beside them, else ``ids.txt`` (what ``lbee embed`` writes).
ROW_IDS_SUFFIX, ROW_IDS_NAME = ".ids.txt", "ids.txt"


def row_ids_path(path, name="embeddings"):
    """The file naming the rows of the embeddings ``path`` (one image id per line), or None when there is none.

    A sidecar (`lbee.io.confinement.sidecar`): confined to the data root when one is active, and refused
    when it is there but not a regular file. ``<stem>.ids.txt`` and ``ids.txt`` both there must agree.
    """
    from .confinement import sidecar

    path = Path(path)
    found = [
        f
        for cand in (path.with_name(path.stem + ROW_IDS_SUFFIX), path.with_name(ROW_IDS_NAME))
        if (f := sidecar(cand, of=f"{name} {str(path)!r}", what="row ids file", beside=path)) is not None
    ]
    from .confinement import read_bytes_file

    if len(found) == 2 and read_bytes_file(found[0], "row ids file") != read_bytes_file(found[1], "row ids file"):
        raise ValueError(
            f"{name} {str(path)!r} has two row ids files that disagree, {found[0].name} and {found[1].name}; "
            "expected one (or both the same): remove the one that does not belong to these embeddings."
        )
    return found[0] if found else None


def ids_bytes(ids):
    """The bytes of an ids file listing ``ids``, one a line, as ``lbee embed`` writes ``ids.txt``."""
    return "".join(f"{i}\n" for i in ids).encode()


def ids_digest(ids):
    """The ``ids_sha256`` a provenance record holds for ``ids``: the SHA-256 of `ids_bytes`, in hex."""
    import hashlib

    return hashlib.sha256(ids_bytes(ids)).hexdigest()


#: Rows whose two image files are compared by content (spread over the rows): a whole folder taken for another
#: shows at once, and the check stays a few file reads whatever the number of images.
CONTENT_CHECKS = 32


def refuse_missing_ids(path, name, ids_sha256):
    """The ids file beside the embeddings ``path`` (or None); refused when its provenance records one that is gone.

    Written with its ids, which are gone: a killed `lbee embed --overwrite` left its new rows without them, and
    they were read in the old order (sweep 32ao R2). `check_row_ids` and ``lbee report --check`` ask the same.
    """
    ids_file = row_ids_path(path, name)
    if ids_file is None and ids_sha256 is not None:
        raise ValueError(
            f"{name} {str(path)!r}: its provenance records the ids file written with it, but none is beside it "
            f"({Path(path).stem + ROW_IDS_SUFFIX} or {ROW_IDS_NAME}); lbee cannot tell which image each row is. "
            "Was an `lbee embed` into that folder interrupted? Run it again (it settles the folder first)."
        )
    return ids_file


def check_row_ids(
    path, n_rows, run_ids, name, *, against, images_folder=None, run_files=None, from_folder=False, ids_sha256=None
):
    """Refuse image embeddings whose rows name other images, or the same in another order, than the run's.

    When the embeddings ``path`` has an ids file beside it (`row_ids_path`),
    its line r must name the run's image r: equal, or one a path ending with the
    other at a folder boundary (``/data/a/f.png`` and ``a/f.png``), as the
    predictions' ids match images ([`lbee.io.matching.IdMatcher`][lbee.io.matching.IdMatcher]). Without
    an ids file the rows are taken in the run's order (nothing to check).

    Parameters
    ----------
    path : path-like
        The embeddings ``.npy``.
    n_rows : int
        Its rows.
    run_ids : list of str
        The run's image ids, in the order the rows are used.
    name : str
        How messages name the embeddings (``image_embeddings``).
    against : str
        Where ``run_ids`` come from (``the predictions table 'p.csv'``).
    images_folder : str, optional
        The folder the embedded images were found in (their provenance's ``images_folder``). An id matches
        ``ids.txt`` by its end, so ``data/test/0001.png`` matches a ``0001.png`` embedded from ``data/val``: where
        both files can be read, a few rows (`CONTENT_CHECKS`) are compared by content, and two different
        images are refused. Not under a data root (``lbee serve``), whose jobs read no file outside it.
    run_files : list of str, optional
        The run's image files, in the order of ``run_ids``, when they are known (a folder of images); otherwise
        the ids are taken as paths (relative to the working folder).
    from_folder : bool, default=False
        The run's images are a folder (read in sorted order): the fix offered is a manifest, not a reordering.
    ids_sha256 : str, optional
        The digest of the ids file its embeddings' provenance records (`make_provenance`'s ``row_ids``): another
        file is refused, as the ids of another embedding run of the same images in another order (sweep 32ak B5).

    Raises
    ------
    ValueError
        Naming the ids file, the first differing row and both ids.
    """
    from .matching import same_image_id

    ids_file = refuse_missing_ids(path, name, ids_sha256)
    if ids_file is None:  # nothing to check: said, since rows in another order go unnoticed (an eleventh user's
        # rows in generation order were described as "a light background" for groups of dark images)
        import logging

        first = f" (row 1 is {run_ids[0]!r}, row {len(run_ids):,} {run_ids[-1]!r})" if len(run_ids) else ""
        logging.getLogger("lbee").warning(
            "%s %r has no row ids beside it (%s or %s), so its rows are taken as the images in the order of %s%s. "
            "Write the images' ids there, one a line, and lbee checks every row.",
            name,
            Path(path).name,
            Path(path).stem + ROW_IDS_SUFFIX,
            ROW_IDS_NAME,
            against,
            first,
        )
        return
    if ids_sha256 is not None:
        import hashlib

        from .confinement import read_bytes_file

        if hashlib.sha256(read_bytes_file(ids_file, "row ids file")).hexdigest() != ids_sha256:
            raise ValueError(
                f"{ids_file} is not the row ids file written with {name} {str(path)!r}: its provenance records "
                "another (a file of another `lbee embed` run?); put back the ids.txt written with these embeddings, "
                "or re-embed with `lbee embed`."
            )
    listed = _read_ids(ids_file, path, name)
    fix = f"reorder {against} as {ids_file.name} lists, or re-embed its images with `lbee embed`"
    if from_folder:
        # a folder is read in sorted order and cannot be reordered: a manifest can (a twelfth user)
        fix = (  # embeddings of other images are likelier than a reordering (trial 41): re-embedding first
            f"re-embed the folder with `lbee embed`, or give a manifest instead of the folder (a CSV with a 'path' "
            f"column listing the images in the order {ids_file.name} lists them)"
        )
    if len(listed) != n_rows:
        raise ValueError(
            f"{ids_file} lists {len(listed)} image ids but {name} {str(path)!r} has {n_rows} rows; expected one "
            "id per row (the two files were written apart): re-embed with `lbee embed`."
        )
    ambiguous = _ambiguous_rows(listed, run_ids, images_folder)
    for r, (mine, theirs) in enumerate(zip(listed, run_ids)):
        if not same_image_id(mine, theirs) or r in ambiguous:
            raise ValueError(
                f"{name} {str(path)!r}: row {r + 1} is the image {mine!r} ({ids_file.name}, line {r + 1}) but "
                f"row {r + 1} of {against} is {str(theirs)!r}; expected the same images in the same order: {fix}."
            )
    if len(run_ids) != n_rows:
        raise ValueError(
            f"{name} {str(path)!r} has {n_rows} rows ({ids_file.name}) for {len(run_ids)} images ({against}); "
            f"expected one row per image: {fix}."
        )
    _check_same_files(path, listed, run_files or run_ids, name, against, images_folder, fix)


def _ambiguous_rows(listed, run_ids, images_folder=None):
    r"""The rows whose listed id matches the run's id by its end, but another image of the run better or as well.

    ``sub/i000.png`` listed against the run's ``i000.png`` fits it by its end, but is the run's ``sub/i000.png``: a
    folder holding one name at two depths, with its embeddings listing ``sub/`` first, passed row by row with half
    its rows swapped (sweep 32as B1). A row matches when it is the same id, or when of the run's images its id
    fits, the run's row is the one it shares the longest end with (``/data/sub/i000.png`` is ``sub/i000.png``).
    A backslash is read as a folder separator (ids written on Windows), so where two of the run's images differ
    only by it (``z/x.png`` and a file named ``z\x.png``, as unzip makes on Linux), only the same id matches
    either (sweep 32au B1). The run's ids are indexed by their ends: linear in the ids' depth (sweep 32au B4:
    20,000 images all named ``rgb.png``, listed with a prefix, took 147 s compared pairwise). A relative id listed
    is first read in ``images_folder`` (the provenance's), where the run names its images by absolute paths: ``a.png``
    is ``/d/a.png``, not ``/d/sub/a.png`` (sweep 32au N2).
    """
    from .matching import _posix

    exact, longer = {}, {}  # the run's ids by their form, and by (the hash of) each proper end at a folder boundary
    for i in run_ids:
        form = _posix(i)
        exact.setdefault(form, []).append(form)
        for start in _ends(form):
            longer.setdefault(hash(form[start:]), []).append(form)
    out = set()
    for r, (mine, theirs) in enumerate(zip(listed, run_ids)):
        if str(mine) == str(theirs):
            continue
        form, want = _posix(mine), _posix(theirs)
        if (
            images_folder
            and not form.startswith("/")
            and exact.get(f"{_posix(images_folder).rstrip('/')}/{form}") == [want]
        ):
            continue
        # the run's ids it shares its whole length with (itself, or ending with it); else its longest end there
        ending = longer.get(hash(form), ())  # a hash's other ids, if any, leave it ambiguous: refused, never wrong
        best = exact.get(form, []) + [c for c in ending[:2] if c.endswith("/" + form)]
        if not best:
            start = next((k for k in _ends(form) if form[k:] in exact), None)
            best = [] if start is None else exact[form[start:]]
        if best != [want] or len(ending) > 1:
            out.add(r)
    return out


#: The folders an id's end is matched over at most: a deeper end names no image, and the row is refused. It bounds
#: the index of ends (an id of 2,000 folders would otherwise add 2,000 ends of it).
END_DEPTH = 64


def _ends(form):
    """Where ``form``'s proper ends at a folder boundary start, longest first, the last `END_DEPTH` of them."""
    cuts = [k + 1 for k, ch in enumerate(form) if ch == "/"]
    return cuts[-END_DEPTH:]


def _read_ids(ids_file, path, name):
    """The ids ``ids_file`` lists, one a line (a final newline and blank lines after the last id dropped)."""
    try:
        from .confinement import read_text_file  # the file checked is the file read (a link swapped in: refused)

        text = read_text_file(ids_file, "row ids file", encoding="utf-8-sig")  # a byte-order mark is no part of an id
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"Cannot read the row ids of {name} {str(path)!r} ({ids_file}): {exc}") from None
    listed = [line.rstrip("\r") for line in text.split("\n")]
    while listed and listed[-1] == "":
        listed.pop()  # the final newline, and blank lines an editor left after it: no id is empty
    return listed


def unlisted_images(path, run_ids, name="image_embeddings", limit=3):
    """The first ``limit`` of ``run_ids`` that the ids file beside ``path`` does not list, and that file's name.

    None without an ids file. Said when the counts differ (a twenty-second user's extra image).
    """
    ids_file = row_ids_path(path, name)
    if ids_file is None:
        return None
    return _unmatched([str(i) for i in run_ids], _read_ids(ids_file, path, name), limit), ids_file.name


def missing_images(path, run_ids, name="image_embeddings", limit=3):
    """The first ``limit`` ids of the ids file beside ``path`` that are none of ``run_ids`` (the other way round).

    None without an ids file. Said when the counts differ: a thirty-seventh user deleted an image and read only
    "has shape (300, 256); expected (299, d)".
    """
    ids_file = row_ids_path(path, name)
    if ids_file is None:
        return None
    return _unmatched(_read_ids(ids_file, path, name), [str(i) for i in run_ids], limit), ids_file.name


def _unmatched(ids, others, limit):
    """The first ``limit`` of ``ids`` that match none of ``others`` (`same_image_id`), compared by file name first."""
    from pathlib import PurePosixPath

    from .matching import same_image_id

    by_name = {}
    for x in others:
        by_name.setdefault(PurePosixPath(x).name, []).append(x)
    out = []
    for i in ids:
        if not any(same_image_id(x, i) for x in by_name.get(PurePosixPath(i).name, ())):
            out.append(i)
            if len(out) == limit:
                break
    return out


def _differ(mine, theirs, read=True):
    """Whether two readable image files hold different content (False when either cannot be compared).

    ``read=False``: by their sizes alone.
    """
    import os

    from .images import MAX_IMAGE_BYTES, image_sha256

    def digest(p):  # read as every image is: a provenance naming /proc/self read a kernel file (sweep 24)
        try:
            return image_sha256(p)
        except ValueError:  # not an image file (a kernel file, a device): its content is not read
            return None

    try:
        if not (os.path.isfile(mine) and os.path.isfile(theirs)) or os.path.samefile(mine, theirs):
            return False
        sizes = os.stat(mine).st_size, os.stat(theirs).st_size
        if max(sizes) > MAX_IMAGE_BYTES:  # never hash a 20 GB (sparse) file whole: lbee reads no such image
            return False
        if sizes[0] != sizes[1]:
            return True
        return read and None not in (a := digest(mine), b := digest(theirs)) and a != b
    except OSError:  # unreadable: the names were checked, the content cannot be
        return False


def _check_same_files(path, listed, run_ids, name, against, images_folder, fix):
    """Refuse rows whose embedded image and the run's image are two readable files of different content.

    A listed id that is the path of a file here names that file, as a table's id does (`lbee.io.matching`): every
    such row is compared (sweep 32bb: an ids.txt of another folder's absolute paths matched the run's images by
    their names). The others, relative to the embedded images' folder, on `CONTENT_CHECKS` rows.
    """
    import os

    from .confinement import data_root
    from .matching import file_here

    def differs(r, mine, theirs, read=True):
        if _differ(mine, theirs, read):
            raise ValueError(
                f"{name} {str(path)!r}: row {r + 1} was embedded from {str(mine)!r} but row {r + 1} of "
                f"{against} is {str(theirs)!r}, another image (the two files differ); expected the embeddings of "
                "these images: re-embed them with `lbee embed`."
            )

    confined, alike = data_root() is not None, []
    for r, (mine, theirs) in enumerate(zip(listed, run_ids)):
        if os.path.isabs(mine) or mine[:5].lower() == "file:":  # (a cheap test before any stat)
            there, own = file_here(mine), str(theirs)
            own = file_here(own) if os.path.isabs(own) else None if confined else own  # the run's image file
            if there is not None and own:
                differs(r, there, own, read=False)  # every row by its size; its content on a few (sweep 32bc:
                alike.append((r, there, own))  # 200,000 copies of the run's images took 38 s to hash whole)
    for r, there, own in alike[:: max(1, len(alike) // CONTENT_CHECKS)]:
        differs(r, there, own)
    if images_folder is None or confined or not listed:
        return
    step = max(1, len(listed) // CONTENT_CHECKS)
    for r in range(0, len(listed), step):
        differs(r, Path(images_folder) / listed[r], Path(str(run_ids[r])))


#: The sentences beside sentence embeddings, one a line (what ``lbee embed`` writes).
SENTENCE_ROWS_NAME = "sentences.txt"


def check_sentence_rows(path, sentences, name="sentence_embeddings"):
    """Refuse sentence embeddings whose ``sentences.txt`` beside them lists other sentences than the run's, in order.

    Returns whether there was such a file to check them against.

    Without their provenance record, nothing else says which sentence each row embeds: a reordered sentence file
    was paired with ``lbee embed``'s rows in silence (sweep 32). The file ``lbee embed`` writes beside them names
    the rows; when it is there it must be the run's sentences, in order (a blank or ``#`` line is no row).
    """
    from .confinement import read_text_file, sidecar
    from .sentences import parse_sentences

    path = Path(path)
    found = sidecar(
        path.with_name(SENTENCE_ROWS_NAME), of=f"{name} {str(path)!r}", what="sentence rows file", beside=path
    )
    if found is None:
        return False
    rows, _ = parse_sentences(read_text_file(found, "sentence rows file"), str(found))
    wanted = [str(s).strip() for s in sentences]
    if rows == wanted:
        return True
    r = next((i for i, (a, b) in enumerate(zip(rows, wanted), start=1) if a != b), min(len(rows), len(wanted)) + 1)
    said = rows[r - 1] if r <= len(rows) else "(none)"
    want = wanted[r - 1] if r <= len(wanted) else "(none)"
    raise ValueError(
        f"{name} {str(path)!r}: {found.name} beside it names its rows, and row {r} is {said!r} where the run's "
        f"sentence {r} is {want!r} ({len(rows)} rows for {len(wanted)} sentences); embed the run's sentences in "
        f"their order (`lbee embed --sentences`), or remove {found.name} if it does not name these rows."
    )
