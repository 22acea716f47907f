"""The layers, enforced: an import graph of every source file, checked for
back-edges, private cross-module imports, import cycles, test modules used
as libraries and more than one module name per file; and `import
kaleido.golden` from a plain checkout.

Layers, bottom up (docs/ARCHITECTURE.md):

* configuration: kaleido.{config, checks, encoding, loopnest}; numpy only
* golden model: kaleido.golden; numpy (and scikit-image for workloads)
* RTL: kaleido.hdl; amaranth; reads the configuration, never golden or tb
* cycle model, CLI and the rest of the product: kaleido.{model, cli,
  calibrate, stage_timing, ...}; no RTL, never the research
* research: kaleido.explore (the design exploration and its models); what
  the product offers, no RTL; the product never imports it (one declared
  edge: :data:`ALLOWED`)
* benchmarks: kaleido.bench; the product and the research, no RTL
* synthesis flow: kaleido.synth; the RTL, never golden or tb
* tests and testbenches: kaleido.tb; anything but a test module
  (``test_*.py``): their helpers live in the kit (``tb/kit.py``,
  ``tb/*_cases.py``, ...)

No import cycles anywhere, lazy imports inside functions included.
"""

from __future__ import annotations

import ast
import functools
import itertools
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
#: top-level folder -> package (kaleido/<folder> links to it)
TREES = {
    "kaleido": "kaleido",
    "golden": "kaleido.golden",
    "hdl": "kaleido.hdl",
    "tb": "kaleido.tb",
    "synth": "kaleido.synth",
}
CONFIG = ("kaleido.config", "kaleido.checks", "kaleido.encoding", "kaleido.loopnest")
TOOLS = ("kaleido.model", "kaleido.cli", "kaleido.bench")
#: the research: the design exploration and its models, apart from the product
RESEARCH = ("kaleido.explore",)
NO_RTL = ("amaranth", "cocotb", "kaleido.hdl", "kaleido.tb", "kaleido.synth")

#: layer -> prefixes it must not import
FORBIDDEN = {
    "config": ("amaranth", "cocotb", "kaleido.golden", "kaleido.hdl", "kaleido.tb", "kaleido.synth", *TOOLS, *RESEARCH),
    "golden": ("amaranth", "cocotb", "kaleido.hdl", "kaleido.tb", "kaleido.synth", *TOOLS, *RESEARCH),
    "hdl": ("cocotb", "kaleido.golden", "kaleido.tb", "kaleido.synth", *TOOLS, *RESEARCH),
    "tools": (*NO_RTL, *RESEARCH),
    "research": (*NO_RTL, "kaleido.cli", "kaleido.bench"),
    "bench": NO_RTL,
    "synth": ("cocotb", "kaleido.golden", "kaleido.tb", *TOOLS, *RESEARCH),
    "tb": (),
}

#: (importing module, imported module) edges a layer may cross anyway, each
#: with why; nothing else crosses. Keep it short.
ALLOWED = {
    # `kaleido explore` is a subcommand of the product's CLI: _explore_parser
    # registers the research's arguments (add_arguments) and handler (run);
    # nothing else in the product reaches the research
    ("kaleido.cli", "kaleido.explore"): "the `kaleido explore` subcommand",
}


def layer(module: str) -> str:
    if module.startswith(CONFIG) or module == "kaleido":
        return "config"
    for name in ("golden", "hdl", "tb", "synth", "explore", "bench"):
        if module == f"kaleido.{name}" or module.startswith(f"kaleido.{name}."):
            return {"explore": "research"}.get(name, name)
    return "tools"


def module_name(path: pathlib.Path) -> str:
    rel = path.relative_to(ROOT)
    parts = [TREES[rel.parts[0]], *rel.parts[1:]]
    parts[-1] = parts[-1].removesuffix(".py")
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def sources() -> list[pathlib.Path]:
    files = []
    for tree in TREES:
        base = ROOT / tree
        for path in sorted(base.rglob("*.py")):
            if tree == "kaleido" and path.relative_to(base).parts[0] in ("golden", "hdl", "tb", "synth"):
                continue  # the links to the other trees
            files.append(path)
    return files


@functools.cache
def parsed(path: pathlib.Path) -> ast.Module:
    return ast.parse(path.read_text(), str(path))


