"""The house's sizes: one concept per module, functions a reader takes in at once.

No module in backend/ over 300 lines, no function over 60 (from its first decorator to its
last line), the composition root's `build_services` under 80. The layering is import-linter's
(pyproject.toml), run by scripts/test.sh."""

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

import backend

PACKAGE = Path(backend.__file__).parent
MAX_MODULE_LINES = 300
MAX_FUNCTION_LINES = 60
LONGER = {("services.py", "build_services"): 80}  # the one place that wires every part


def sizes() -> tuple[dict[str, int], dict[tuple[str, str], int]]:
    modules, functions = {}, {}
    for path in sorted(PACKAGE.rglob("*.py")):
        name = str(path.relative_to(PACKAGE))
        source = path.read_text(encoding="utf-8")
        modules[name] = len(source.splitlines())
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                first = node.decorator_list[0].lineno if node.decorator_list else node.lineno
                functions[(name, node.name)] = (node.end_lineno or node.lineno) - first + 1
    return modules, functions


def test_no_module_is_over_300_lines():
    modules, _ = sizes()
    assert {name: n for name, n in modules.items() if n > MAX_MODULE_LINES} == {}


def test_no_function_is_over_60_lines():
    _, functions = sizes()
    too_long = {key: n for key, n in functions.items() if n > LONGER.get(key, MAX_FUNCTION_LINES)}
    assert too_long == {}


def test_the_check_sees_the_whole_package():
    modules, functions = sizes()
    assert "turns/turn.py" in modules and ("services.py", "build_services") in functions


def test_a_wrong_way_import_breaks_the_contracts(tmp_path):
    """The contracts can fail: an import up the layers and one across independent rooms."""
    shutil.copytree(PACKAGE, tmp_path / "backend", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(PACKAGE.parent / "pyproject.toml", tmp_path)
    (tmp_path / "backend" / "turns" / "wrong_way.py").write_text("import backend.inbox.service\n")
    (tmp_path / "backend" / "inbox" / "wrong_way.py").write_text("import backend.widget.routes\n")
    linter = Path(sys.executable).parent / "lint-imports"
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    run = subprocess.run([linter, "--no-cache"], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert run.returncode == 1, run.stdout
    assert "backend.turns.wrong_way -> backend.inbox.service" in run.stdout
    assert "backend.inbox.wrong_way -> backend.widget.routes" in run.stdout


def test_only_the_composition_roots_read_the_settings():
    """`get_settings()` reads the environment: the command and the app do, once; every other
    part is handed the settings (a sub-command reads them from its context)."""
    callers = set()
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "get_settings":
                callers.add(str(path.relative_to(PACKAGE)))
    assert callers <= {"cli.py", "app.py"}
