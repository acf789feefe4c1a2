"""``lbee serve``: the error-explanation service (FastAPI + SQLAlchemy), built on the run layer.

``create_app(ServiceSettings(root=...))`` gives the application; jobs run
`lbee.reports.batch.run_dataset` in worker processes (`lbee.service.jobs`).
FastAPI, SQLAlchemy and uvicorn are imported only when the service is used
(the ``serve`` extra: `lbee.extras.install_command` names the command).
"""

from .settings import ServiceSettings


def create_app(settings, **kwargs):
    """The FastAPI application; see `lbee.service.app.create_app`."""
    from ..extras import require_extra

    require_extra("serve", needed_for="lbee serve")  # every module it lacks, named at once
    from .app import create_app as _create_app

    return _create_app(settings, **kwargs)


__all__ = ["ServiceSettings", "create_app"]
