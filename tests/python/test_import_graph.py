"""The package's modules import each other without circles.

Every import inside api/python/octet counts, at module level or deferred
into a function body (a deferred import is still a dependency, and a circle
of them is one a reader has to untangle): the graph is read from the source
with ast, nothing is imported, and any cycle fails the test, named module
by module."""

import ast
import pathlib

PACKAGE = pathlib.Path(__file__).resolve().parents[2] / "api" / "python" / "octet"


def _module_name(path, package_dir):
    """octet/_core.py -> "octet._core"; octet/__init__.py -> "octet"."""
    relative = path.relative_to(package_dir.parent).with_suffix("")
    parts = list(relative.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _resolve(module, node, is_package):
    """The absolute module an ImportFrom names (level dots resolved)."""
    if node.level == 0:
        return node.module
    base = module.split(".")
    if not is_package:
        base.pop()  # a module's "." is its package
    base = base[:len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def import_graph(package_dir):
    """{module: {modules of the same package it imports}} for every .py file
    under package_dir. `from . import name` depends on the submodule `name`
    when there is one, else on the package (its __init__)."""
    package_dir = pathlib.Path(package_dir)
    files = {_module_name(p, package_dir): p for p in sorted(package_dir.rglob("*.py"))}
    root = package_dir.name
    graph = {}
    for module, path in files.items():
        is_package = path.name == "__init__.py"
        edges = set()
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            targets = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = _resolve(module, node, is_package)
                for alias in node.names:
                    submodule = f"{base}.{alias.name}"
                    targets.append(submodule if submodule in files else base)
            for target in targets:
                # "import octet.x.y" depends on octet.x.y (the longest name that is a module of ours)
                parts = target.split(".")
                while parts and ".".join(parts) not in files:
                    parts.pop()
                if parts and parts[0] == root and ".".join(parts) != module:
                    edges.add(".".join(parts))
        graph[module] = edges
    return graph


def find_cycles(graph):
    """[(component, circle)]: each set of modules that import each other
    round a circle (a strongly connected component of more than one module,
    or a module importing itself; Tarjan's algorithm) as a sorted list, with
    one concrete circle through it (a breadth-first search inside it)."""
    index, low, on_stack, stack, components = {}, {}, set(), [], []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
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
            if len(component) > 1 or v in graph.get(v, ()):
                components.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return [(component, _one_circle(graph, component)) for component in components]


def _one_circle(graph, component):
    """A circle start -> ... -> start inside the strongly connected component."""
    members, start = set(component), component[0]
    paths = [[start]]
    seen = {start}
    while paths:
        path = paths.pop(0)
        for w in sorted(graph[path[-1]]):
            if w == start:
                return path + [start]
            if w in members and w not in seen:
                seen.add(w)
                paths.append(path + [w])
    return component  # pragma: no cover - a strongly connected component always has one


def test_the_package_has_no_import_cycle():
    graph = import_graph(PACKAGE)
    assert "octet" in graph and len(graph) >= 5, f"api/python/octet was not read: {sorted(graph)}"
    cycles = find_cycles(graph)
    assert not cycles, "import cycles in api/python/octet:\n  " + "\n  ".join(
        " -> ".join(circle) for _, circle in cycles)


def _write_package(root, files):
    package = root / "pkg"
    package.mkdir()
    for name, text in files.items():
        (package / name).write_text(text)
    return package


def test_a_deferred_import_circle_is_found(tmp_path):
    package = _write_package(tmp_path, {
        "__init__.py": "from .a import f\n",
        "a.py": "from . import _b\n\ndef f():\n    return _b.g()\n",
        "_b.py": "def g():\n    from .a import f\n    return f\n",
        "c.py": "import pkg.a\n",
    })
    graph = import_graph(package)
    assert graph["pkg.a"] == {"pkg._b"} and graph["pkg._b"] == {"pkg.a"} and graph["pkg.c"] == {"pkg.a"}
    assert find_cycles(graph) == [(["pkg._b", "pkg.a"], ["pkg._b", "pkg.a", "pkg._b"])]


def test_an_import_of_the_package_itself_counts(tmp_path):
    # `from . import name` of a name that is no submodule imports __init__,
    # which imports the module back.
    package = _write_package(tmp_path, {
        "__init__.py": "from .a import f\nVALUE = 1\n",
        "a.py": "from . import VALUE\n\ndef f():\n    return VALUE\n",
        "b.py": "import os\nfrom .a import f\n",
    })
    graph = import_graph(package)
    assert graph["pkg.b"] == {"pkg.a"}
    assert [component for component, _ in find_cycles(graph)] == [["pkg", "pkg.a"]]


def test_a_layered_package_has_no_cycle(tmp_path):
    package = _write_package(tmp_path, {
        "__init__.py": "from .top import T\n",
        "low.py": "import math\n",
        "mid.py": "from . import low\nfrom .low import math\n",
        "top.py": "from .mid import low\nfrom . import mid\n\nclass T:\n    pass\n",
    })
    graph = import_graph(package)
    assert graph["pkg.top"] == {"pkg.mid"} and graph["pkg.mid"] == {"pkg.low"}
    assert find_cycles(graph) == []
