"""Every image of a stored run's hypotheses in ``lbee serve``: paged group pages, their JSON, the thumbnails.

The rows come from the run's folder (`lbee.reports.stored_table.stored_images_table`); a thumbnail is made from
the stored image file, which must lie inside the server's data root or the run's own folder.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from fastapi import HTTPException, Query, Request
from fastapi import Path as PathParam
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from pydantic import BeforeValidator

from .settings import MAX_ID


def _ascii_decimal(value, what="an integer in ASCII decimal digits"):
    """An integer parameter as ASCII decimal digits only: int() would read '1_0' as 10 and '１' as 1."""
    import re

    if isinstance(value, str) and not re.fullmatch(r"-?[0-9]{1,19}", value):
        raise ValueError(f"expected {what}")
    return value


def _group_number(value):
    return _ascii_decimal(value, "a group number as the report shows it, or -1 for the hard images in no hypothesis")


_DIGITS = BeforeValidator(_ascii_decimal)
#: The integer path and query parameters, in ASCII decimal digits (lbee's rule for numbers read from text).
RunId = Annotated[int, _DIGITS, PathParam(ge=1, le=MAX_ID, description="A run id (from /v1/runs).")]
Group = Annotated[
    int,
    BeforeValidator(_group_number),
    PathParam(ge=-1, le=MAX_ID, description="A hard group (hypothesis) of a run; -1: its hard images in no hypothesis"),
]
Page = Annotated[int, _DIGITS, Query(ge=1, le=MAX_ID, description="A 1-based page of the group's images.")]
ImageIndex = Annotated[
    int, _DIGITS, PathParam(ge=0, le=MAX_ID, description="An image of the run (a row of its per-image table).")
]


def add_browse_routes(app, ctx):
    """Add ``/runs/{id}/groups/{g}`` (page), ``/v1/runs/{id}/groups/{g}/images`` and the image thumbnails."""
    from ..reports.browse import BROWSE_SORTS
    from ..reports.group_page import group_page
    from ..reports.stored_table import RUN_FILES, stored_images_table

    settings, templates, read = ctx.settings, ctx.templates, ctx.read

    def table_of(run):
        from .paths import run_folder

        folder = run_folder(settings.output, run.folder)
        if folder is None:
            raise HTTPException(404, f"the folder of run {run.id} is missing from the output folder.")
        for name in RUN_FILES:  # a file linked out of the run's folder is never opened (its content would be quoted)
            path = folder / name
            if path.is_symlink() and not path.resolve().is_relative_to(folder):
                raise HTTPException(404, f"{name} of run {run.id} leads out of the run's folder: it is not read.")
        ctx.check_own(run)  # never another run's files put in its folder (sweep 32v)
        try:
            return folder, stored_images_table(folder)
        except ValueError as exc:
            from .paths import redact_paths

            detail = redact_paths(f"run {run.id} has no per-image table: {exc}", settings)  # no server path
            raise HTTPException(404, detail) from None

    def page_of(run_id, group, page, sort, pair=None):
        run = ctx.run(run_id)
        folder, table = table_of(run)
        try:
            return run, table, group_page(table, group, page=page, sort=sort, pair=pair)
        except ValueError as exc:
            raise HTTPException(404 if "`group`" in str(exc) or "`page`" in str(exc) else 422, str(exc)) from None

    @app.get("/v1/runs/{run_id}/groups/{group}/images", tags=["runs"])
    def group_images(
        run_id: RunId,
        group: Group,
        page: Page = 1,
        sort: str = Query("confidence", max_length=40, description=f"One of {', '.join(BROWSE_SORTS)}."),
        pair: str | None = Query(None, max_length=1000, description="Only one 'label → prediction' of the group."),
        token=read,
    ):
        """One page of a hard group's images, with the group's sentence and ``page`` / ``n_pages`` / ``n``.

        Each row: image, split, group, sentence, holds, confidence, performance, label, prediction, ``thumbnail``.
        """
        _, _, out = page_of(run_id, group, page, sort, pair)
        for r in out["rows"]:
            r["thumbnail"] = f"/v1/runs/{run_id}/images/{r['index']}/thumbnail"
        return out

    @app.get("/v1/runs/{run_id}/images/{index}/thumbnail", tags=["runs"])
    async def thumbnail(run_id: RunId, index: ImageIndex, token=read):
        """A JPEG thumbnail of image ``index`` of the run, made from its stored file."""
        return await run_in_threadpool(_thumbnail, run_id, index)

    def _thumbnail(run_id, index):
        from ..io.images import ImageFile
        from ..reports.thumbnails import ThumbnailCache

        folder, table = table_of(ctx.run(run_id))
        if index >= len(table):
            raise HTTPException(404, f"run {run_id} has {len(table)} images; no image {index}.")
        row = table.iloc[index]
        path = image_file(row, folder, settings.root)
        digest = row.get("image_sha256")  # the bytes the run read: a file changed since gets no thumbnail (32r)
        cache = ThumbnailCache(settings.cache_dir)
        data = None if path is None else cache.jpeg(ImageFile(str(path), digest if isinstance(digest, str) else None))
        if data is None:
            changed = " (its file changed since the run read it)" if cache.n_changed else ""
            raise HTTPException(404, f"image {index} of run {run_id} is not readable from the stored files{changed}.")
        return Response(data, media_type="image/jpeg", headers={"Cache-Control": "private, max-age=86400"})

    @app.get("/runs/{run_id}/groups/{group}", response_class=HTMLResponse, include_in_schema=False)
    def group_html(
        request: Request,
        run_id: RunId,
        group: Group,
        page: Page = 1,
        sort: str = Query("confidence", max_length=40),
        pair: str | None = Query(None, max_length=1000),
    ):
        if ctx.page_token(request) is None:
            return RedirectResponse("/login", status_code=303)
        run, table, out = page_of(run_id, group, page, sort, pair)
        hard = table[table["split"] == "hard"]
        groups = sorted(
            ((int(g), int(n)) for g, n in hard.groupby("group").size().items()), key=lambda t: (t[0] < 0, t[0])
        )
        omega = hard.loc[hard["group"] == group, "performance"].astype(float)
        rate = (  # as the report's group header says it: an error rate for 0/1 correctness, else the mean ω
            f"error rate {1 - omega.mean():.2f}"
            if omega.isin((0.0, 1.0)).all()
            else f"mean performance {omega.mean():.3f}"
        )
        return templates.get_template("browse.html").render(
            run=run,
            group=group,
            rate=rate,
            p=out,
            sort=sort,
            sorts=BROWSE_SORTS,
            groups=groups,
            random=_random_weights_banner(run),
        )

    def _random_weights_banner(run):
        """The run list's banner on a group page of a run whose job asked for random weights (else None)."""
        import json

        from ..run.identity import RANDOM_WEIGHTS_BANNER, is_random_spec

        job, _ = ctx.job(run.job_id)
        spec = json.loads(job.entry or "{}").get("encoder")
        if not (isinstance(spec, str) and is_random_spec(spec)):
            return None
        return RANDOM_WEIGHTS_BANNER.format(encoder=spec)


def image_file(row, run_folder, root):
    """The stored image file of a row inside ``root`` or ``run_folder``; None when there is none.

    The row's recorded path, else its image id relative to the run folder (the demo's ``ec/images/test/...``).
    """
    for candidate in (row["path"], row["image"]):
        if not isinstance(candidate, str) or not candidate:
            continue
        p = Path(candidate)
        p = (p if p.is_absolute() else run_folder / p).resolve()
        if (p.is_relative_to(root) or p.is_relative_to(run_folder)) and p.is_file():
            return p
    return None
