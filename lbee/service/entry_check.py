"""A job entry file checked as the service will read it: `entry_file_problems` (``lbee report --check --root``).

``lbee report --check ENTRY.yaml`` resolves an entry's paths against the file's folder, while ``lbee serve``
resolves a job's against its ``--root`` and confines them there: a thirtieth user's entry, kept outside the root,
got five false "path does not exist" before submitting one that then ran. Given the server's root, the check reads
each entry as a submitted job is read (`lbee.service.jobs.validate_entry`, every path confined to the root), then
its tables, manifest and sentence set as the worker reads them first (`lbee.reports.batch.config_problems`).
"""

from __future__ import annotations

from pathlib import Path


def entry_file_problems(path, root, allowed_encoders=()):
    """Every problem a server with ``--root root`` would find in the job entries of file ``path``.

    Parameters
    ----------
    path : path-like
        One dataset entry (what ``lbee submit`` sends), or a config whose ``datasets`` are each a job.
    root : path-like
        The server's data folder.
    allowed_encoders : tuple of str, default=()
        Encoder specs the server allows beyond its defaults (``lbee serve --allow-encoder``).

    Returns
    -------
    (list of str, int)
        The problems, and the number of entries checked.

    Raises
    ------
    lbee.reports.config.ConfigError
        The file is unreadable, not YAML, or holds no entry.
    """
    from ..reports.batch import config_problems
    from ..reports.config import ConfigError, ReportConfig, read_config_data
    from ..run.specs import DatasetSpec
    from .jobs import validate_entry

    path, root = Path(path), Path(root).resolve()
    entries = read_config_data(path).get("datasets")
    if not isinstance(entries, list) or not entries:
        raise ConfigError(f"{path}: no dataset entry to check (a mapping with 'name', or a config's 'datasets').")
    datasets = []
    for i, entry in enumerate(entries):
        name = str(entry.get("name") or f"dataset_{i}") if isinstance(entry, dict) else f"dataset_{i}"
        try:
            datasets.append(validate_entry(entry, root, allowed_encoders, deep=True))
        except ValueError as exc:  # a PathEscape is one: a path outside the root
            datasets.append(DatasetSpec(name=name, error=f"{path}: dataset {name!r}, read under --root {root}: {exc}"))
    return config_problems(ReportConfig(path, root, None, datasets), output=False), len(datasets)
