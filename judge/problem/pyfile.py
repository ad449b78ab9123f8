"""A problem folder's Python files: `file.py:function` references, checked with `ast` at load time
(loading a problem never imports them) and imported when the judge needs the function."""
from __future__ import annotations

import ast
import importlib.util
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

REF_PATTERN = r"^[\w./-]+\.py:[A-Za-z_][A-Za-z0-9_]*$"


def split(root: Path, ref: str) -> tuple[Path, str]:
    """`file.py:func` → (root / file.py, func)."""
    file, func = ref.split(":")
    return root / file, func


def function_def(root: Path, ref: str) -> ast.FunctionDef:
    """The top-level `def` that `ref` names, without importing the file; ValueError says why not."""
    file, func = ref.split(":")
    path = root / file
    if not path.is_file():
        raise ValueError(f"file {file} not found in {root}")
    try:
        tree = ast.parse(path.read_text(), filename=str(path))
    except SyntaxError as e:
        raise ValueError(f"{file} line {e.lineno}: {e.msg}") from None
    for n in tree.body:
        if isinstance(n, ast.FunctionDef) and n.name == func:
            return n
    raise ValueError(f"{file} defines no function {func!r}")


def load_function(path: Path, func: str) -> Callable:
    return getattr(_module(path), func)


_MODULES: dict[Path, ModuleType] = {}


def _module(path: Path) -> ModuleType:
    path = path.resolve()
    if path not in _MODULES:
        name = f"judge_problem_{path.parent.name}" + ("" if path.stem == "reference" else f"_{path.stem}")
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            raise ImportError(f"cannot import {path}")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        _MODULES[path] = module
    return _MODULES[path]
