"""The import rules of CONTRIBUTING.md ("Import rules"), checked on the source of lbee/ and vqa/.

The import graph is read from the syntax tree of every module: every ``import`` counts, at module level or inside
a function (a lazy import is still a dependency), except those under ``if TYPE_CHECKING:`` (read by static tools
only). A package here is ``vqa``, ``lbee`` (its ``__init__``, the public facade), each top-level module of lbee
(``lbee._validation``, ``lbee.extras``, ...) and each subpackage of lbee (``lbee.core``, ``lbee.io``, ...).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SOURCES = ("lbee", "vqa")
#: The packages in data-flow order (CONTRIBUTING.md, "Architecture"): a package imports only packages of its own
#: layer or of a layer above it in this list. A new package (or top-level module of lbee) is added here.
LAYERS = (
    # helpers
    (
        "lbee._version",
        "lbee._dependencies",
        "lbee.typing",
        "lbee._validation",
        "lbee._files",
        "lbee._blas",
        "lbee._gc",
        "lbee._yaml",
        "lbee.extras",
        "lbee.progress",
    ),
    ("lbee.grammar",),
    ("lbee.io",),
    ("lbee.ray_pool",),  # its own local Ray's session goes in a folder TMPDIR judged by lbee.io (sweep 32as)
    ("lbee.scoring",),
    ("lbee.core",),
    ("lbee.slicers",),
    ("lbee.spotcheck",),
    ("lbee.encoders",),
    ("lbee.rival10", "vqa"),
    ("lbee.analyses",),
    ("lbee.run",),
    ("lbee.bench",),  # the SpotCheck benchmark: drives the run layer over lbee.spotcheck's worlds
    ("lbee.reports",),
    ("lbee", "lbee.metrics"),  # the public facade
    ("lbee.service",),
    ("lbee.cli", "lbee.__main__"),  # `python -m lbee` is the lbee command
)
#: Libraries that load or run models: the readers (lbee.io) and the CLI import none of them.
MODEL_LIBRARIES = ("torch", "torchvision", "open_clip", "timm", "transformers", "sentence_transformers")
#: Besides itself, lbee.io may import only these parts of lbee (and lbee's top-level modules).
IO_MAY_IMPORT = ("lbee.io", "lbee.grammar")
#: The CLI reaches these only through lbee.run (models and encoders: loading, φ / ω, embeddings; a model's outputs).
CLI_THROUGH_RUN = ("lbee.scoring", "lbee.encoders", "lbee.io.predictions")


@dataclass(frozen=True)
class Import:
    source: str  # the importing module
    target: str  # the imported module
    name: str | None  # the imported name (``from target import name``), None for ``import target``
    line: int

    def __str__(self):
        what = f"from {self.target} import {self.name}" if self.name else f"import {self.target}"
        return f"{self.source}:{self.line}: {what}"


def _modules():
    """module name -> (path, is_package) for every module of lbee/ and vqa/."""
    out = {}
    for top in SOURCES:
        for path in sorted((ROOT / top).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            is_package = parts[-1] == "__init__"
            if is_package:
                parts = parts[:-1]
            out[".".join(parts)] = (path, is_package)
    return out


MODULES = _modules()


def _is_type_checking(node):
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _walk(node):
    """Every node under ``node``, skipping the bodies of ``if TYPE_CHECKING:``."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.If) and _is_type_checking(child):
            for other in child.orelse:
                yield other
                yield from _walk(other)
            continue
        yield child
        yield from _walk(child)


