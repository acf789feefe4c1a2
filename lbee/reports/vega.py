r"""Interactive Vega-Lite charts of the HTML report, with the Vega libraries inlined (no CDN).

The charts are plain Vega-Lite specifications (dicts); Altair is not needed to
write them. The JavaScript of Vega, Vega-Lite and vega-embed comes from the
PyPI package ``vl-convert-python`` (`vl_convert.javascript_bundle`; the
``html`` extra), so a page works offline and can
be mailed on its own. Building the bundle takes a few seconds; it is kept in
memory and on disk under the lbee cache folder, keyed by the vl-convert version.

Specs go into the page as ``<script type="application/json">`` blocks with
every ``<``, ``>`` and ``&`` written as a JSON ``\u`` escape, so a user string
(an image file name, a sentence) can never close the script element.
"""

from __future__ import annotations

import json
from functools import lru_cache

import numpy as np

VEGA_LITE_SCHEMA = "https://vega.github.io/schema/vega-lite/v6.json"  # an identifier, never fetched
PHI_HELP = (
    "Confidence (φ in the papers) is the model's, higher = easier. With --confidence-from entropy it is the negative "
    "entropy of the softmax output: 0 means a one-hot (sure) prediction, more negative means the "
    "probability is spread over more classes (−log C at worst)."
)


#: The largest cached Vega bundle read (the bundle is about 1 MB).
MAX_BUNDLE_BYTES = 32 << 20


@lru_cache(maxsize=1)
def vega_bundle(cache_dir=None):
    """The JavaScript of vega, vega-lite and vega-embed (with vega-tooltip) as one classic script.

    Defines ``window.vegaEmbed``, ``window.vega`` and ``window.vegaLite``.

    Parameters
    ----------
    cache_dir : path-like, optional
        Default: the lbee cache folder.

    Returns
    -------
    str
    """
    from importlib.metadata import version

    from ..extras import import_extra
    from ..io.cache import atomic_write_bytes, cache_folder
    from ..io.own_store import foreign_inside, make_own, own_file

    vl_convert = import_extra("vl_convert", "html", needed_for="The HTML report")

    # the Vega-Lite of the specs' $schema (a v6 bundle warns "The input spec uses Vega-Lite v5" once per chart)
    major = VEGA_LITE_SCHEMA.rsplit("/v", 1)[1].split(".")[0]
    vl = max(
        (v for v in vl_convert.get_vegalite_versions() if v.split(".")[0] == major),
        key=lambda v: tuple(int(x) for x in v.split(".")),
        default=None,
    )
    name = f"bundle-{version('vl-convert-python')}-vl{vl}.js"
    base = cache_folder(cache_dir)  # another user's folder is refused (sweep 32v B3)
    path = base / "vega" / name
    import os
    import stat

    # never used: a bundle planted through a link (sweep 32v B3), or in a folder another user could write (32ak B2)
    linked = foreign_inside(base, "vega")
    try:
        mode = os.lstat(path).st_mode
    except OSError:
        mode = None
    if not linked and mode is not None and stat.S_ISREG(mode) and own_file(path):
        from ..io.confinement import read_text_file

        try:  # bounded, as every file lbee reads: a sparse 2.5 GB one took 10.5 GB (sweep 28)
            return read_text_file(path, "Cached Vega bundle", limit=MAX_BUNDLE_BYTES, encoding="utf-8")
        except (OSError, ValueError, UnicodeDecodeError):
            pass  # made again below, and the cache file replaced: it is lbee's own
    js = vl_convert.javascript_bundle(vl_version=vl)
    if "</script" in js.lower():  # would end the inline <script> early
        js = js.replace("</script", "<\\/script").replace("</SCRIPT", "<\\/SCRIPT")
    if linked or (mode is not None and not (stat.S_ISREG(mode) and own_file(path))):
        return js  # a FIFO, a device or another user's file where the cache file goes is left (sweep 28), not kept
    try:
        make_own(base, "vega")
        atomic_write_bytes(path, js.encode("utf-8"), private=True)
    except OSError:  # a read-only cache only costs the seconds of the next build
        pass
    return js


