"""The layering rules import-linter cannot check (its contracts are in pyproject.toml): no
package takes another's private names, only the Slurm client and the lab name Slurm's commands,
no import cycle runs through a package boundary, and no module imports itself through others
inside its package either (a late import inside a function counts as much as one at the top).

Each check is a function over a source tree, so that a small tree with violations in it shows
that the check finds exactly them.
"""

from __future__ import annotations

import ast
import tomllib
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path, PurePosixPath

import grimp
import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES: tuple[str, ...] = tuple(
    tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["root_packages"]
)
SLURM_COMMANDS = frozenset(
    {"sbatch", "srun", "salloc", "squeue", "scontrol", "scancel", "sinfo", "sacct", "sacctmgr"}
    | {"sstat", "sprio", "sshare", "sreport", "sdiag", "strigger", "sattach", "sbcast"}
)
# where Slurm's commands may be named: the client that runs them, the lab that starts Slurm
SLURM_PLACES = ("slurm_plugins/client", "aipool/lab")


# ---------------------------------------------------------------------------- the source tree
def sources(root: Path, packages: Sequence[str]) -> Iterator[tuple[Path, str]]:
    """Every module of ``packages`` under ``root``: its file and the package it belongs to."""
    for top in packages:
        for path in sorted((root / top).rglob("*.py")):
            parts = path.relative_to(root).parent.parts
            yield path, ".".join(parts)


def _is_package(root: Path, dotted: str) -> bool:
    return (root.joinpath(*dotted.split("."))).is_dir()


def _is_module(root: Path, dotted: str) -> bool:
    path = root.joinpath(*dotted.split("."))
    return path.is_dir() or path.with_suffix(".py").is_file()


def _package_of(root: Path, dotted: str) -> str:
    return dotted if _is_package(root, dotted) else dotted.rpartition(".")[0]


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _source(node: ast.ImportFrom, package: str) -> str:
    """The absolute module a ``from … import`` reads from."""
    if not node.level:
        return node.module or ""
    base = package.split(".")[: len(package.split(".")) - node.level + 1]
    return ".".join([*base, *([node.module] if node.module else [])])


def _dotted(node: ast.expr, aliases: Mapping[str, str]) -> str | None:
    """``a.b.c`` as the module path it names, when ``a`` is an imported module."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name) or node.id not in aliases:
        return None
    return ".".join([aliases[node.id], *reversed(parts)])


# ---------------------------------------------------------------------------- the checks
def private_imports(root: Path, packages: Sequence[str]) -> list[str]:
    """``file:line: name from module`` for each private name a module takes from a module of
    another package (``from m import _x``, ``m._x``); its own package's are its own."""
    found: list[str] = []
    for path, package in sources(root, packages):
        where = path.relative_to(root).as_posix()
        tree = ast.parse(path.read_text(), str(path))
        aliases: dict[str, str] = {}  # local names of imported modules of ours
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.split(".")[0] in packages:
                        bound = alias.asname or alias.name.split(".")[0]
                        aliases[bound] = alias.name if alias.asname else bound
            elif isinstance(node, ast.ImportFrom):
                source = _source(node, package)
                if source.split(".")[0] not in packages:
                    continue
                for alias in node.names:
                    full = f"{source}.{alias.name}"
                    owner = _package_of(root, full if _is_module(root, full) else source)
                    if _private(alias.name) and owner != package:
                        found.append(f"{where}:{node.lineno}: {alias.name} from {source}")
                    if _is_module(root, full):
                        aliases[alias.asname or alias.name] = full
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and _private(node.attr):
                module = _dotted(node.value, aliases)
                if module and _is_module(root, module) and _package_of(root, module) != package:
                    found.append(f"{where}:{node.lineno}: {node.attr} from {module}")
    return sorted(found)


def slurm_commands(root: Path, packages: Sequence[str], places: Sequence[str]) -> list[str]:
    """``file:line: command`` for each string naming a Slurm command (``"sbatch"``,
    ``".../sbatch"``) outside ``places``: only they may build a Slurm argv."""
    found: list[str] = []
    for path, _package in sources(root, packages):
        where = path.relative_to(root).as_posix()
        if any(where.startswith(f"{place}/") for place in places):
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                name = PurePosixPath(node.value.strip()).name
                if name in SLURM_COMMANDS:
                    found.append(f"{where}:{node.lineno}: {name}")
    return sorted(found)


def boundary_cycles(packages: Sequence[str]) -> list[tuple[str, ...]]:
    """Import cycles (every import counts: lazy ones and those for type checking too) that
    leave a package, each as the modules it runs through. Cycles inside one package are its
    own business."""
    graph = grimp.build_graph(*packages, cache_dir=None)

    def package(module: str) -> str:
        return module if graph.find_children(module) else module.rpartition(".")[0]

    cycles: dict[frozenset[str], tuple[str, ...]] = {}
    for importer in sorted(graph.modules):
        for imported in sorted(graph.find_modules_directly_imported_by(importer)):
            if package(importer) == package(imported):
                continue
            back = graph.find_shortest_chain(importer=imported, imported=importer)
            if back:
                cycles.setdefault(frozenset(back), (importer, *back))
    return sorted(cycles.values())


