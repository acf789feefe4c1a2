"""``GET /metrics``: the service's state in Prometheus text format, read from the database at each scrape.

Metrics: ``lbee_jobs{status}`` (jobs by status), ``lbee_job_queue_length``
(queued jobs), ``lbee_job_duration_seconds`` (histogram of finished jobs'
start-to-end time, the last 10,000), ``lbee_runs`` (stored runs),
``lbee_job_workers`` (live job worker processes) and
``lbee_explain_requests_in_progress``.
"""

from __future__ import annotations

#: Histogram buckets of job durations, in seconds.
DURATION_BUCKETS = (1, 5, 15, 60, 300, 900, 3600, 4 * 3600)
#: Finished jobs whose durations feed the histogram (the latest ones).
DURATION_WINDOW = 10_000


class _Collector:
    def __init__(self, ctx):
        self.ctx = ctx

    def collect(self):
        from prometheus_client.core import GaugeMetricFamily, HistogramMetricFamily
        from sqlalchemy import func, select

        from .db import JOB_STATES, Job, Run

        db = self.ctx.db
        with db.session() as s:
            counts = dict(s.execute(select(Job.status, func.count()).group_by(Job.status)).all())
            n_runs = s.scalar(select(func.count()).select_from(Run))
            spans = s.execute(
                select(Job.started, Job.finished)
                .where(
                    Job.status.in_(("done", "failed", "cancelled")), Job.started.is_not(None), Job.finished.is_not(None)
                )
                .order_by(Job.finished.desc())
                .limit(DURATION_WINDOW)
            ).all()
        jobs = GaugeMetricFamily("lbee_jobs", "Jobs by status.", labels=["status"])
        for status in JOB_STATES:
            jobs.add_metric([status], counts.get(status, 0))
        yield jobs
        yield GaugeMetricFamily("lbee_job_queue_length", "Jobs waiting for a worker.", value=counts.get("queued", 0))
        seconds = [max(0.0, (end - start).total_seconds()) for start, end in spans]
        buckets = [(str(b), sum(x <= b for x in seconds)) for b in DURATION_BUCKETS] + [("+Inf", len(seconds))]
        yield HistogramMetricFamily(
            "lbee_job_duration_seconds", "Start-to-end time of finished jobs.", buckets=buckets, sum_value=sum(seconds)
        )
        yield GaugeMetricFamily("lbee_runs", "Stored runs.", value=n_runs)
        runner, pool = self.ctx.runner, self.ctx.explain_pool
        yield GaugeMetricFamily(
            "lbee_job_workers", "Live job worker processes.", value=len(runner.pids()) if runner is not None else 0
        )
        yield GaugeMetricFamily(
            "lbee_explain_requests_in_progress",
            "POST /v1/explain requests running or waiting.",
            value=pool.busy if pool is not None else 0,
        )


def render(ctx):
    """(bytes, content type) of one scrape."""
    from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Collector(ctx))
    return generate_latest(registry), CONTENT_TYPE_LATEST