def spec_json(spec):
    """A spec as JSON safe inside ``<script type="application/json">`` (no ``<``, ``>``, ``&`` left)."""
    text = json.dumps(spec, allow_nan=False, separators=(",", ":"), default=_jsonable)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _jsonable(x):
    if isinstance(x, np.integer):
        return int(x)
    if isinstance(x, np.floating):
        return None if not np.isfinite(x) else float(x)
    if isinstance(x, np.ndarray):
        return x.tolist()
    raise TypeError(f"not JSON serialisable: {type(x).__name__}")


def _num(x, digits=4):
    x = float(x)
    return round(x, digits) if np.isfinite(x) else None


def metric_bars_spec(rows, metrics=("ACR", "AHR", "TPR", "JI")):
    """ACR / AHR / TPR / JI per (slicer, method) as bars with value labels.

    A metric without a value (NaN: e.g. TPR when S*_β is empty) gets no bar and
    the label "no value" instead of an empty axis.
    """
    values = []
    for r in rows:
        name = r["method"] if r["slicer"] in ("ward", "per class") else f"{r['method']}·{r['slicer']}"
        for m in metrics:
            v = r.get(m)
            ok = v is not None and np.isfinite(v)
            values.append(
                {
                    "metric": m,
                    "method": name,
                    "value": _num(v) if ok else 0.0,
                    "label": f"{v:.2f}" if ok else "no value",
                }
            )
    enc_x = {"field": "method", "type": "nominal", "title": None, "sort": None, "axis": {"labelAngle": -35}}
    return {
        "$schema": VEGA_LITE_SCHEMA,
        "data": {"values": values},
        "facet": {"column": {"field": "metric", "type": "nominal", "title": None, "sort": list(metrics)}},
        "spec": {
            "width": {"step": 34},
            "height": 150,
            "layer": [
                {
                    "mark": {"type": "bar", "tooltip": True},
                    "encoding": {
                        "x": enc_x,
                        "y": {"field": "value", "type": "quantitative", "title": None, "scale": {"domain": [0, 1]}},
                        "color": {"field": "method", "type": "nominal", "legend": None, "sort": None},
                    },
                },
                {
                    "mark": {"type": "text", "dy": -6, "fontSize": 10, "angle": 0},
                    "encoding": {
                        "x": enc_x,
                        "y": {"field": "value", "type": "quantitative"},
                        "text": {"field": "label"},
                    },
                },
            ],
        },
        "config": {"view": {"stroke": None}},
    }


