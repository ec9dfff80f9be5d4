"""The package imports only downward: every ``src/evolax`` module's ``evolax`` imports (those
inside functions too) point to a lower layer, to a peer it may use, or within its own package.

Pure ``ast``: no module is imported. ``evolax/__init__.py`` (the re-exports) is exempt, and so
are imports under ``if TYPE_CHECKING:`` (annotations only).
"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"

# lowest first; a name covers the module and, for a package, everything in it
LAYERS: list[list[str]] = [
    [
        "evolax.types",
        "evolax.compiled",
        "evolax.validation",
        "evolax.cache",
        "evolax.sharding",
        "evolax.xla_cpu",
        "evolax.normalize",
        "evolax.logging",
        "evolax.layout",
        "evolax.optim",
        "evolax.drawing",
        "evolax.evojax_interop",
        "evolax.data",
        "evolax.problems",
        "evolax.pareto",
        "evolax.qd",
        "evolax.schema",
        "evolax.seeded",
        "evolax.population",
        "evolax.neat",
        "evolax.host",
        "evolax.runlock",
        "evolax.lm",
        "evolax.extras",
        "evolax.hlo",
    ],
    ["evolax.algorithms", "evolax.policies", "evolax.tasks"],
    ["evolax.rollout", "evolax.render", "evolax.coco"],
    ["evolax.trainer", "evolax.multitask"],
    ["evolax.placement"],
    ["evolax.runner", "evolax.hooks", "evolax.checkpoint"],
    ["evolax.config", "evolax.legacy", "evolax.runs"],
    ["evolax.cli"],
]
LAYER_1, PEERS = 1, 2  # layer 1: any import among its modules (no cycles); above: own package
# the imports allowed within one layer above 2: (importer, imported)
SAME_LAYER = {
    ("evolax.render", "evolax.rollout"),
    ("evolax.trainer", "evolax.multitask"),
    ("evolax.runner", "evolax.checkpoint"),
    ("evolax.runner", "evolax.hooks"),
    ("evolax.hooks", "evolax.checkpoint"),
    ("evolax.runs", "evolax.config"),
    ("evolax.runs", "evolax.legacy"),
    ("evolax.legacy", "evolax.config"),
}
ROOT = "evolax"


def module_name(path: Path, src: Path) -> str:
    parts = list(path.relative_to(src).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def group(module: str) -> str | None:
    """The entry of ``LAYERS`` that covers ``module``."""
    for layer in LAYERS:
        for name in layer:
            if module == name or module.startswith(name + "."):
                return name
    return None


def layer(module: str) -> int | None:
    name = group(module)
    return None if name is None else 1 + next(i for i, g in enumerate(LAYERS) if name in g)


def is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def imported(tree: ast.Module, module: str, is_package: bool, known: set[str]):
    """``(imported module, line)`` of every ``evolax`` import, at any depth, except under
    ``if TYPE_CHECKING:``; ``from a import b`` imports ``a.b`` where that is a module."""
    package = module if is_package else module.rpartition(".")[0]

    def resolve(name: str) -> str:  # the longest known module that `name` is, or is in
        while name not in known and "." in name:
            name = name.rpartition(".")[0]
        return name

    def visit(node: ast.AST):
        if isinstance(node, ast.If) and is_type_checking(node.test):
            nodes = node.orelse
        else:
            nodes = list(ast.iter_child_nodes(node))
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            for alias in node.names:
                full = f"{base}.{alias.name}"
                yield (full if full in known else base), node.lineno
        for child in nodes:
            yield from visit(child)

    for name, line in visit(tree):
        if name == ROOT or name.startswith(ROOT + "."):
            yield resolve(name), line


def import_graph(src: Path = SRC) -> dict[str, dict[str, tuple[str, int]]]:
    """Per module, the modules it imports with the first place each is imported
    (``path:line``)."""
    files = {module_name(p, src): p for p in sorted((src / ROOT).rglob("*.py"))}
    known = set(files)
    graph: dict[str, dict[str, tuple[str, int]]] = {}
    for module, path in files.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        edges: dict[str, tuple[str, int]] = {}
        for target, line in imported(tree, module, path.name == "__init__.py", known):
            if target != module:
                edges.setdefault(target, (str(path.relative_to(src)), line))
        graph[module] = edges
    return graph


def violations(graph: dict[str, dict[str, tuple[str, int]]]) -> list[str]:
    """One line per import that breaks the layering, per module without a layer, and per
    import cycle."""
    # the re-exports depend on all they re-export: importing them counts as their top layer
    root_layer = max((layer(t) or 0 for t in graph.get(ROOT, {})), default=0)
    found = []
    for module, edges in sorted(graph.items()):
        if module == ROOT:
            continue
        own = layer(module)
        if own is None:
            found.append(f"{module} has no layer: add it to LAYERS in tests/test_layers.py")
            continue
        for target, (path, line) in sorted(edges.items()):
            where = f"  [{path}:{line}]"
            theirs = root_layer if target == ROOT else layer(target)
            if theirs is None:
                continue  # reported as a module without a layer
            if theirs > own:
                found.append(f"{module} imports {target} (layer {theirs} > {own}){where}")
            elif theirs == own and own == PEERS and group(target) != group(module):
                found.append(
                    f"{module} imports {target} (peer package {group(target)} in layer "
                    f"{own}){where}"
                )
            elif (
                theirs == own
                and own > PEERS
                and group(target) != group(module)
                and (module, target) not in SAME_LAYER
            ):
                found.append(
                    f"{module} imports {target} (same layer {own}, not an allowed edge){where}"
                )
    found += [f"import cycle: {' -> '.join(cycle)}" for cycle in cycles(graph)]
    return found


def cycles(graph: dict[str, dict[str, tuple[str, int]]]) -> list[list[str]]:
    """One cycle through each strongly connected group of modules (the re-exports aside)."""
    found, done, stack = [], set(), []
    on_stack: dict[str, int] = {}

    def visit(module: str) -> None:
        on_stack[module] = len(stack)
        stack.append(module)
        for target in graph.get(module, {}):
            if target == ROOT or target in done:
                continue
            if target in on_stack:
                found.append([*stack[on_stack[target] :], target])
            else:
                visit(target)
        stack.pop()
        del on_stack[module]
        done.add(module)

    for module in sorted(graph):
        if module != ROOT and module not in done:
            visit(module)
    return found


def test_no_upward_imports():
    found = violations(import_graph())
    assert not found, "imports against the layering:\n" + "\n".join(found)


def test_checker_catches_hidden_imports(tmp_path):
    package = tmp_path / ROOT
    (package / "tasks").mkdir(parents=True)
    (package / "__init__.py").write_text("from evolax.cli import main\n")
    (package / "types.py").write_text("from evolax.validation import check\n")
    (package / "validation.py").write_text("def check():\n    from evolax.types import Key\n")
    (package / "render.py").write_text("from evolax.types import PRNGKey\n")
    (package / "cli.py").write_text("from evolax import tasks\n")
    (package / "tasks" / "__init__.py").write_text("")
    (package / "tasks" / "mnist.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from evolax.cli import main\n"
        "def render():\n"
        "    from ..render import text_image\n"
        "    from evolax import policies\n"
    )
    (package / "policies.py").write_text("import evolax\n")
    assert violations(import_graph(tmp_path)) == [
        "evolax.policies imports evolax (layer 8 > 2)  [evolax/policies.py:1]",
        "evolax.tasks.mnist imports evolax.policies (peer package evolax.policies in layer 2)"
        "  [evolax/tasks/mnist.py:6]",
        "evolax.tasks.mnist imports evolax.render (layer 3 > 2)  [evolax/tasks/mnist.py:5]",
        "import cycle: evolax.types -> evolax.validation -> evolax.types",
    ]


# what is traced (composed into a jitted step) and the tuner, which times programs, runs
# threads and writes files: no traced module may reach it, however indirectly
TRACED = [
    "evolax.algorithms",
    "evolax.policies",
    "evolax.tasks",
    "evolax.rollout",
    "evolax.trainer",
]
TUNER = "evolax.placement.tuner"


def reachable(graph: dict[str, dict[str, tuple[str, int]]], module: str) -> set[str]:
    """Every module ``module`` imports, directly or through others (the re-exports aside)."""
    seen, todo = set(), [module]
    while todo:
        for target in graph.get(todo.pop(), {}):
            if target != ROOT and target not in seen:
                seen.add(target)
                todo.append(target)
    return seen


def test_nothing_traced_imports_the_tuner():
    graph = import_graph()
    assert TUNER in graph
    traced = [m for m in graph if any(m == t or m.startswith(t + ".") for t in TRACED)]
    assert "evolax.trainer" in traced
    found = [m for m in traced if TUNER in reachable(graph, m)]
    assert not found, f"traced modules that import {TUNER}: {found}"
