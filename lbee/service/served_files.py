"""What a client fetches of a stored run: its per-image table without server paths, and an explanation that agrees.

A run's ``images.parquet`` names each image's file by its absolute path on the server. Served, that path is made
relative to the data root (as the job named it; empty for an image outside the root), so no server path leaves
the service. The run's ``explanation.json`` records the table's digest (``images_sha256``), so the explanation is
served recording the digest of the table as served, its content digest renewed: a fetched copy is one run's files,
which ``lbee export spotlight`` opens (a sweep found it refused as "edited").
"""

from __future__ import annotations

import io
import json
from pathlib import Path


def served_images_table(folder, settings):
    """The run's per-image table as served: a DataFrame whose ``path`` is inside the data root (or None).

    Raises
    ------
    ValueError
        The stored table disagrees with the run's explanation (`lbee.reports.stored_table.stored_images_table`).
    """
    from ..reports.stored_table import stored_images_table
    from .paths import inside_root

    table = stored_images_table(Path(folder))
    table["path"] = [inside_root(p, settings) for p in table["path"]]
    return table


def parquet_bytes(table):
    """``table`` as the bytes of a parquet file."""
    body = io.BytesIO()
    table.to_parquet(body, index=False)
    return body.getvalue()


def served_explanation(path, settings, raw=None):
    """The bytes of the run's ``explanation.json`` as served (checked by the caller; ``raw``: the bytes it read).

    When it records its per-image table's digest and the table is beside it, the digest is that of the table as
    `served_images_table` serves it, and the content digest is renewed; otherwise the file's own bytes.
    """
    from .._files import read_bytes_file
    from ..core.explanation_payload import content_digest
    from ..reports.stored_table import IMAGES_TABLE
    from ..run.outputs import table_digest

    path = Path(path)
    if raw is None:  # through the descriptor checked: a FIFO swapped in never blocks
        raw = read_bytes_file(path, "Explanation file")
    payload = json.loads(raw)
    if not isinstance(payload, dict) or "images_sha256" not in payload or not (path.parent / IMAGES_TABLE).is_file():
        return raw
    from ..reports.browse import TABLE_COLUMNS

    payload["images_sha256"] = table_digest(served_images_table(path.parent, settings), TABLE_COLUMNS)
    payload["content_sha256"] = content_digest(payload)
    return json.dumps(payload, separators=(",", ":")).encode()