def plane_spec(coords, confidence, groups, image_ids, *, thumbs=None, max_points=5000, seed=0, label=""):
    """The 2-D plane as an interactive scatter.

    Points are coloured by φ; hovering shows the image id, φ, its group and,
    for images shown on the page, the thumbnail; clicking a point keeps its
    group highlighted (double-click clears). Above ``max_points`` images every
    hard-group member is kept (up to the cap) and the rest is a random sample:
    the page stays small for any dataset size.

    Parameters
    ----------
    coords : ndarray of shape (n, 2)
    confidence : ndarray of shape (n,)
    groups : list of int arrays
        The hard groups (numbered by position).
    image_ids : list of str
    thumbs : dict of int to str, optional
        Image index -> thumbnail data URI, for the tooltip.
    max_points : int, default=5000

    Returns
    -------
    (dict, int)
        The spec and the number of points drawn.
    """
    n = len(coords)
    group = np.full(n, -1, dtype=np.int64)
    for i, g in enumerate(groups):
        group[np.asarray(g, dtype=np.int64)] = i
    rng = np.random.default_rng(seed)
    if n > max_points:
        members = np.flatnonzero(group >= 0)
        if members.size > max_points:
            members = np.sort(rng.choice(members, max_points, replace=False))
        rest = np.flatnonzero(group < 0)
        extra = rng.choice(rest, min(rest.size, max_points - members.size), replace=False)
        keep = np.sort(np.concatenate([members, extra]))
    else:
        keep = np.arange(n)
    keep = keep[np.isfinite(coords[keep]).all(axis=1)]  # images off the plane (held out from PlaneSpot's fit)
    thumbs = thumbs or {}
    values = []
    for j in keep.tolist():
        v = {
            "x": _num(coords[j, 0]),
            "y": _num(coords[j, 1]),
            "phi": _num(confidence[j]),
            "group": "none" if group[j] < 0 else f"group {group[j]}",
            "id": str(image_ids[j]),
            "hard": bool(group[j] >= 0),
        }
        if j in thumbs:
            v["img"] = thumbs[j]
        values.append(v)
    sel = {"name": "pick", "select": {"type": "point", "fields": ["group"], "on": "click", "clear": "dblclick"}}
    # An expression, not a tooltip encoding: points without a thumbnail then have no (broken) image at all.
    tooltip = {
        "expr": "{'image': datum.img, 'image id': datum.id, 'confidence': format(datum.phi, '.3f'), "
        "'hard group': datum.group}"
    }
    points = {
        "mark": {"type": "point", "filled": True, "size": 22 if len(keep) < 3000 else 10, "tooltip": tooltip},
        "params": [sel],
        "encoding": {
            "x": {"field": "x", "type": "quantitative", "axis": None, "scale": {"zero": False}},
            "y": {"field": "y", "type": "quantitative", "axis": None, "scale": {"zero": False}},
            "color": {
                "field": "phi",
                "type": "quantitative",
                "scale": {"scheme": "viridis"},
                "legend": {"title": "confidence", "gradientLength": 180},
            },
            "shape": {
                "field": "hard",
                "type": "nominal",
                "scale": {"domain": [False, True], "range": ["circle", "diamond"]},
                "legend": {"title": "in a hard group", "labelExpr": "datum.label == 'true' ? 'yes' : 'no'"},
            },
            "stroke": {"condition": {"test": "datum.hard", "value": "#c0392b"}, "value": None},
            "strokeWidth": {"value": 0.6},
            "opacity": {"condition": {"param": "pick", "value": 0.95}, "value": 0.08},
        },
    }
    centres = []
    for i, g in enumerate(groups):
        g = np.asarray(g, dtype=np.int64)
        if g.size:
            c = coords[g].mean(axis=0)
            centres.append({"x": _num(c[0]), "y": _num(c[1]), "text": str(i), "group": f"group {i}"})
    labels = {
        "data": {"values": centres},
        "mark": {"type": "text", "fontWeight": "bold", "fontSize": 13, "color": "#c0392b", "dy": -10},
        "encoding": {
            "x": {"field": "x", "type": "quantitative"},
            "y": {"field": "y", "type": "quantitative"},
            "text": {"field": "text"},
        },
    }
    spec = {
        "$schema": VEGA_LITE_SCHEMA,
        "title": {"text": label, "fontSize": 12, "fontWeight": "normal"},
        "width": 620,
        "height": 460,
        "data": {"values": values},
        "layer": [points, labels],
        "config": {"view": {"stroke": "#e1e4e8"}},
    }
    return spec, len(keep)


def phi_histogram_spec(confidence, group, twin, *, bins=20):
    """Distribution of φ in a hard group, in its easy twin and over all images (fractions per bin)."""
    phi = np.asarray(confidence, dtype=np.float64)
    lo, hi = float(np.min(phi)), float(np.max(phi))
    if hi <= lo:
        hi = lo + 1.0
    edges = np.linspace(lo, hi, bins + 1)
    values = []
    for name, idx in (("this group", group), ("easy twin", twin), ("all images", None)):
        x = phi if idx is None else phi[np.asarray(idx, dtype=np.int64)]
        if not x.size:
            continue
        counts, _ = np.histogram(x, bins=edges)
        frac = counts / x.size
        for b in range(bins):
            values.append({"set": name, "phi": _num((edges[b] + edges[b + 1]) / 2), "fraction": _num(frac[b])})
    domain = [_num(lo), _num(hi)]
    return {
        "$schema": VEGA_LITE_SCHEMA,
        "width": 230,
        "height": 90,
        "data": {"values": values},
        "mark": {"type": "line", "interpolate": "step", "tooltip": True},
        "encoding": {
            "x": {"field": "phi", "type": "quantitative", "title": "confidence", "scale": {"domain": domain}},
            "y": {"field": "fraction", "type": "quantitative", "title": "share", "axis": {"format": ".0%"}},
            "color": {
                "field": "set",
                "type": "nominal",
                "title": None,
                "scale": {
                    "domain": ["this group", "easy twin", "all images"],
                    "range": ["#c0392b", "#3a9b5a", "#8a94a3"],
                },
            },
        },
        "config": {"view": {"stroke": None}, "legend": {"orient": "bottom", "labelFontSize": 10}},
    }
