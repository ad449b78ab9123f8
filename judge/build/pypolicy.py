"""Static policy for Python (Triton) submissions (docs/security.md, "Python submissions"): what a `.py`
may name, read off its syntax tree before it is ever imported. Like the CUDA policy
(judge/build/policy.py) it is a first filter that names the rule a file breaks; the wall is the
process the file runs in, and the run-time record of what its `solve` computes with.

The rules, each refused with its line:
1. **Imports**: `triton`, `triton.language` (`import triton.language as tl`), `math` and `torch`;
   `from M import name` only of names the rules below allow; never a star import.
2. **Modules are used by name**: `tl.load`, `triton.jit`, `torch.empty`, `math.sqrt`. A module
   itself is never a value (`x = tl`, `f(torch)`), never rebound, and never assigned into or
   deleted from (monkeypatching). Only the names listed here are reachable from each module:
   triton's decorators and helpers, the public functions and types of `triton.language` (and of
   `tl.math`), math's functions, and from torch what allocating and viewing tensors needs
   (`torch.empty`, dtypes, ...): no torch compute op (`torch.matmul`), no `torch.cuda`, no
   submodule, and nothing that leads to another module (`tl.extra.pkgutil` would).
3. **No dunders**: no name, attribute, parameter or definition that starts with `__` (the road to
   `__globals__`, `__builtins__`, `__subclasses__`), except reading `__name__` in
   `if __name__ == "__main__":`, whose body is not checked: the judge imports the file under
   another name, so it never runs.
4. **Builtins**: a name the file does not bind itself must be one of `BUILTINS` (len, range, min,
   ...): no `getattr`, `setattr`, `eval`, `exec`, `compile`, `open`, `globals`, `vars`, `type`,
   `object`, `__import__`, `breakpoint`, `input`. The other builtins' names may not be bound
   either (a parameter named `getattr` would make every use of the name look like the file's own).
5. **No introspection by other roads**: no attribute that starts with `_` (private internals: `x._base`),
   none of the frame, code and traceback attributes (`gen.gi_frame.f_globals` reaches the file's
   globals and their `__builtins__` without a dunder name), no string constant with `__` in it (a
   key such as `"__builtins__"`; docstrings excepted), and no `.format` / `.format_map`
   (`"{0.fn.__globals__}".format(f)` reads attributes a dunder rule cannot see).
"""
from __future__ import annotations

import ast
import builtins
import math
from dataclasses import dataclass

from judge.build.policy import PolicyError, Violation

MODULES = ("triton", "triton.language", "math", "torch")
TRITON = frozenset("jit autotune Config heuristics cdiv next_power_of_2 language".split())
# triton.language's public functions and types (its __all__ in Triton 3.6-3.9, modules left out:
# extra, math, target_info); tests/build/test_pypolicy.py checks them against the installed Triton.
TL = frozenset("""
PropagateNan TRITON_MAX_TENSOR_NUMEL abs add arange argmax argmin associative_scan assume atomic_add
atomic_and atomic_cas atomic_max atomic_min atomic_or atomic_xchg atomic_xor bfloat16 broadcast
broadcast_to cast cat cdiv ceil clamp constexpr cos cumprod cumsum debug_barrier device_assert
device_print div_rn dot dot_scaled dtype erf exp exp2 expand_dims fdiv flip float16 float32 float64
float8e4b15 float8e4b8 float8e4nv float8e5 float8e5b16 floor fma full gather histogram
inline_asm_elementwise int1 int16 int32 int64 int8 interleave join load load_tensor_descriptor log
log2 make_block_ptr make_tensor_descriptor max max_constancy max_contiguous maximum min minimum mul
multiple_of num_programs pair_uniform_to_normal permute philox philox_impl pi32_t pointer_type
program_id rand rand4x randint randint4x randn randn4x range ravel reduce reshape rsqrt sigmoid sin
softmax sort split sqrt sqrt_rn squeeze static_assert static_print static_range store
store_tensor_descriptor sub sum swizzle2d tensor tensor_descriptor trans uint16 uint32 uint64 uint8
uint_to_uniform_float umulhi unsqueeze view void where xor_sum zeros zeros_like math
""".split())
TL_MATH = frozenset("abs ceil cos div_rn erf exp exp2 fdiv floor fma log log2 rsqrt sin sqrt sqrt_rn umulhi".split())
MATH = frozenset(n for n in dir(math) if not n.startswith("_"))
TORCH = frozenset("""
empty empty_like empty_strided zeros zeros_like full full_like ones ones_like
float16 float32 float64 bfloat16 half float int8 int16 int32 int64 uint8 bool float8_e4m3fn float8_e5m2
Tensor Size dtype finfo iinfo
""".split())
NAMESPACES = {"triton": TRITON, "triton.language": TL, "triton.language.math": TL_MATH, "math": MATH,
              "torch": TORCH}
