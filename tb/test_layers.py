"""The layers, enforced: an import graph of every source file, checked for
back-edges, private cross-module imports and more than one module name per
file; and `import kaleido.golden` from a plain checkout.

Layers, bottom up (docs/ARCHITECTURE.md):

* configuration: kaleido.{config, checks, encoding, loopnest}; numpy only
* golden model: kaleido.golden; numpy (and scikit-image for workloads)
* RTL: kaleido.hdl; amaranth; reads the configuration, never golden or tb
* cycle model, CLI, benchmarks: kaleido.{model, cli, bench}; no RTL
* synthesis flow: kaleido.synth; the RTL, never golden or tb
* tests and testbenches: kaleido.tb; anything
"""

from __future__ import annotations

import ast
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

#: layer -> prefixes it must not import
FORBIDDEN = {
    "config": ("amaranth", "cocotb", "kaleido.golden", "kaleido.hdl", "kaleido.tb", "kaleido.synth", *TOOLS),
    "golden": ("amaranth", "cocotb", "kaleido.hdl", "kaleido.tb", "kaleido.synth", *TOOLS),
    "hdl": ("cocotb", "kaleido.golden", "kaleido.tb", "kaleido.synth", *TOOLS),
    "tools": ("amaranth", "cocotb", "kaleido.hdl", "kaleido.tb", "kaleido.synth"),
    "synth": ("cocotb", "kaleido.golden", "kaleido.tb", *TOOLS),
    "tb": (),
}


def layer(module: str) -> str:
    if module.startswith(CONFIG) or module == "kaleido":
        return "config"
    for name in ("golden", "hdl", "tb", "synth"):
        if module.startswith(f"kaleido.{name}"):
            return name
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


def imports(path: pathlib.Path, module: str, text: str | None = None) -> list[tuple[str, list[str], int]]:
    """``(imported module, names, line)`` of every import in a file (or in
    ``text`` given for it), relative imports resolved."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    out: list[tuple[str, list[str], int]] = []
    for node in ast.walk(ast.parse(path.read_text() if text is None else text, str(path))):
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


def violations(extra: dict[pathlib.Path, str] | None = None) -> list[str]:
    """Every layer violation of the tree, plus of the ``extra`` files
    (path -> source text, not written anywhere)."""
    bad = []
    extra = extra or {}
    for path in [*sources(), *extra]:
        module = module_name(path)
        rel = path.relative_to(ROOT)
        for target, names, line in imports(path, module, extra.get(path)):
            for prefix in FORBIDDEN[layer(module)]:
                if target == prefix or target.startswith(prefix + "."):
                    bad.append(f"{rel}:{line}: {layer(module)} layer imports {target}")
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