def imports(path: pathlib.Path, module: str, text: str | None = None) -> list[tuple[str, list[str], int]]:
    """``(imported module, names, line)`` of every import in a file (or in
    ``text`` given for it), relative imports resolved."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    out: list[tuple[str, list[str], int]] = []
    for node in ast.walk(parsed(path) if text is None else ast.parse(text, str(path))):
        if isinstance(node, ast.Import):
            out += [(a.name, [], node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            out.append((target, [a.name for a in node.names], node.lineno))
    return out


def imported_modules(target: str, names: list[str], known: set[str]) -> list[str]:
    """The modules an import statement loads by name: ``target``, and
    ``target.name`` for each imported name that is a module of the tree
    (``from kaleido import explore`` imports ``kaleido.explore``)."""
    subs = [f"{target}.{n}" for n in names if f"{target}.{n}" in known]
    return [target, *subs] if not names or len(subs) < len(names) else subs


def violations(extra: dict[pathlib.Path, str] | None = None) -> list[str]:
    """Every layer violation of the tree, plus of the ``extra`` files
    (path -> source text, not written anywhere)."""
    bad = []
    extra = extra or {}
    known = {module_name(p) for p in [*sources(), *extra]}
    for path in [*sources(), *extra]:
        module = module_name(path)
        rel = path.relative_to(ROOT)
        for target, names, line in imports(path, module, extra.get(path)):
            for imported in imported_modules(target, names, known):
                for prefix in FORBIDDEN[layer(module)]:
                    crosses = imported == prefix or imported.startswith(prefix + ".")
                    if crosses and (module, imported) not in ALLOWED:
                        bad.append(f"{rel}:{line}: {layer(module)} layer imports {imported}")
            # the top-level folders are packages only as kaleido.<folder>
            if target.split(".")[0] in ("golden", "hdl", "tb", "synth"):
                bad.append(f"{rel}:{line}: imports {target}; use kaleido.{target}")
            if target.startswith("kaleido") and target != module.rpartition(".")[0]:
                for name in names:
                    if name.startswith("_") and not name.startswith("__"):
                        bad.append(f"{rel}:{line}: imports the private name {name} from {target}")
            if target.startswith("kaleido") and any(
                p.startswith("_") and p != "__init__" for p in target.split(".")[1:]
            ):
                owner = target.rpartition(".")[0]
                if not (module == owner or module.startswith(owner + ".")):
                    bad.append(f"{rel}:{line}: imports the private module {target}")
    return bad


def import_graph(extra: dict[pathlib.Path, str] | None = None) -> dict[str, dict[str, str]]:
    """module -> {imported module of the tree: ``path:line`` of the first
    such import}, every import counted (lazy ones inside functions too);
    ``extra`` files (path -> source text) are added or replace a file's
    text, written nowhere."""
    extra = extra or {}
    paths = {**dict.fromkeys(sources()), **extra}
    known = {module_name(p) for p in paths}
    graph: dict[str, dict[str, str]] = {}
    for path, text in paths.items():
        module = module_name(path)
        edges = graph.setdefault(module, {})
        for target, names, line in imports(path, module, text):
            for imported in imported_modules(target, names, known):
                if imported in known and imported != module:
                    edges.setdefault(imported, f"{path.relative_to(ROOT)}:{line}")
    return graph


def import_cycles(graph: dict[str, dict[str, str]]) -> list[list[str]]:
    """One cycle through every strongly connected component of more than
    one module (Tarjan's algorithm), as ``[a, b, ..., a]``."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []

    def connect(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, {})):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            connect(v)
    cycles = []
    for component in sorted(components):
        inside, start = set(component), component[0]
        # the shortest way back to the start, breadth first, inside the component
        came: dict[str, str] = {}
        frontier = [start]
        while start not in came:
            reached = []
            for v in frontier:
                for w in sorted(graph[v]):
                    if w in inside and w not in came:
                        came[w] = v
                        reached.append(w)
            frontier = reached
        path, v = [start], came[start]
        while v != start:
            path.append(v)
            v = came[v]
        cycles.append([*path, start][::-1])
    return cycles


def cycle_report(graph: dict[str, dict[str, str]]) -> list[str]:
    return [
        " -> ".join(cycle) + "  (" + ", ".join(graph[a][b] for a, b in itertools.pairwise(cycle)) + ")"
        for cycle in import_cycles(graph)
    ]


def test_modules_import_no_cycle():
    cycles = cycle_report(import_graph())
    assert not cycles, "import cycles:\n" + "\n".join(cycles)