SUBMODULES = {"triton.language": "triton.language", "triton.language.math": "triton.language.math"}
BUILTINS = frozenset("""
abs all any bool dict divmod enumerate filter float frozenset int isinstance len list map max min
pow print range reversed round set slice sorted str sum tuple zip True False None
Exception ValueError TypeError RuntimeError AssertionError NotImplementedError IndexError KeyError
""".split())
REFUSED_BUILTINS = frozenset(n for n in dir(builtins) if not n.startswith("__")) - BUILTINS
REFUSED_ATTRS = frozenset("""
format format_map mro gi_frame gi_code gi_yieldfrom cr_frame cr_code cr_await ag_frame ag_code
f_globals f_locals f_builtins f_back f_code tb_frame tb_next
""".split())
MAX_VIOLATIONS = 5


@dataclass(frozen=True)
class _Module:
    path: str  # "triton.language"


def check_source(text: str, filename: str) -> None:
    """Raise PolicyError naming (up to MAX_VIOLATIONS) broken rules; SyntaxError for a file that
    does not parse (the toolchain's COMPILE_ERROR)."""
    tree = ast.parse(text, filename=filename)
    found = _Checker(filename, _bound_names(tree)).run(tree)
    if found:
        raise PolicyError(found[:MAX_VIOLATIONS])


def _is_main_guard(node: ast.stmt) -> bool:
    """`if __name__ == "__main__":` (either side), at the top level of the file."""
    if not isinstance(node, ast.If) or not isinstance(node.test, ast.Compare):
        return False
    t = node.test
    if len(t.ops) != 1 or not isinstance(t.ops[0], ast.Eq):
        return False
    sides = [t.left, t.comparators[0]]
    names = [s for s in sides if isinstance(s, ast.Name) and s.id == "__name__"]
    consts = [s for s in sides if isinstance(s, ast.Constant) and s.value == "__main__"]
    return len(names) == 1 and len(consts) == 1


def _checked(tree: ast.Module) -> list[ast.stmt]:
    return [n for n in tree.body if not _is_main_guard(n)]


def _bound_names(tree: ast.Module) -> set[str]:
    """Every name the file binds anywhere (assignments, definitions, parameters, loop and
    comprehension variables, `with ... as`, `except ... as`, imports): a union over scopes."""
    bound: set[str] = set()
    for stmt in _checked(tree):
        for node in ast.walk(stmt):
            if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
                bound.add(node.id)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                bound.add(node.name)
            elif isinstance(node, ast.arg):
                bound.add(node.arg)
            elif isinstance(node, ast.ExceptHandler) and node.name:
                bound.add(node.name)
            elif isinstance(node, (ast.Global, ast.Nonlocal)):
                bound.update(node.names)
            elif isinstance(node, ast.alias):
                bound.add((node.asname or node.name).split(".")[0])
    return bound


