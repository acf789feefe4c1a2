"""What the client reads and says without a server: a job entry, a job's progress, a run's confirmed statements.

The client (`lbee.service.client`) and ``lbee submit`` use these: the entry from its file, the progress in
words, the statements from a run's ``explanation.json``.
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path


def describe_progress(job, t0=None):
    """One line for a job's state: ``[12 s] running · embedding images 40% (1200 of 3000)``."""
    when = "" if t0 is None else f"[{time.monotonic() - t0:4.0f} s] "
    phase, fraction = job.get("phase") or job["status"], job.get("fraction")
    line = f"{when}{job['status']}"
    if phase != job["status"]:
        line += f" · {phase}"
    detail = job.get("progress") or ""
    if fraction == 0 and detail.startswith(phase + ": 0 of "):  # a phase just begun: its size, not a 0 % that a
        return line + f" ({detail.rsplit(' of ', 1)[1]} to do)"  # fast phase never updates before the next
    if fraction is not None:
        line += f" {100 * fraction:.0f}%"
    if detail and detail != phase and not detail.startswith(phase + ":"):
        line += f" · {detail}"
    elif detail.startswith(phase + ":"):
        line += f" ({detail[len(phase) + 1 :].strip()})"
    return line


def progress_lines(job, seen, t0=None):
    """The lines to print for a job's new state: the phases it passed between two polls, then `describe_progress`.

    ``seen`` (a set, updated) holds the phases already shown; the job's log names every phase it entered
    (`lbee.service.job_progress.PHASE_LINE`), so a phase shorter than a poll is still said, in order.
    """
    out = []
    for phase in missed_phases(job, seen):
        when = "" if t0 is None else f"[{time.monotonic() - t0:4.0f} s] "
        out.append(f"{when}running · {phase}")  # it was running then, whatever it is now
    out.append(describe_progress(job, t0))
    return out


def missed_phases(job, seen):
    """The phases the job's log names that ``seen`` (a set, updated) lacks, in order, before its current one."""
    from .job_progress import PHASE_LINE

    current = job.get("phase") or job["status"]
    logged = [line[len(PHASE_LINE) :] for line in job.get("log") or () if line.startswith(PHASE_LINE)]
    if current in logged:  # the log names a phase before the job's row does: a later one waits for the next poll
        logged = logged[: logged.index(current)]
    out = [p for p in dict.fromkeys(logged) if p not in seen and p != current]
    seen.update(out)
    seen.add(current)
    return out


#: What `confirmed_statements` gives of each statement, besides whether it adds a failure.
def confirmed_statements(explanation):
    """A run's confirmed statements, strongest first, from its ``explanation.json`` (a dict).

    Each is a dict: ``text``, ``n_in`` (held-out images it holds for), ``error_rate_in``, ``error_rate_out``,
    ``lift``, ``effect_low``, ``q_value``, ``region`` ('relevance': it holds by the given Γ; 'encoder'), and
    ``adds_failure``: False for one that confirms only as a companion
    of a stronger statement (a condition that goes with a failure; ``goes_with`` then names the strongest). An
    eleventh user had only the whole explanation, whose confirmation block begins with the held-out indices.
    []: nothing confirmed, or the run did not confirm (``explanation["confirmation"]["status"]`` says why).
    A ``ValueError`` for an explanation edited since it was written (its ``content_sha256``) or a confirmation
    block lbee did not write (`lbee.run.confirmation_record`).
    """
    from ..core.explanation_payload import content_digest
    from ..run.confirm_text import ranked_statements
    from ..run.confirmation_record import check_confirmation_record

    if not isinstance(explanation, dict):
        raise ValueError(f"the explanation is a {type(explanation).__name__}; expected the object of explanation.json")
    recorded = explanation.get("content_sha256")
    if recorded is not None and recorded != content_digest(explanation):  # as the loader refuses it
        raise ValueError(
            "the explanation's content differs from what it was written with (content_sha256): it was edited"
        )
    sizes = None
    if "methods" in explanation:  # a whole explanation.json: its groups' sizes, as the loader reads them
        from ..core.explanation_payload import validate_explanation_payload

        exps = validate_explanation_payload(explanation, source="the explanation")
        sizes = [len(c.indices) for c in next(iter(exps.values())).hard_clusters] if exps else None
    check_confirmation_record(explanation, "the explanation", None if sizes is None else len(sizes), sizes)
    try:
        return ranked_statements(explanation.get("confirmation") or {})
    except (TypeError, KeyError, IndexError, AttributeError):  # an answer no lbee wrote: said, not a traceback
        raise ValueError(
            "the explanation's 'confirmation' is not one lbee writes (its 'ranked' statements cannot be read)"
        ) from None


