"""The package stays a house a newcomer can read: no two runtime modules import each other, even in a roundabout way.

An import circle means neither module can be understood, tested or loaded without the other. Imports inside
functions and under ``TYPE_CHECKING`` count too: they hide a circle from the interpreter, not from the reader.

To break one: move the shared names (a type, a small helper) down into a module both can import, re-exported where
they were; or hand the dependency in (a workflow run is given ``run_call``, it does not import the pipeline); or name
a collaborator by a Protocol of what is asked of it. The package facade (``runtime/__init__.py``) names most of the
runtime, so a module inside the package imports a name from where it is defined, never ``from runtime import ...``.
"""

from __future__ import annotations

import ast
from pathlib import Path

import runtime

PACKAGE = Path(runtime.__file__).parent

# Circles kept on purpose, each as the sorted tuple of its modules, with the reason. Empty: none is needed today.
ALLOWED: dict[tuple[str, ...], str] = {}


def _module_name(path: Path, package: Path) -> str:
    parts = list(path.relative_to(package.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules(package: Path) -> dict[str, Path]:
    return {_module_name(path, package): path for path in sorted(package.rglob("*.py"))}


def _absolute(module: str | None, level: int, importer: str, is_package: bool) -> str:
    """The absolute dotted name a (possibly relative) ``from`` import names."""
    if level == 0:
        return module or ""
    base = importer.split(".")
    if not is_package:
        base = base[:-1]
    if level > 1:
        base = base[: len(base) - (level - 1)]
    return ".".join(base + ([module] if module else []))


def import_graph(package: Path = PACKAGE) -> dict[str, set[str]]:
    """Module -> runtime modules it imports anywhere in its text (top level, functions, ``TYPE_CHECKING``).

    ``from pkg import name`` points at ``pkg.name`` when that is a module, else at ``pkg`` (where the name lives).
    """
    modules = _modules(package)
    root = package.name
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        is_package = path.name == "__init__.py"
        for node in ast.walk(tree):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                source = _absolute(node.module, node.level, name, is_package)
                for alias in node.names:
                    submodule = f"{source}.{alias.name}"
                    targets.append(submodule if submodule in modules else source)
            for target in targets:
                while target and target not in modules:
                    target = target.rpartition(".")[0]
                if target and target != name and (target == root or target.startswith(root + ".")):
                    graph[name].add(target)
    return graph


def circles(graph: dict[str, set[str]]) -> list[tuple[str, ...]]:
    """Strongly connected components with more than one module (Tarjan, iterative), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[tuple[str, ...]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work: list[tuple[str, list[str]]] = [(root, sorted(graph[root]))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, pending = work[-1]
            if pending:
                child = pending.pop()
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, sorted(graph[child])))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(tuple(sorted(component)))
    return sorted(found)


def test_runtime_modules_import_each_other_in_no_circle() -> None:
    unexpected = [circle for circle in circles(import_graph()) if circle not in ALLOWED]
    assert not unexpected, "break these import circles (move shared names down, or hand the dependency in):\n" + (
        "\n".join(" <-> ".join(circle) for circle in unexpected)
    )


def test_every_allowed_circle_still_exists() -> None:
    present = set(circles(import_graph()))
    assert not [circle for circle in ALLOWED if circle not in present], "drop allowed circles that are gone"


def test_the_circle_finder_sees_lazy_relative_and_type_checking_imports(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    files = {
        "__init__.py": "",
        "a.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.sub.b import B\n",
        "sub/__init__.py": "",
        "sub/b.py": "def f():\n    from ..c import C\n",
        "c.py": "import pkg.a\n",
        "d.py": "from pkg import a\nimport json\n",
    }
    for name, text in files.items():
        (package / name).write_text(text, encoding="utf-8")
    graph = import_graph(package)
    assert graph["pkg.d"] == {"pkg.a"}
    assert circles(graph) == [("pkg.a", "pkg.c", "pkg.sub.b")]