def test_the_cycle_check_catches_a_seeded_cycle():
    """Two in-memory modules importing each other, one of them lazily, and
    a third closing a longer loop through an existing module: each cycle is
    reported with its modules and the lines that close it."""
    a, b = ROOT / "kaleido" / "_seeded_a.py", ROOT / "kaleido" / "_seeded_b.py"
    lazy = "def f():\n    from . import _seeded_a\n"
    graph = import_graph({a: "from ._seeded_b import f\n", b: lazy})
    assert "kaleido._seeded_a -> kaleido._seeded_b -> kaleido._seeded_a" in "\n".join(cycle_report(graph))
    config = ROOT / "kaleido" / "config.py"
    seeded = {config: config.read_text() + "\nfrom .explore import explorer\n"}
    cycles = import_cycles(import_graph(seeded))
    assert any({"kaleido.config", "kaleido.explore.explorer"} <= set(c) for c in cycles), cycles


#: the cycle model's modules, bottom up: each imports only those before it
MODEL_STAGES = ("slots", "queue", "qk", "engine", "softmax", "pv", "core")


def test_the_cycle_model_imports_its_stages_bottom_up():
    """kaleido.model is one module per stage (issue 44, item 4): each in the
    import graph, importing no stage after it, and the package's
    ``__init__`` only re-exporting them."""
    graph = import_graph()
    stages = [f"kaleido.model.{s}" for s in MODEL_STAGES]
    assert {m for m in graph if m.startswith("kaleido.model.")} == set(stages)
    for i, stage in enumerate(stages):
        inside = {m for m in graph[stage] if m == "kaleido.model" or m.startswith("kaleido.model.")}
        assert inside <= set(stages[:i]), (stage, sorted(inside - set(stages[:i])))
    assert {m for m in graph["kaleido.model"] if m.startswith("kaleido.")} <= set(stages)


#: the formal harnesses' package: its base, one module per block or block
#: family over the base, the registry of proofs over them, the CLI over it
FORMAL_HARNESSES = (
    "pe",
    "matcher",
    "scheduler",
    "dispatcher",
    "array",
    "accumulation_buffer",
    "softmax",
    "pv_tile",
    "mem_port",
    "tile_feeder",
    "core",
)


def test_the_formal_harnesses_are_one_module_per_block():
    """kaleido.tb.formal is one harness module per block (issue 44, item
    4): each imports at most the base; the registry the base and the
    harnesses; the CLI the base and the registry; ``__main__`` the CLI."""
    graph = import_graph()
    inside = {m: {t for t in graph[m] if t.startswith("kaleido.tb.formal")} for m in graph}
    harnesses = {f"kaleido.tb.formal.{h}" for h in FORMAL_HARNESSES}
    base, registry, cli = (f"kaleido.tb.formal.{m}" for m in ("base", "registry", "cli"))
    package = {m for m in graph if m.startswith("kaleido.tb.formal.")}
    assert package == harnesses | {base, registry, cli, "kaleido.tb.formal.__main__"}
    assert not inside[base]
    for harness in harnesses:
        assert inside[harness] <= {base}, (harness, inside[harness])
    assert inside[registry] == harnesses | {base}
    assert inside[cli] == {base, registry}
    assert inside["kaleido.tb.formal.__main__"] == {cli}
    assert inside["kaleido.tb.formal"] <= package


#: the report's package: its base, one module per figure group over the
#: base, the summary over the figures, the CLI over them all
REPORT_FIGURES = ("ops", "variants", "block", "sweeps", "cycles", "cost", "design_space")


def test_the_report_is_one_module_per_figure_group():
    """kaleido.bench.report is one module per figure group (issue 44, item
    4): each imports at most the base; the summary the figure groups it
    reads; the CLI the base, the figure groups and the summary;
    ``__main__`` the CLI."""
    graph = import_graph()
    inside = {m: {t for t in graph[m] if t.startswith("kaleido.bench.report")} for m in graph}
    figures = {f"kaleido.bench.report.{f}" for f in REPORT_FIGURES}
    base, summary, cli = (f"kaleido.bench.report.{m}" for m in ("base", "summary", "cli"))
    package = {m for m in graph if m.startswith("kaleido.bench.report.")}
    assert package == figures | {base, summary, cli, "kaleido.bench.report.__main__"}
    assert not inside[base]
    for figure in figures:
        assert inside[figure] <= {base}, (figure, inside[figure])
    assert inside[summary] <= figures
    assert inside[cli] == figures | {base, summary}
    assert inside["kaleido.bench.report.__main__"] == {cli}
    assert inside["kaleido.bench.report"] <= package


def test_no_test_module_is_imported():
    """A test file's helpers belong in the kit (tb/kit.py, tb/*_cases.py,
    ...): a ``test_*.py`` imported as a library is loaded twice in one
    pytest run, under its basename and its kaleido.tb name."""
    assert not imports_of_test_modules(), "\n".join(imports_of_test_modules())


