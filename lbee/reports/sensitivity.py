"""The HTML report's region-sensitivity panel (RIVAL10 §5): RFS curve, per-class bars, least aligned images."""

from __future__ import annotations

import base64
import html
import json
from pathlib import Path

import numpy as np

#: The largest sensitivity summary read: lbee writes a few kB (a sparse 8 GB file was read whole).
MAX_SUMMARY_BYTES = 16 << 20


def _png_img(data, alt):
    return (
        f'<img alt="{html.escape(alt)}" style="max-width:100%" '
        f'src="data:image/png;base64,{base64.b64encode(data).decode("ascii")}">'
    )


def _class_bars(summary):
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    from ..analyses.sensitivity_outputs import drawn_classes, figure_bytes

    classes = drawn_classes(summary)  # at most CLASSES_DRAWN: the lowest mean RFS when there are more
    vals = [summary["per_class"][c]["rfs_mean"] for c in classes]
    fig, ax = plt.subplots(figsize=(max(3.5, 0.5 * len(classes) + 1), 2.8))
    ax.bar(
        range(len(classes)),
        [np.nan if v is None else v for v in vals],
        color=["#c0392b" if v is not None and v < 0 else "#2e86c1" for v in vals],
    )
    ax.set_xticks(range(len(classes)))
    ax.set_xticklabels(classes, rotation=45, ha="right", fontsize=8)
    ax.axhline(0, color="grey", lw=0.6)
    ax.set_ylim(-1, 1)
    ax.set_ylabel("RFS (mean over σ)")
    return figure_bytes(fig)


def sensitivity_panel_html(summary, *, saliency=None, n_least=8, thumbnails=None, title="Region sensitivity"):
    """A self-contained HTML fragment (a ``<section>``) for a sensitivity run.

    Parameters
    ----------
    summary : dict or path-like
        ``summary.json`` of ``lbee sensitivity`` (or the dict), or the folder holding it.
    saliency : pandas.DataFrame or path-like, optional
        ``saliency.csv``; its least-aligned rows are listed (or a folder holding it).
        When ``summary`` is a folder and this is None, ``saliency.csv`` beside it is used if present.
    n_least : int, default=8
        Rows of the least-aligned list.
    thumbnails : callable, optional
        ``thumbnails(image_id) -> str or None``: an ``<img>`` data URI for an image
        id (e.g. from the report's thumbnail cache); None leaves the list text-only.
    title : str

    Returns
    -------
    str
        HTML with every text escaped and figures inlined as PNG data URIs.
    """
    import pandas as pd

    if not isinstance(summary, dict):
        from ..io.confinement import sidecar

        given = Path(summary)
        path = given
        if given.is_dir():  # the files beside a run are sidecars: confined, regular files, a FIFO never opened
            found = sidecar(given / "saliency.csv", of=f"sensitivity {str(given)!r}", what="saliency table")
            if saliency is None and found is not None:
                saliency = found
            path = given / "summary.json"
        checked = sidecar(path, of=f"sensitivity {str(given)!r}", what="sensitivity summary")
        try:
            if checked is None:
                raise FileNotFoundError(f"{str(path)!r} does not exist")
            if checked.stat().st_size > MAX_SUMMARY_BYTES:
                raise ValueError(f"it is over {MAX_SUMMARY_BYTES:,} bytes; a summary lbee writes is a few kB")
            from ..io.confinement import read_text_file  # the file checked is the file read

            summary = json.loads(read_text_file(checked, "sensitivity summary", limit=MAX_SUMMARY_BYTES))
        except (OSError, ValueError) as exc:
            raise ValueError(f"Cannot read sensitivity summary {str(path)!r}: {exc}") from None
    from ..analyses.sensitivity_outputs import check_summary, plot_rfs

    check_summary(summary)  # every key the figures read: a hand-edited file fails here, naming the key

    e = html.escape
    rfs_mean = summary.get("rfs_mean")
    parts = [
        f'<section class="lbee-sensitivity"><h2>{e(title)}</h2>',
        "<p>Noise added to the object versus the background (RIVAL10 §5.1). "
        "RFS = (a<sub>bg</sub> − a<sub>fg</sub>) / (2 min(ā, 1 − ā)) in [−1, 1]: "
        "positive when corrupting the object hurts more (the model uses the object), "
        "negative when the background matters more.</p>",
        f"<p><b>RFS (mean over σ): {e('n/a' if rfs_mean is None else f'{rfs_mean:+.3f}')}</b>; "
        f"clean accuracy {summary.get('accuracy_clean', float('nan')):.3f}, background grayed "
        f"{summary.get('accuracy_gray_background', float('nan')):.3f}; "
        f"{int(summary.get('n_images', 0))} images.</p>",
        _png_img(plot_rfs(summary), "accuracy under foreground and background noise, and RFS, against sigma"),
    ]
    if summary.get("per_class"):
        parts.append(_png_img(_class_bars(summary), "RFS per class"))
        from ..analyses.sensitivity_outputs import CLASSES_DRAWN

        if len(summary["per_class"]) > CLASSES_DRAWN:
            parts.append(
                f"<p>The {CLASSES_DRAWN} classes of lowest mean RFS of {len(summary['per_class']):,} are drawn; "
                "summary.json holds every one.</p>"
            )
    undefined = [b["sigma"] for b in summary["per_sigma"] if b.get("rfs") is None]
    if undefined:
        parts.append(
            f"<p>RFS undefined at σ = {e(', '.join(f'{s:g}' for s in undefined))}: "
            f"{e(summary['per_sigma'][0].get('rfs_reason', 'ā is 0 or 1'))}.</p>"
        )
    if saliency is not None:
        if not isinstance(saliency, pd.DataFrame):
            from ..io.table_reader import read_table  # confined, bounded, its header checked

            saliency = read_table(saliency)
        table = saliency
        if not {"image", "iou"} <= set(table.columns):
            raise ValueError(f"The saliency table needs columns 'image' and 'iou'; found {list(table.columns)}.")
        least = table.sort_values("iou", kind="stable", na_position="last").head(n_least)
        parts.append(
            f"<h3>Least aligned saliency (GradCAM vs object mask, §5.4); mean IoU "
            f"{table['iou'].mean():.3f}</h3><table><tr><th></th><th>image</th><th>class</th>"
            "<th>IoU</th><th>Δ density</th></tr>"
        )
        for _, row in least.iterrows():
            thumb = thumbnails(row["image"]) if thumbnails else None
            cell = f'<img alt="" src="{e(thumb)}" style="height:64px">' if thumb else ""
            delta = row.get("delta_density", float("nan"))
            parts.append(
                f"<tr><td>{cell}</td><td>{e(str(row['image']))}</td><td>{e(str(row.get('class', '')))}"
                f"</td><td>{row['iou']:.3f}</td><td>{delta:+.3f}</td></tr>"
            )
        parts.append("</table>")
    parts.append("</section>")
    return "\n".join(parts)
