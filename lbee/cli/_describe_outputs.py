"""What ``lbee describe`` writes beside the run's explanation: the report page and the metrics against Γ."""

from __future__ import annotations

from ._base import LbeeError


def metrics_rows(run, ds, model):
    """AHR / ACR / TPR / JI of each slicer and method against the run's Γ: the rows a `lbee report` page has."""
    from ..reports.report_run import report_run_of

    return report_run_of(run, ds, model).metrics()


def metrics_csv(rows):
    """``metrics.csv``'s bytes: one row per slicer and method."""
    import pandas as pd

    return pd.DataFrame(rows).to_csv(index=False).encode()


def write_html(ctx, run, ds, model, out):
    """report.html through the same function as `lbee report` (lbee.reports.batch.write_report_page)."""
    from ..reports.batch import write_report_page
    from ..reports.thumbnails import ThumbnailCache

    try:
        write_report_page(run, ds, model, out, thumbs=ThumbnailCache(ctx.obj["cache_dir"]))
    except OSError as exc:
        raise LbeeError(f"Cannot write report.html into {out!r}: {exc}") from None
