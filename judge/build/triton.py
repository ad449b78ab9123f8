"""The Triton toolchain (`.py`): the static policy on the syntax tree (judge/build/pypolicy.py), then
the ABI (a top-level `solve` whose parameters are the problem's, by name and in order). There is no
build step: Triton compiles each kernel when it is first launched, in the worker's warm-up
(judge/engine/warmup.py), whose time the report gives apart from the kernel's.

`prepare` reads the file once: the policy and the ABI are checked on that text, and the worker
(judge/worker/triton_gpu.py) executes that text, never the file (`load`'s `source`). Without a GPU,
`judge test PROBLEM FILE --cpu` runs the correctness tests through Triton's interpreter on CPU
(judge/engine/cpu_check.py), a practice check that is never timed or recorded.
"""
from __future__ import annotations

import ast
from collections.abc import Sequence
from pathlib import Path

from judge.build import pypolicy
from judge.build.language import Prepared, Progress
from judge.build.policy import PolicyError
from judge.contract.verdict import Status
from judge.problem import abi
from judge.problem.spec import Problem


class TritonToolchain:
    name = "triton"
    suffixes: tuple[str, ...] = (".py",)
    comment = "#"
    worker = "triton"  # judge/worker/triton_gpu.py

    def starter(self, problem: Problem) -> str:
        """A file that passes the policy and runs as is (its outputs unwritten): imports, a kernel
        to fill in, and solve() with the exact parameters, a comment per tensor."""
        shapes = {t.name: problem.shape_text(t.name) for t in problem.tensors}
        lines = [f"# judge: {problem.name}", f"# {problem.spec.title}",
                 "# Starter written by `judge init --lang triton`. solve() receives torch tensors on the GPU",
                 "# (scalars as Python ints and floats) and writes its outputs in place by launching",
                 "# @triton.jit kernels; the judge synchronizes. `judge test PROBLEM FILE --cpu` checks it on",
                 "# CPU through Triton's interpreter."]
        for name, ct in problem.params:
            if ct.is_tensor:
                role = "input" if ct.const else "output"
                lines.append(f"# {name}: {role}, shape {shapes.get(name, '?')}, "
                             f"torch.{ct.element.dtype}")  # type: ignore[union-attr]
        first = next((name for name, ct in problem.params if ct.is_tensor), "X")
        lines += ["import torch", "import triton", "import triton.language as tl", "", "",
                  "@triton.jit", "def kernel(x_ptr, n, BLOCK: tl.constexpr):",
                  "    pid = tl.program_id(0)", "    # TODO: load, compute, store (mask the tail: offsets < n)",
                  "", "", abi.py_prototype(problem.params) + ":",
                  f"    # TODO: launch your kernel(s), e.g. kernel[(triton.cdiv(n, 1024),)]({first}, n, BLOCK=1024)",
                  "    pass", ""]
        return "\n".join(lines)

    def prototype(self, problem: Problem) -> str:
        return abi.py_prototype(problem.params)

    def flags(self, arch: str) -> str:
        return "triton (JIT: kernels compile at their first launch)"

    def check_source(self, problem: Problem, source: Path) -> str | None:
        return self._refusal(Path(source).read_text(errors="replace"), Path(source).name)

    @staticmethod
    def _refusal(text: str, name: str) -> str | None:
        """The policy's REJECTED message for the text, or None."""
        try:
            pypolicy.check_source(text, name)
        except SyntaxError:
            return None  # not the policy's to judge: prepare's COMPILE_ERROR names the line
        except PolicyError as e:
            return str(e)
        return None

    @staticmethod
    def _broken(problem: Problem, text: str, name: str) -> str | None:
        """COMPILE_ERROR's message for a text that does not parse or whose solve() is not the problem's."""
        try:
            tree = ast.parse(text, filename=name)
        except SyntaxError as e:
            return f"{name}:{e.lineno}: {e.msg}"
        want = [n for n, _ in problem.params]
        defs = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "solve"]
        if not defs:
            return f"{name}: no top-level `def solve(...)`; the problem's is: {abi.py_prototype(problem.params)}"
        a = defs[-1].args
        got = [x.arg for x in a.posonlyargs + a.args]
        if got != want or a.vararg or a.kwarg or a.kwonlyargs:
            return (f"{name}:{defs[-1].lineno}: solve takes ({', '.join(got)}); the problem's is: "
                    f"{abi.py_prototype(problem.params)}")
        return None

    def prepare_many(self, jobs: Sequence[tuple[Problem, Path]], arch: str, *, sass: bool = False,
                     on_progress: Progress | None = None) -> list[Prepared]:
        return [self.prepare_checks(problem, Path(src)) for problem, src in jobs]

    def prepare_checks(self, problem: Problem, source: Path) -> Prepared:
        """The policy and the ABI on the file's text, read once: the verdict that stops it before it
        runs, or ready, with that text for the worker to execute."""
        try:
            text = Path(source).read_text(errors="replace")
        except OSError as e:
            return Prepared(source, self.name, Status.INTERNAL_ERROR, f"cannot read {source}: {e}")
        if refused := self._refusal(text, Path(source).name):
            return Prepared(source, self.name, Status.REJECTED, refused)
        if broken := self._broken(problem, text, Path(source).name):
            return Prepared(source, self.name, Status.COMPILE_ERROR, broken)
        return Prepared(source, self.name, load={"module": str(Path(source).resolve()), "source": text})


TRITON = TritonToolchain()
