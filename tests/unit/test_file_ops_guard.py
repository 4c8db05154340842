"""The lint that keeps the services' file operations where no user writes: the tree passes
it, and a module that copies, chmods or walks anything outside the allowed ones fails it."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]


def _guard() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "check_file_ops", ROOT / "scripts/check_file_ops.py"
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["check_file_ops"] = module
    spec.loader.exec_module(module)
    return module


def test_the_tree_keeps_file_operations_in_the_allowed_modules() -> None:
    assert _guard().check(ROOT) == []


def test_a_new_module_that_touches_files_fails(tmp_path: Path) -> None:
    feature = tmp_path / "portal" / "feature"
    feature.mkdir(parents=True)
    (feature / "service.py").write_text(
        "import os, shutil\n"
        "from pathlib import Path\n"
        "def run(p: Path) -> None:\n"
        "    shutil.copytree(p, p / 'x')\n"
        "    os.chmod(p, 0o755)\n"
        "    for root, dirs, files in os.walk(p):\n"
        "        pass\n"
        "    p.chmod(0o644)\n"
        "    (p / 'y').write_text('z')\n"
        "    open(p / 'z').read()\n"
        "    'a'.replace('a', 'b')  # a string's replace is no file operation\n"
    )
    found = _guard().check(tmp_path, ("portal",))
    assert [f.split(": ")[1] for f in found] == [
        "shutil.copytree() outside the modules allowed to touch files",
        "os.chmod() outside the modules allowed to touch files",
        "os.walk() outside the modules allowed to touch files",
        ".chmod() outside the modules allowed to touch files",
        ".write_text() outside the modules allowed to touch files",
        "open() outside the modules allowed to touch files",
    ]