def imports_of_test_modules(extra: dict[pathlib.Path, str] | None = None) -> list[str]:
    extra = extra or {}
    paths = {**dict.fromkeys(sources()), **extra}
    known = {module_name(p) for p in paths}
    bad = []
    for path, text in paths.items():
        for target, names, line in imports(path, module_name(path), text):
            for imported in imported_modules(target, names, known):
                if imported.rpartition(".")[2].startswith("test_"):
                    bad.append(f"{path.relative_to(ROOT)}:{line}: imports the test module {imported}")
    return bad


def test_the_test_module_check_catches_one():
    seeded = ROOT / "tb" / "_seeded_helper.py"
    bad = imports_of_test_modules(
        {seeded: "from kaleido.tb.test_mem_port import run_loads\nfrom kaleido.tb import test_layers\n"}
    )
    assert "tb/_seeded_helper.py:1: imports the test module kaleido.tb.test_mem_port" in bad
    assert "tb/_seeded_helper.py:2: imports the test module kaleido.tb.test_layers" in bad


def test_the_research_is_apart_from_the_product():
    """A product module importing the research is reported, however it
    names it; the one declared edge (kaleido.cli) is not."""
    model = ROOT / "kaleido" / "model" / "qk.py"
    seeded = {
        ROOT / "kaleido" / "_seeded_product.py": "from .explore.model import qk_cycle_budget\nfrom . import explore\n",
        ROOT / "golden" / "_seeded_golden.py": "import kaleido.explore.row_delta\n",
    }
    bad = violations(seeded)
    assert "kaleido/_seeded_product.py:1: tools layer imports kaleido.explore.model" in bad
    assert "kaleido/_seeded_product.py:2: tools layer imports kaleido.explore" in bad
    assert "golden/_seeded_golden.py:1: golden layer imports kaleido.explore.row_delta" in bad
    assert not any(b.startswith("kaleido/cli.py") for b in bad)
    assert layer("kaleido.explore.window_pe") == "research" and layer(module_name(model)) == "tools"
    assert layer("kaleido.bench.explore") == "bench"


def test_no_layer_is_crossed():
    bad = violations()
    assert not bad, "layer violations:\n" + "\n".join(bad)


def test_the_check_catches_a_back_edge():
    """A seeded back-edge (a file that exists only in memory, so the lint
    tests running beside this one never see it): the golden model importing
    the RTL, and a private name, are reported."""
    seeded = ROOT / "golden" / "_seeded_back_edge.py"
    bad = violations({seeded: "from ..hdl.pe import KaleidoPE\nfrom ..loopnest import _private\n"})
    assert any("golden/_seeded_back_edge.py:1: golden layer imports kaleido.hdl.pe" in b for b in bad)
    assert any("private name _private" in b for b in bad)


def test_every_tree_is_linked_into_the_package():
    for tree in ("golden", "hdl", "tb", "synth"):
        link = ROOT / "kaleido" / tree
        assert link.is_symlink() and link.resolve() == (ROOT / tree).resolve(), link
    assert not (ROOT / "tb" / "__init__.py").exists(), "tb/ must stay a namespace folder (one name per test file)"


def test_import_from_a_plain_checkout(tmp_path):
    """Only the dependencies installed and PYTHONPATH at the checkout: every
    package imports from the checkout's files, under its kaleido name."""
    for tree in TREES:
        shutil.copytree(ROOT / tree, tmp_path / tree, symlinks=True, ignore=shutil.ignore_patterns("__pycache__"))
    code = (
        "import kaleido.golden, kaleido.hdl.pe, kaleido.tb.runner, kaleido.synth.flow, kaleido.model; "
        "print(kaleido.golden.__file__, kaleido.hdl.pe.__file__, kaleido.tb.runner.__file__)"
    )
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    for path in out.stdout.split():
        assert pathlib.Path(path).is_relative_to(tmp_path), path


@pytest.mark.parametrize("path", ["tb/test_layers.py", "kaleido/tb/test_layers.py"])
def test_a_test_file_has_one_module_name(path):
    """pytest names a test file by its basename however it is reached, and
    the helpers it imports by their kaleido.tb names."""
    code = (
        "import sys, _pytest.pathlib as p; "
        f"m = p.import_path({str(ROOT / path)!r}, root={str(ROOT)!r}, consider_namespace_packages=False, "
        "mode='prepend'); print(m.__name__)"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split()[-1] == "test_layers"