def module_cycles(packages: Sequence[str]) -> list[tuple[str, ...]]:
    """Every import cycle between modules, inside a package or across packages, each once, as
    the modules it runs through. A piece two modules share goes down into a third module, so
    that neither imports the other back (lazily or not). Imports for type checking only are
    left out: an annotation names a type and runs nothing (``job_wire`` names the
    ``JobRequest`` it writes)."""
    graph = grimp.build_graph(*packages, cache_dir=None, exclude_type_checking_imports=True)
    cycles: dict[frozenset[str], tuple[str, ...]] = {}
    for importer in sorted(graph.modules):
        for imported in sorted(graph.find_modules_directly_imported_by(importer)):
            back = graph.find_shortest_chain(importer=imported, imported=importer)
            if back and imported != importer:
                cycles.setdefault(frozenset(back), (importer, *back))
    return sorted(cycles.values())


# ---------------------------------------------------------------------------- the tree as it is
def test_no_package_takes_another_packages_private_names() -> None:
    assert private_imports(ROOT, PACKAGES) == []


def test_only_the_client_and_the_lab_name_slurm_commands() -> None:
    assert slurm_commands(ROOT, PACKAGES, SLURM_PLACES) == []


def test_no_import_cycle_crosses_a_package_boundary() -> None:
    assert boundary_cycles(PACKAGES) == []


def test_no_module_imports_itself_through_others() -> None:
    assert module_cycles(PACKAGES) == []


# ---------------------------------------------------------------------------- the checks catch
def _tree(root: Path, files: Mapping[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def test_private_names_taken_across_packages_are_found(tmp_path: Path) -> None:
    root = _tree(
        tmp_path,
        {
            "a/__init__.py": "",
            "a/x.py": "_p = 1\nq = 2\n",
            "a/y.py": "from a.x import _p\nfrom .x import _p as p2\nfrom . import x\nx._p\n",
            "a/sub/__init__.py": "",
            "a/sub/z.py": "from ..x import _p\nfrom a import _hidden\n",
            "b/__init__.py": "",
            "b/w.py": (
                "import a.x\nimport a.x as ax\nfrom a import x\nfrom a.x import q, __doc__\n"
                "a.x._p\nax._p\nx._p\nx.q._r\nx.__name__\n"
            ),
        },
    )
    assert private_imports(root, ["a", "b"]) == [
        "a/sub/z.py:1: _p from a.x",
        "a/sub/z.py:2: _hidden from a",
        "b/w.py:5: _p from a.x",
        "b/w.py:6: _p from a.x",
        "b/w.py:7: _p from a.x",
    ]


def test_slurm_commands_named_outside_the_client_are_found(tmp_path: Path) -> None:
    root = _tree(
        tmp_path,
        {
            "slurm_plugins/client/run.py": 'ARGV = ["sbatch", "--parsable"]\n',
            "aipool/lab/up.py": 'TOOLS = ("sacctmgr", "scontrol")\n',
            "jobs/submit.py": (
                'import shutil\nargv = ["scontrol", "show", "job"]\n'
                'where = shutil.which("squeue")\nfull = f"{bin}/sacct"\n'
                'said = "sbatch refused the job"\nkey = "sinfo: down"\n'
            ),
        },
    )
    found = slurm_commands(root, ["slurm_plugins", "aipool", "jobs"], SLURM_PLACES)
    assert found == [
        "jobs/submit.py:2: scontrol",
        "jobs/submit.py:3: squeue",
        "jobs/submit.py:4: sacct",
    ]


def test_import_cycles_through_a_package_boundary_are_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _tree(
        tmp_path,
        {
            "lyr_one/__init__.py": "",
            # a lazy import is part of the cycle all the same
            "lyr_one/x.py": "def f():\n    from lyr_two import y\n",
            "lyr_one/p.py": "from lyr_one import q\n",
            "lyr_one/q.py": "from lyr_one import p\n",
            "lyr_two/__init__.py": "",
            "lyr_two/y.py": "from lyr_one import x\n",
            "lyr_two/z.py": "from lyr_one import p\n",
        },
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    assert boundary_cycles(["lyr_one", "lyr_two"]) == [("lyr_one.x", "lyr_two.y", "lyr_one.x")]


def test_import_cycles_inside_a_package_are_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _tree(
        tmp_path,
        {
            "cyc_one/__init__.py": "",
            "cyc_one/p.py": "from cyc_one import q\n",
            # late, as a routes module at the foot of a blueprint's
            "cyc_one/q.py": "X = 1\nfrom cyc_one import p  # noqa: E402\n",
            "cyc_one/r.py": "def f():\n    from cyc_one.s import g\n",
            "cyc_one/s.py": "from cyc_one.t import h\ndef g(): ...\n",
            "cyc_one/t.py": "from cyc_one.r import f\ndef h(): ...\n",
            "cyc_one/u.py": "from cyc_one import p, t\n",  # reads both, in no cycle
            # an annotation's import back runs nothing
            "cyc_one/v.py": "from cyc_one.w import W\n",
            "cyc_one/w.py": (
                "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from cyc_one import v\n"
                "class W: ...\n"
            ),
        },
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    assert module_cycles(["cyc_one"]) == [
        ("cyc_one.p", "cyc_one.q", "cyc_one.p"),
        ("cyc_one.r", "cyc_one.s", "cyc_one.t", "cyc_one.r"),
    ]
