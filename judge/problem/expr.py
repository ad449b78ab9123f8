"""Safe arithmetic expressions over a problem's scalar parameters.

Shapes, flops, bytes and input scales in `problem.yaml` are written as small expressions
("2*M*N*K", "B*H*N*D", "K**-0.25"). They are parsed once with `ast` and may use only numbers,
the scalar names of the signature, + - * / // % ** and min/max/ceil_div.
"""
from __future__ import annotations

import ast
import math
import operator
from dataclasses import dataclass

_BINOPS = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_FUNCS = {"min": min, "max": max, "ceil_div": lambda a, b: -(-a // b), "sqrt": math.sqrt}


class ExprError(ValueError):
    """An expression that does not parse or uses something it may not."""


@dataclass(frozen=True)
class Expr:
    text: str
    names: frozenset[str]
    _tree: ast.Expression

    def __call__(self, scope: dict[str, int | float]) -> int | float:
        return _eval(self._tree.body, scope)

    def __str__(self) -> str:
        return self.text


def parse(text: str | int | float, allowed: set[str]) -> Expr:
    """Parse `text`; raise ExprError naming the first unknown name or construct."""
    source = str(text).strip()
    try:
        tree = ast.parse(source, mode="eval")
    except SyntaxError as e:
        raise ExprError(f"cannot parse {source!r}: {e.msg}") from None
    names: set[str] = set()
    called = {id(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            if node.id in _FUNCS and id(node) in called:
                continue
            if node.id not in allowed:
                known = ", ".join(sorted(allowed)) or "none"
                raise ExprError(f"unknown name {node.id!r} in {source!r} (scalars: {known})")
            names.add(node.id)
        elif isinstance(node, ast.Call):
            if not (isinstance(node.func, ast.Name) and node.func.id in _FUNCS) or node.keywords:
                raise ExprError(f"only {', '.join(_FUNCS)} may be called in {source!r}")
        elif isinstance(node, ast.Constant):
            if not isinstance(node.value, (int, float)) or isinstance(node.value, bool):
                raise ExprError(f"only numbers may appear in {source!r}")
        elif isinstance(node, ast.BinOp):
            if type(node.op) not in _BINOPS:
                raise ExprError(f"operator {type(node.op).__name__} not allowed in {source!r}")
        elif isinstance(node, ast.UnaryOp):
            if not isinstance(node.op, (ast.USub, ast.UAdd)):
                raise ExprError(f"operator {type(node.op).__name__} not allowed in {source!r}")
        elif not isinstance(node, (ast.Expression, ast.Load, ast.operator, ast.unaryop)):
            raise ExprError(f"{type(node).__name__} not allowed in {source!r}")
    return Expr(source, frozenset(names), tree)


def _eval(node: ast.AST, scope: dict[str, int | float]) -> int | float:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        return scope[node.id]
    if isinstance(node, ast.BinOp):
        return _BINOPS[type(node.op)](_eval(node.left, scope), _eval(node.right, scope))
    if isinstance(node, ast.UnaryOp):
        value = _eval(node.operand, scope)
        return -value if isinstance(node.op, ast.USub) else value
    if isinstance(node, ast.Call):
        return _FUNCS[node.func.id](*(_eval(a, scope) for a in node.args))  # type: ignore[attr-defined]
    raise ExprError(f"cannot evaluate {ast.dump(node)}")