class _Checker:
    def __init__(self, filename: str, bound: set[str]):
        self.filename = filename
        self.bound = bound
        self.modules: dict[str, _Module] = {}  # local name -> the module it names
        self.found: list[Violation] = []

    def run(self, tree: ast.Module) -> list[Violation]:
        body = _checked(tree)
        for stmt in body:  # imports first, wherever they are: a module's name is known before its uses
            for node in ast.walk(stmt):
                if isinstance(node, (ast.Import, ast.ImportFrom)):
                    self.import_(node)
        for stmt in body:
            for node in ast.walk(stmt):
                if isinstance(node, ast.Attribute):  # mark chains: only the outermost is checked as one
                    if isinstance(node.value, ast.Attribute):
                        node.value._inner = True  # type: ignore[attr-defined]
                    elif isinstance(node.value, ast.Name):
                        node.value._attr_root = True  # type: ignore[attr-defined]
                elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
                    node.value._docstring = True  # type: ignore[attr-defined]
        for stmt in body:
            for node in ast.walk(stmt):
                self.visit(node)
        return self.found

    def refuse(self, node: ast.AST, rule: str, detail: str) -> None:
        self.found.append(Violation(rule, f"{self.filename}:{getattr(node, 'lineno', '?')}", detail))

    # -- imports -----------------------------------------------------------------------------------
    def import_(self, node: ast.Import | ast.ImportFrom) -> None:
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name not in MODULES:
                    self.refuse(node, "import", f"`import {a.name}`: a Python submission may import only "
                                f"{', '.join(MODULES)}")
                elif a.asname:
                    self.modules[a.asname] = _Module(a.name)
                else:  # `import triton.language` binds `triton`
                    top = a.name.split(".")[0]
                    self.modules[top] = _Module(top)
            return
        mod = node.module or ""
        if node.level or mod not in MODULES:
            self.refuse(node, "import", f"`from {'.' * node.level}{mod} import ...`: a Python submission may "
                        f"import only from {', '.join(MODULES)}")
            return
        for a in node.names:
            if a.name == "*":
                self.refuse(node, "import", f"`from {mod} import *`: name what you use")
                continue
            full = f"{mod}.{a.name}"
            if full in SUBMODULES:
                self.modules[a.asname or a.name] = _Module(SUBMODULES[full])
            elif a.name not in NAMESPACES[mod]:
                self.refuse(node, "import", self._unknown(mod, a.name))

    @staticmethod
    def _unknown(mod: str, name: str) -> str:
        if mod == "torch":
            return (f"`torch.{name}` is not allowed: a submission uses torch only to allocate and view tensors "
                    f"({', '.join(sorted(TORCH))}); the work must be done by Triton kernels")
        return f"`{mod}.{name}` is not allowed (not one of the names a submission may use from {mod})"

    # -- every node --------------------------------------------------------------------------------
    def visit(self, node: ast.AST) -> None:
        if isinstance(node, ast.Attribute):
            self.attribute(node)
        elif isinstance(node, ast.Name):
            self.name(node)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            self.dunder(node, node.name, "definition") or self.builtin(node, node.name)
        elif isinstance(node, ast.arg):
            self.dunder(node, node.arg, "parameter") or self.builtin(node, node.arg)
        elif isinstance(node, ast.keyword) and node.arg:
            self.dunder(node, node.arg, "keyword")
        elif isinstance(node, ast.alias):
            self.dunder(node, node.asname or node.name, "import") or self.builtin(node, node.asname or node.name)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            self.builtin(node, node.name)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            for name in node.names:
                self.builtin(node, name)
        elif (isinstance(node, ast.Constant) and isinstance(node.value, str) and "__" in node.value
              and not getattr(node, "_docstring", False)):
            self.refuse(node, "dunder", f"the string {node.value[:40]!r} contains `__`: not allowed outside a "
                        "docstring")

    def dunder(self, node: ast.AST, name: str, what: str) -> bool:
        if name.startswith("__"):
            self.refuse(node, "dunder", f"{what} `{name}`: names that start with `__` are not allowed")
            return True
        return False

    def builtin(self, node: ast.AST, name: str) -> bool:
        if name in REFUSED_BUILTINS:
            self.refuse(node, "builtin", f"`{name}` is not allowed: a submission may use only its own names and "
                        f"these builtins: {', '.join(sorted(BUILTINS))} (and may not bind the others' names)")
            return True
        return False

    def name(self, node: ast.Name) -> None:
        if self.dunder(node, node.id, "name") or self.builtin(node, node.id):
            return
        if node.id in self.modules:
            if not isinstance(node.ctx, ast.Load):
                self.refuse(node, "module", f"`{node.id}` names a module: it may not be rebound or deleted")
            elif not getattr(node, "_attr_root", False):
                self.refuse(node, "module", f"the module `{node.id}` is used as a value: use its names "
                            f"(`{node.id}.NAME`), never the module itself")
            return
        if isinstance(node.ctx, ast.Load) and node.id not in self.bound and node.id not in BUILTINS:
            self.refuse(node, "builtin", f"`{node.id}` is not allowed: a submission may use only its own names "
                        f"and these builtins: {', '.join(sorted(BUILTINS))}")

    def attribute(self, node: ast.Attribute) -> None:
        if self.dunder(node, node.attr, "attribute"):
            return
        if node.attr.startswith("_"):
            self.refuse(node, "attribute", f"`.{node.attr}`: attributes that start with `_` are internals")
            return
        if node.attr in REFUSED_ATTRS:
            why = "use an f-string" if node.attr.startswith("format") else "introspection"
            self.refuse(node, "attribute", f"`.{node.attr}` is not allowed ({why})")
            return
        chain = _chain(node)
        if chain is None or chain[0].id not in self.modules or getattr(node, "_inner", False):
            return
        root, names = chain
        if not isinstance(node.ctx, ast.Load):
            self.refuse(node, "module", f"`{_dotted(root.id, names)}` is assigned or deleted: a submission may "
                        "not change a module")
            return
        path = self.modules[root.id].path
        for attr in names:
            if path not in NAMESPACES:  # past a module's name: an attribute of an object (`tl.float16.x`)
                if self.modules[root.id].path == "torch":  # `torch.Tensor.matmul`: torch's names end there
                    self.refuse(node, "module", f"`{_dotted(root.id, names)}` is not allowed: use torch's names "
                                "directly, never their attributes")
                return
            if attr not in NAMESPACES[path]:
                self.refuse(node, "module", self._unknown(path, attr))
                return
            path = SUBMODULES.get(f"{path}.{attr}", f"{path}.{attr}")


def _chain(node: ast.Attribute) -> tuple[ast.Name, list[str]] | None:
    """`a.b.c` -> (Name a, ["b", "c"]); None when the chain does not start at a name."""
    names: list[str] = []
    cur: ast.expr = node
    while isinstance(cur, ast.Attribute):
        names.append(cur.attr)
        cur = cur.value
    if not isinstance(cur, ast.Name):
        return None
    return cur, names[::-1]


def _dotted(root: str, names: list[str]) -> str:
    return ".".join([root, *names])