def _imports():
    out = []
    for module, (path, is_package) in MODULES.items():
        here = module.split(".") if is_package else module.split(".")[:-1]
        for node in _walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Import):
                out += [Import(module, alias.name, None, node.lineno) for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = ".".join(here[: len(here) - node.level + 1] if node.level else [])
                target = ".".join(p for p in (base, node.module or "") if p) if node.level else node.module
                for alias in node.names:
                    sub = f"{target}.{alias.name}"
                    if sub in MODULES:  # ``from package import module``
                        out.append(Import(module, sub, None, node.lineno))
                    else:
                        out.append(Import(module, target, alias.name, node.lineno))
    return out


IMPORTS = _imports()


def package_of(module):
    """The package a module counts in for the package graph (see the module docstring); None outside lbee / vqa."""
    parts = module.split(".")
    if parts[0] == "vqa":
        return "vqa"
    if parts[0] != "lbee":
        return None
    return "lbee" if len(parts) == 1 else f"lbee.{parts[1]}"


def _within(module, package):
    return module == package or module.startswith(package + ".")


def _private(part):
    return part.startswith("_") and not part.startswith("__")


def owner_of_private(imp):
    """The package a private module or name of ``imp`` belongs to, or None when nothing private is imported."""
    parts = imp.target.split(".")
    for k, part in enumerate(parts):
        if _private(part):  # lbee.spotcheck._network belongs to lbee.spotcheck
            return ".".join(parts[:k])
    if imp.name and _private(imp.name):  # a private name belongs to the package of its module
        return imp.target if MODULES.get(imp.target, (None, False))[1] else imp.target.rpartition(".")[0]
    return None


def package_graph(imports):
    """package -> {imported package: [the imports behind the edge]}."""
    graph = {}
    for imp in imports:
        a, b = package_of(imp.source), package_of(imp.target)
        if b is not None and a != b:
            graph.setdefault(a, {}).setdefault(b, []).append(imp)
    return graph


def find_cycle(graph):
    """One cycle of the graph as a list of packages (first repeated last), or None."""
    state = {}

    def visit(node, path):
        state[node] = "open"
        for nxt in sorted(graph.get(node, {})):
            if state.get(nxt) == "open":
                return path[path.index(nxt) :] + [nxt]
            if nxt not in state:
                found = visit(nxt, path + [nxt])
                if found:
                    return found
        state[node] = "done"
        return None

    for start in sorted(graph):
        if start not in state:
            found = visit(start, [start])
            if found:
                return found
    return None


def test_the_source_is_read():
    assert {"lbee", "lbee.core.partition", "lbee.io.tables", "lbee.cli.describe", "vqa.runner"} <= set(MODULES)
    graph = package_graph(IMPORTS)
    assert "lbee.core" in graph["lbee.run"] and "lbee.io" in graph["lbee.core"]  # lazy imports count


def test_no_import_cycle_between_packages():
    graph = package_graph(IMPORTS)
    cycle = find_cycle(graph)
    if cycle:
        edges = [f"  {a} -> {b}: " + "; ".join(str(i) for i in graph[a][b][:3]) for a, b in zip(cycle, cycle[1:])]
        pytest.fail("Import cycle between packages " + " -> ".join(cycle) + ":\n" + "\n".join(edges))


def test_every_package_has_a_layer():
    packages = {package_of(m) for m in MODULES}
    layered = {p for layer in LAYERS for p in layer}
    assert packages == layered, f"add to LAYERS: {sorted(packages - layered)}; gone: {sorted(layered - packages)}"


RANK = {p: i for i, layer in enumerate(LAYERS) for p in layer}


def against_the_flow(imp):
    """Whether ``imp`` goes from a package to one of a later layer."""
    source, target = package_of(imp.source), package_of(imp.target)
    return target in RANK and RANK[target] > RANK[source]


def test_packages_import_only_their_layer_and_the_layers_above():
    bad = [
        f"{imp}  ({package_of(imp.source)} imports {package_of(imp.target)}, a later layer)"
        for imp in IMPORTS
        if against_the_flow(imp)
    ]
    assert not bad, "Imports against the data flow (see LAYERS):\n" + "\n".join(bad)


def test_no_private_module_or_name_is_imported_across_packages():
    bad = [
        f"{imp}  (private to {owner})"
        for imp in IMPORTS
        if (owner := owner_of_private(imp)) is not None
        and package_of(imp.target) is not None
        and not _within(imp.source, owner)
    ]
    assert not bad, "Give these a public name in their package:\n" + "\n".join(bad)


def _io_may_import(target):
    """lbee.io's own modules, lbee.grammar, lbee's top-level helper modules (lbee._version, lbee.extras, ...)."""
    package = package_of(target)
    top_level_module = package != "lbee" and package in MODULES and not MODULES[package][1]
    return any(_within(target, p) for p in IO_MAY_IMPORT) or top_level_module


def test_readers_import_no_model_code():
    bad = [
        str(imp)
        for imp in IMPORTS
        if _within(imp.source, "lbee.io")
        and (
            imp.target.split(".")[0] in MODEL_LIBRARIES
            or (package_of(imp.target) is not None and not _io_may_import(imp.target))
        )
    ]
    assert not bad, "lbee.io reads files; it imports no model code and no layer above it:\n" + "\n".join(bad)


def test_the_cli_reaches_models_through_the_run_layer():
    bad = [
        str(imp)
        for imp in IMPORTS
        if _within(imp.source, "lbee.cli")
        and (any(_within(imp.target, p) for p in CLI_THROUGH_RUN) or imp.target.split(".")[0] in MODEL_LIBRARIES)
    ]
    assert not bad, "Reach these through lbee.run (lbee.run.models, .inputs, .scores, .embed):\n" + "\n".join(bad)


@pytest.mark.parametrize(
    "imports, rule",
    [
        ([Import("lbee.io.x", "lbee.run.inputs", "f", 1), Import("lbee.run.inputs", "lbee.io.x", "g", 2)], "cycle"),
        ([Import("lbee.encoders.a", "lbee.spotcheck._network", "ImageTower", 1)], "private"),
        ([Import("lbee.reports.a", "lbee.analyses.sensitivity", "_figure_bytes", 1)], "private"),
        ([Import("vqa.runner", "lbee._ray", "actor_pool", 1)], "private"),
        ([Import("lbee.io.tables", "lbee.scoring.confidence", "softmax", 1)], "io"),
        ([Import("lbee.io.images", "torch", None, 1)], "io"),
        ([Import("lbee.core.partition", "lbee.slicers", "WardSlicer", 1)], "layer"),
        ([Import("lbee.run.pipeline", "lbee.reports.text", "render_markdown", 1)], "layer"),
        ([Import("lbee.spotcheck._analysis", "lbee.run.pipeline", "analyse", 1)], "layer"),  # now lbee.bench
    ],
)
def test_the_checks_catch_what_they_are_for(imports, rule):
    if rule == "cycle":
        assert find_cycle(package_graph(imports)) == ["lbee.io", "lbee.run", "lbee.io"]
    elif rule == "layer":
        assert all(against_the_flow(i) for i in imports)
    elif rule == "io":
        assert all(i.target.split(".")[0] in MODEL_LIBRARIES or not _io_may_import(i.target) for i in imports)
    else:
        assert all(not _within(i.source, owner_of_private(i)) for i in imports)


def test_allowed_imports_pass_the_checks():
    ok = [
        Import("lbee.core.split", "lbee._validation", "check_real", 1),  # lbee's own helpers, inside lbee
        Import("lbee.cli.describe", "lbee.cli._base", "fail", 1),  # a private module, inside its package
        Import("lbee.encoders._registry", "lbee.encoders._open_clip", None, 1),
    ]
    assert all(_within(i.source, owner_of_private(i)) for i in ok)
    assert find_cycle(package_graph(ok)) is None and not any(against_the_flow(i) for i in ok)
    assert _io_may_import("lbee._version") and _io_may_import("lbee.grammar") and _io_may_import("lbee.io.cache")
    assert not _io_may_import("lbee") and not _io_may_import("lbee.core.selection")
