"""The package map is a contract (docs/architecture.md): each package imports only from the layers
below it, `judge` never imports `cli`, no module imports a private name of another, and there is no
import circle anywhere in judge/ or cli/. Read from the source with `ast`, lazy imports included."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# Bottom to top. A package may import its own modules and any package of a lower layer; packages of
# one layer are siblings and never import each other.
LAYERS: list[set[str]] = [
    {"judge", "judge.paths", "judge.contract"},
    {"judge.problem"},
    {"judge.build"},
    {"judge.sandbox"},
    {"judge.gpu"},
    {"judge.worker"},
    {"judge.engine"},
    {"judge.store"},
    {"judge.runner", "judge.practice"},
    {"judge.board"},
    {"cli"},
]


def package_of(module: str) -> str:
    """`judge.engine.run` → `judge.engine`; top-level modules of judge are their own package."""
    parts = module.split(".")
    if parts[0] == "cli":
        return "cli"
    if len(parts) == 1:
        return "judge"
    return ".".join(parts[:2])


def layer(pkg: str) -> int:
    for i, names in enumerate(LAYERS):
        if pkg in names:
            return i
    raise AssertionError(f"package {pkg} is in no layer of tests/test_layers.py (add it, and to docs/architecture.md)")


def modules() -> dict[str, Path]:
    out = {}
    for top in ("judge", "cli"):
        for f in (ROOT / top).rglob("*.py"):
            rel = f.relative_to(ROOT).with_suffix("")
            name = ".".join(rel.parts[:-1] if rel.name == "__init__" else rel.parts)
            out[name] = f
    return out


MODULES = modules()


def imports(module: str, path: Path) -> list[tuple[str, list[str], int]]:
    """(imported module, names taken from it, line) for every import in the file, lazy ones too."""
    is_pkg = path.name == "__init__.py"
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out += [(a.name, [], node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".") if is_pkg else module.split(".")[:-1]
                base = base[: len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            names = [a.name for a in node.names]
            submodules = [f"{target}.{n}" for n in names if f"{target}.{n}" in MODULES]
            if submodules:  # `from judge.build import nvcc`: an import of the submodule
                out += [(s, [], node.lineno) for s in submodules]
                names = [n for n in names if f"{target}.{n}" not in MODULES]
                if not names:
                    continue
            out.append((target, names, node.lineno))
    return [(m, n, ln) for m, n, ln in out if m.split(".")[0] in ("judge", "cli")]


EDGES = {m: imports(m, p) for m, p in MODULES.items()}


def test_every_package_has_a_layer():
    for m in MODULES:
        layer(package_of(m))


def test_imports_go_down_the_layers():
    bad = []
    for m, edges in EDGES.items():
        src = package_of(m)
        for target, _, line in edges:
            dst = package_of(target)
            if dst == src or dst in ("judge",) and target == "judge":
                continue
            if layer(dst) > layer(src) or (layer(dst) == layer(src) and dst != src):
                bad.append(f"{MODULES[m].relative_to(ROOT)}:{line}: {src} (layer {layer(src)}) imports {target} "
                           f"(layer {layer(dst)})")
    assert not bad, "imports against the layering:\n" + "\n".join(bad)


def test_no_private_names_across_modules():
    bad = [f"{MODULES[m].relative_to(ROOT)}:{line}: from {target} import {n}"
           for m, edges in EDGES.items() for target, names, line in edges
           for n in names if n.startswith("_") and not n.startswith("__") and target != m]
    assert not bad, "private names imported from another module:\n" + "\n".join(bad)


def test_no_import_circles():
    graph = {m: {t for t, _, _ in edges if t in MODULES and t != m} for m, edges in EDGES.items()}
    # a package's __init__ importing nothing of its own is the norm here; an edge to a package means its __init__
    cycles, state, stack = [], {}, []

    def visit(m: str) -> None:
        state[m] = 1
        stack.append(m)
        for t in sorted(graph[m]):
            if state.get(t) == 1:
                cycles.append(stack[stack.index(t):] + [t])
            elif t not in state:
                visit(t)
        stack.pop()
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m)
    assert not cycles, "import circles:\n" + "\n".join(" -> ".join(c) for c in cycles)


@pytest.mark.parametrize("case, ok", [
    ({"judge.engine.run": [("judge.problem.spec", [], 1)]}, True),
    ({"judge.problem.spec": [("judge.engine.run", [], 1)]}, False),
    ({"judge.runner.profile": [("judge.practice.verify", [], 1)]}, False),  # siblings
    ({"judge.board.jobs": [("cli.app", [], 1)]}, False),
])
def test_the_layer_rule_itself(case, ok):
    """The check above can fail: an upward, sideways or judge→cli import is caught."""
    (m, edges), = case.items()
    src = package_of(m)
    verdicts = [not (layer(package_of(t)) > layer(src) or (layer(package_of(t)) == layer(src) and package_of(t) != src))
                for t, _, _ in edges]
    assert all(verdicts) == ok
