"""What a torch file must be before torch loads it: stored, not sparse, and the kind of file it is said to be.

A state dict (``--weights``, a SpotCheck world's classifier, an open_clip checkpoint) is loaded with
``weights_only=True``; a TorchScript model (``--model FILE``) with ``torch.jit.load``. Either is checked first, so
that a small file cannot inflate to gigabytes, and a file of the other kind is named as what it is.
"""

from __future__ import annotations


def check_stored_zip(path, what="`weights`", name=None):
    """Refuse a torch zip archive with compressed entries, or a sparse file: either is gigabytes when loaded.

    ``torch.save`` writes its entries stored (uncompressed), so a state dict a model was saved as passes; the
    legacy (non-zip) format is read as it is. ``name``: how the message names the file (``path`` may be a pinned
    descriptor's).
    """
    import zipfile

    from .._files import refuse_sparse

    refuse_sparse(path, what, name)  # a state dict of holes: 364 KB on disk made torch.load read 3 GB
    if not zipfile.is_zipfile(path):
        return
    import os

    with zipfile.ZipFile(path) as archive:
        infos = archive.infolist()
        packed = [i.filename for i in infos if i.compress_type != zipfile.ZIP_STORED]
    held = sum(i.file_size for i in infos)
    if not packed and held > os.path.getsize(path):  # entries stored over one another: each is loaded apart
        raise ValueError(
            f"{what} {str(name or path)!r} lists {held:,} bytes of stored entries in a file of "
            f"{os.path.getsize(path):,}: its entries overlap, and loading it would take far more than its size; "
            "save the state dict with torch.save."
        )
    if packed:
        raise ValueError(
            f"{what} {str(name or path)!r} has compressed entries ({packed[0]!r}, ...): a compressed archive can "
            "inflate far beyond its size when loaded; save the state dict with torch.save, which stores them."
        )


#: The most bytes the compressed entries of a TorchScript file may inflate to (its code and pickles: kilobytes).
MAX_SCRIPT_INFLATED = 64 << 20


def torchscript_entries(path):
    """Whether ``path`` is a TorchScript archive (a zip with a ``code/`` folder, as ``torch.jit.save`` writes)."""
    import zipfile

    if not zipfile.is_zipfile(path):
        return False
    with zipfile.ZipFile(path) as archive:
        return any("/code/" in f"/{name}" for name in archive.namelist())


def check_torchscript_zip(path, name=None):
    """Refuse a file that is no TorchScript archive, or one whose compressed entries inflate too far.

    Beyond `MAX_SCRIPT_INFLATED`: a 975 KB file of one deflated 1 GB buffer added 640 MB when loaded.
    """
    import zipfile

    from .._files import refuse_sparse

    shown = str(name or path)
    refuse_sparse(path, "TorchScript model", name)
    if not torchscript_entries(path):
        hint = (
            "a file saved with torch.save (a state dict) goes with --model torchvision:ARCH (or timm:ARCH) "
            "--weights FILE"
            if zipfile.is_zipfile(path)
            else "a legacy torch.save file or a pickle is not a model lbee loads"
        )
        raise ValueError(f"{shown!r} is not a TorchScript file (a zip written by torch.jit.save); {hint}.")
    import os

    with zipfile.ZipFile(path) as archive:
        infos = archive.infolist()
    inflated = sum(i.file_size for i in infos if i.compress_type != zipfile.ZIP_STORED)
    stored = sum(i.file_size for i in infos if i.compress_type == zipfile.ZIP_STORED)
    if stored > os.path.getsize(path):  # entries stored over one another: each is loaded apart (sweep 26: 64x)
        raise ValueError(
            f"TorchScript model {shown!r} lists {stored:,} bytes of stored entries in a file of "
            f"{os.path.getsize(path):,}: its entries overlap, and loading it would take far more than its size."
        )
    if inflated > MAX_SCRIPT_INFLATED:
        raise ValueError(
            f"TorchScript model {shown!r} has compressed entries that inflate to {inflated:,} bytes; torch.jit.save "
            f"stores tensors uncompressed and compresses only code (at most {MAX_SCRIPT_INFLATED:,} bytes here)."
        )


def load_error_line(exc):
    """What a failed ``torch.load`` says, in one line.

    torch's advice to load unsafely (``weights_only=False``) is never passed on to a user.
    """
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    first = lines[0] if lines else type(exc).__name__
    if "weights_only" in first or "Weights only" in first:
        return "not a plain state dict of tensors"
    if "%ld" in first:  # torch's unformatted C message ("expected %ld got %ld4938...", sweep 22): what it is about
        first = first.split(":", 1)[0]
    if first.endswith(":") and len(lines) > 1:  # "Error(s) in loading state_dict for X:" says its errors next
        first = f"{first} {lines[1]}"[:500]
    return "".join(c for c in first if c.isprintable())  # torch's own terminal escapes (bold) never reach a user