def read_entry(path):
    """One dataset entry from a YAML or JSON file (as ``lbee report``'s ``datasets:`` items are written).

    Raises
    ------
    ValueError
        The file is not a mapping, or is a whole ``lbee report`` config (with ``datasets:``).
    """
    import yaml

    from .._yaml import YAMLLimitError, load_yaml
    from ..io.confinement import MAX_CONFIG_BYTES, check_regular_file, read_text_file

    path = Path(path)
    check_regular_file(path, "The job entry")  # /dev/zero would never end, a FIFO block
    try:  # lbee's bounded reader: an alias bomb is refused before it is built
        entry = load_yaml(read_text_file(path, "The job entry", limit=MAX_CONFIG_BYTES), source=str(path))
    except (OSError, UnicodeDecodeError, yaml.YAMLError, YAMLLimitError, ValueError) as exc:
        raise ValueError(f"Cannot read the job entry {str(path)!r}: {exc}") from None
    return _checked_entry(entry, str(path))


def is_entry_text(entry):
    """Whether the string `Client.submit` was given is an entry's YAML / JSON text rather than a file's path.

    Several lines, a JSON object, or one ``key: value`` line that names no file (``"name: demo"``; trial 39 passed
    it and read "does not exist").
    """
    first = entry.lstrip()
    return (
        "\n" in entry
        or first.startswith("{")
        or (re.match(r"[\w-]+: ", first) is not None and not os.path.lexists(entry))  # (never raises: a long line)
    )


def entry_from_text(text):
    """One dataset entry from YAML or JSON text (`read_entry`'s rules): ``client.submit(open(f).read())`` (trial 39).

    Raises
    ------
    ValueError
        The text is not one dataset entry.
    """
    import yaml

    from .._yaml import YAMLLimitError, load_yaml
    from ..io.confinement import MAX_CONFIG_BYTES

    if len(text) > MAX_CONFIG_BYTES:
        raise ValueError(f"The job entry's text is {len(text):,} characters; expected at most {MAX_CONFIG_BYTES:,}.")
    try:
        entry = load_yaml(text, source="the job entry's text")
    except (yaml.YAMLError, YAMLLimitError, ValueError) as exc:
        raise ValueError(f"Cannot read the job entry's text: {exc}") from None
    return _checked_entry(entry, "the entry text")


def _checked_entry(entry, path):
    """``entry`` when it is one dataset entry JSON can carry, read from ``path`` (a file name or what it was)."""
    if isinstance(entry, dict) and "datasets" in entry:
        raise ValueError(
            f"{path!r} is a `lbee report` config (it has `datasets:`); a job is one dataset entry: put one "
            "item of its `datasets:` list (with the settings it needs) in a file of its own."
        )
    if not isinstance(entry, dict):
        raise ValueError(
            f"{path!r} holds a {type(entry).__name__}; expected one dataset entry, a mapping such as "
            "{name: demo, spotcheck: {seed: 0}}."
        )
    where, value = _not_json(entry)
    if where is not None:  # YAML reads 2024-01-01 as a date, !!binary as bytes: a job is JSON
        raise ValueError(
            f"{path!r}: `{where}` is {value!r}, which YAML reads as a {type(value).__name__}; a job entry holds "
            "text, numbers, true / false, lists and mappings (quote it: '...')."
        )
    return entry


def _not_json(value, where=""):
    """The first key path whose value JSON cannot carry, and that value; (None, None) when all can."""
    if isinstance(value, dict):
        for k, v in value.items():
            if not isinstance(k, str):
                return (f"{where}.{k}" if where else str(k)), k
            found = _not_json(v, f"{where}.{k}" if where else k)
            if found[0] is not None:
                return found
        return None, None
    if isinstance(value, list):
        for i, v in enumerate(value):
            found = _not_json(v, f"{where}[{i}]")
            if found[0] is not None:
                return found
        return None, None
    if value is None or isinstance(value, (str, bool, int, float)):
        return None, None
    return where, value


def check_fetched(stage):
    """Refuse result files no lbee wrote: read back as `lbee export spotlight` and `lbee serve` read a run folder.

    A malformed server's ``{not json`` explanation and garbage parquet were written with exit status 0 (sweep 32r).
    """
    import json

    from ..reports.stored_table import stored_images_table
    from ..run.stored import load_explanations
    from .client import ServiceError

    try:
        load_explanations(stage / "explanation.json")
        stored_images_table(stage)  # the table, checked against the explanation (its rows and its digest)
        metrics = json.loads((stage / "metrics.json").read_text(encoding="utf-8"))
        rows = metrics.get("metrics") if isinstance(metrics, dict) else None
        if type(metrics.get("id") if isinstance(metrics, dict) else None) is not int or not isinstance(rows, list):
            raise ValueError("metrics.json is no run record (expected lbee serve's: its id and its metric rows)")
        if not all(isinstance(r, dict) and isinstance(r.get("method"), str) for r in rows):  # [1, 2] was kept (32t)
            raise ValueError("metrics.json holds a row that is no metric row (expected a method and its scores)")
    except RecursionError:  # a JSON nested thousands deep
        raise ServiceError(
            "the server's answer is not an lbee run's result files (nested too deep); nothing was written"
        ) from None
    except (ValueError, OSError) as exc:
        said = str(exc).replace(str(stage), "the fetched files")
        raise ServiceError(
            f"the server's answer is not an lbee run's result files ({said}); nothing was written"
        ) from None
