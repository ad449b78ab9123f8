"""Safe arithmetic expressions over a problem's scalar parameters.

Shapes, flops, bytes and input scales in `problem.yaml` are written as small expressions
("2*M*N*K", "B*H*N*D", "K**-0.25"). They are parsed once with `ast` and may use only numbers,
the scalar names of the signature, + - * / // % ** and min/max/ceil_div. A condition
(`parse(..., condition=True)`, e.g. `accepts_classic_wrong[].when`: "rows == 1 or cols == 1") may
also compare (== != < <= > >=) and combine with and/or/not.
"""
from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable
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
_CMPOPS: dict[type[ast.cmpop], Callable[[float, float], bool]] = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
}
_FUNCS: dict[str, Callable[..., int | float]] = {"min": min, "max": max, "ceil_div": lambda a, b: -(-a // b),
                                                 "sqrt": math.sqrt}


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


def parse(text: str | int | float, allowed: set[str], condition: bool = False) -> Expr:
    """Parse `text`; raise ExprError naming the first unknown name or construct. A `condition`
    must be a comparison, or comparisons combined with and/or/not; it evaluates to a bool."""
    source = str(text).strip()
    try:
        tree = ast.parse(source, mode="eval")
    except SyntaxError as e:
        raise ExprError(f"cannot parse {source!r}: {e.msg}") from None
    if condition and not (isinstance(tree.body, (ast.Compare, ast.BoolOp))
                          or isinstance(tree.body, ast.UnaryOp) and isinstance(tree.body.op, ast.Not)):
        raise ExprError(f"{source!r} is not a condition (compare with == != < <= > >=, join with and/or)")
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
            if not isinstance(node.op, (ast.USub, ast.UAdd)) and not (condition and isinstance(node.op, ast.Not)):
                raise ExprError(f"operator {type(node.op).__name__} not allowed in {source!r}")
        elif condition and isinstance(node, ast.Compare):
            if any(type(op) not in _CMPOPS for op in node.ops):
                raise ExprError(f"only == != < <= > >= may compare in {source!r}")
        elif condition and isinstance(node, (ast.BoolOp, ast.boolop, ast.cmpop)):
            continue  # and/or; the comparison operators were checked on their Compare
        elif not isinstance(node, (ast.Expression, ast.Load, ast.operator, ast.unaryop)):
            raise ExprError(f"{type(node).__name__} not allowed in {source!r}")
    return Expr(source, frozenset(names), tree)


def _eval(node: ast.AST, scope: dict[str, int | float]) -> int | float:
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
        return node.value
    if isinstance(node, ast.Name):
        return scope[node.id]
    if isinstance(node, ast.BinOp):
        return _BINOPS[type(node.op)](_eval(node.left, scope), _eval(node.right, scope))
    if isinstance(node, ast.UnaryOp):
        value = _eval(node.operand, scope)
        if isinstance(node.op, ast.Not):
            return not value
        return -value if isinstance(node.op, ast.USub) else value
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        return _FUNCS[node.func.id](*(_eval(a, scope) for a in node.args))
    if isinstance(node, ast.Compare):  # a < b <= c: every link holds
        left = _eval(node.left, scope)
        for op, right_node in zip(node.ops, node.comparators):
            right = _eval(right_node, scope)
            if not _CMPOPS[type(op)](left, right):
                return False
            left = right
        return True
    if isinstance(node, ast.BoolOp):
        values = (bool(_eval(v, scope)) for v in node.values)
        return all(values) if isinstance(node.op, ast.And) else any(values)
    raise ExprError(f"cannot evaluate {ast.dump(node)}")
