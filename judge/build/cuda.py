"""The CUDA C++ toolchain (`.cu`): static source policy → nvcc (judge/build/nvcc.py) → static
policy on the host code and the library's imports (judge/build/policy.py), SASS summaries on
request (judge/build/sass.py). The candidate's native worker (judge/worker/native/) loads the library
and calls `solve`."""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from judge.build import nvcc, policy
from judge.build import sass as sass_counts
from judge.build.language import Prepared, Progress
from judge.contract.report import BuildInfo, KernelInfo
from judge.contract.verdict import Status
from judge.problem import abi
from judge.problem.spec import Problem

MAX_WARNINGS = 20  # warning lines a report carries (BuildInfo.warnings); BuildInfo.warning_count has them all


class CudaToolchain:
    name = "cuda"
    suffixes: tuple[str, ...] = (".cu",)
    comment = "//"
    worker = "native"

    def starter(self, problem: Problem) -> str:
        """The ABI's starter under a header line naming the problem (judge/build/header.py)."""
        return f"{self.comment} judge: {problem.name}\n" + abi.starter(problem.spec.title, problem.params,
                           {t.name: problem.shape_text(t.name) for t in problem.tensors})

    def prototype(self, problem: Problem) -> str:
        return problem.prototype()

    def flags(self, arch: str) -> str:
        return " ".join(nvcc.FLAGS + tuple(nvcc.gencode(arch)))

    def request(self, problem: Problem, source: Path, arch: str) -> nvcc.BuildRequest:
        return nvcc.BuildRequest(Path(source), abi.prototype_header(problem.params), problem.prototype(), arch)

    def check_source(self, problem: Problem, source: Path) -> str | None:
        try:
            policy.check_source(Path(source).read_text(errors="replace"), Path(source).name,
                                problem.spec.allow)
        except policy.PolicyError as e:
            return str(e)
        return None

    def prepare_many(self, jobs: Sequence[tuple[Problem, Path]], arch: str, *, sass: bool = False,
                     on_progress: Progress | None = None) -> list[Prepared]:
        out: list[Prepared | None] = [None] * len(jobs)
        todo: list[int] = []
        for i, (problem, src) in enumerate(jobs):
            try:
                refused = self.check_source(problem, src)
            except OSError as e:
                out[i] = Prepared(Path(src), self.name, Status.INTERNAL_ERROR, f"cannot read {src}: {e}")
                continue
            if refused:
                out[i] = Prepared(Path(src), self.name, Status.REJECTED, refused)
            else:
                todo.append(i)
        try:
            results = nvcc.build_many([self.request(jobs[i][0], jobs[i][1], arch) for i in todo],
                                      on_progress=on_progress) if todo else []
        except FileNotFoundError as e:  # nvcc missing
            for i in todo:
                out[i] = Prepared(Path(jobs[i][1]), self.name, Status.INTERNAL_ERROR, str(e))
            return [p for p in out if p is not None]
        for i, result in zip(todo, results):
            out[i] = self.from_build(jobs[i][0], Path(jobs[i][1]), arch, result, sass)
        return [p for p in out if p is not None]

    def from_build(self, problem: Problem, source: Path, arch: str, result: nvcc.BuildResult,
                   sass: bool = False) -> Prepared:
        """The verdict on a finished build: the policy on what was built, the SASS summaries."""
        if sass and result.ok:
            sass_counts.attach(result)
        warned = nvcc.warnings(result.log.replace("src.cu", source.name)) if result.ok else []
        info = BuildInfo(ok=result.ok, cached=result.cached, seconds=round(result.seconds, 3),
                         command=result.command, arch=arch, log_tail=result.log[-4000:],
                         kernels=[KernelInfo(**vars(k)) for k in result.resources],
                         warnings=warned[:MAX_WARNINGS], warning_count=len(warned),
                         log_path=str(result.log_path or ""))
        prepared = Prepared(source, self.name, build=info)
        if not result.ok:
            prepared.status = Status.COMPILE_ERROR
            prepared.message = f"{result.error}\n\ncommand: {result.command}"
            return prepared
        try:
            policy.check_build(result.host_ii, result.lib, source.name, problem.spec.allow)  # type: ignore[arg-type]
        except policy.PolicyError as e:
            prepared.status, prepared.message = Status.REJECTED, str(e)
            return prepared
        except OSError as e:
            prepared.status, prepared.message = Status.INTERNAL_ERROR, f"static policy could not run: {e}"
            return prepared
        prepared.load = {"lib": str(result.lib)}
        return prepared


CUDA = CudaToolchain()
