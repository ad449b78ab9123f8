"""What every command module of the `judge` command line shares: the consoles, the shared options,
the error mapping (every failure is one clear message and its exit code, never a
traceback), `resolve` of a problem name, the runner options and the record step.

Command modules import this (and cli/render.py, cli/board_view.py); cli/app.py imports the command
modules; nothing imports cli/app.py.
"""
from __future__ import annotations

import json
import sys
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, List, NoReturn, Optional

import typer
from rich.console import Console
from rich.markup import escape

from judge import paths
from judge.board.errors import RunError
from judge.build import toolchain
from judge.contract.verdict import EXIT_NOT_YOUR_CODE, EXIT_USAGE
from judge.gpu import device
from judge.problem import spec
from judge.runner.job import DockerRunner, LocalRunner, Runner

if TYPE_CHECKING:
    from judge.contract.report import Report



def _flags_take_no_value() -> None:
    """typer's help shows every option's type, a flag's too (`--json <bool>`), as if it took a
    value: a flag (`--json`, `--record/--no-record`, `--help`) shows none. A typer without that
    hook (0.27.2 on the H100 machine has none; 0.29.2 has it) is left as it is."""
    from typer.core import TyperOption

    shown = getattr(TyperOption, "display_type_rich", None)
    if shown is None:
        return

    def display_type_rich(self: TyperOption, ctx: Any) -> str | None:
        return None if self.is_bool_flag else shown(self, ctx)

    TyperOption.display_type_rich = display_type_rich  # type: ignore[method-assign]


_flags_take_no_value()

out = Console(highlight=False, soft_wrap=True, width=None if sys.stdout.isatty() else 120)
err = Console(stderr=True, highlight=False, soft_wrap=True, width=None if sys.stderr.isatty() else 120)

JsonOpt = typer.Option(False, "--json", help="Machine-readable output on stdout.")
DebugOpt = typer.Option(False, "--debug", help="Show tracebacks of internal errors.")
DbOpt = typer.Option(None, "--db", help="Results store file (default: $JUDGE_DB, else your own store in the user "
                     "data folder: `judge store` shows which).")



def _arch(value: Optional[str]) -> Optional[str]:
    """`--arch`: a usage error before any build when it is not one this nvcc builds for."""
    from judge.build import nvcc

    if value is not None and (problem := nvcc.arch_problem(value)):
        raise typer.BadParameter(problem)
    return value


def _arch_form(value: Optional[str]) -> Optional[str]:
    """`--arch` of a run that may build elsewhere (a cluster's nodes): its form only."""
    from judge.build import nvcc

    if value is not None and (problem := nvcc.arch_problem(value, check_toolkit=False)):
        raise typer.BadParameter(problem)
    return value


def _positive(value: Optional[float]) -> Optional[float]:
    if value is not None and not value > 0:
        raise typer.BadParameter(f"{value:g}: expected a positive number of seconds")
    return value


def _default_device() -> int:
    from judge.gpu.device import default_index

    return default_index()


DeviceOpt = typer.Option(default_factory=_default_device, show_default="the first GPU in CUDA_VISIBLE_DEVICES, else 0",
                         min=0, help="GPU index, as nvidia-smi shows it.")
ArchOpt = typer.Option(None, "--arch", callback=_arch, help="Build for this arch, e.g. sm_90a (default: the GPU's).")
ArchFormOpt = typer.Option(None, "--arch", callback=_arch_form,
                           help="Build for this arch, e.g. sm_90a (default: the GPU's).")


def budget_opt(default: Optional[float], help: str) -> Any:
    """`--budget`: seconds of wall time per shape and target (the stopping rule's bound:
    judge/engine/stats.py), positive (a usage error otherwise)."""
    return typer.Option(default, "--budget", callback=_positive, help=help)


# `judge COMMAND [PROBLEM] SOLUTION`: typer's usage line shows them as `{PROBLEM} [SOLUTION]`.
ProblemArg = typer.Argument(..., metavar="PROBLEM", show_default=False,
                            help="Problem name or folder. Or the solution file alone, when its first lines "
                            "name the problem: `// judge: PROBLEM`.")
SolutionArg = typer.Argument(None, metavar="SOLUTION", show_default=False, help="Your .cu (or Triton .py) file.")


RunnerOpt = typer.Option("local", "--runner", help="local, or docker: judge inside a container (docker/README.md).")
ImageOpt = typer.Option(None, "--image",
                        help="The docker runner's image (default: $JUDGE_DOCKER_IMAGE or kernel-judge:latest).")
MountOpt = typer.Option([], "--docker-mount", help="SRC:DST, bound read-only into the container (repeatable).")
HostEnvOpt = typer.Option(False, "--docker-host-env",
                          help="Bind this machine's /usr and Python read-only (images of docker/host-image.sh).")
GpusOpt = typer.Option("auto", "--docker-gpus",
                       help="auto, toolkit (--gpus), devices (device nodes + driver mount) or none.")


class Usage(Exception):
    """A bad command line or a bad problem: exit 2."""


def alias(value: Any, old_value: Any, name: str, old_name: str) -> Any:
    """An option's value given under its name or its old one (a hidden alias kept so scripts do not
    break); both, differing, is a usage error."""
    if old_value is None:
        return value
    if value is not None and value != old_value:
        raise Usage(f"{old_name} is the old name of {name}: pass one of them")
    return old_value


def problems_root() -> Path:
    return paths.problems_root()


def no_problems() -> str:
    """Where the judge looked for problems and found none, and how to point it elsewhere."""
    return (f"no problems in {problems_root()} (from {paths.problems_origin()}); set {paths.ENV_PROBLEMS} "
            "to a folder with one NAME/problem.yaml per problem")


def resolve(problem: str) -> spec.Problem:
    """A problem folder path, or the name of one under the problems root. A folder here that is not
    a problem (no problem.yaml: `vector_add/` holding your attempts) does not hide the problem of
    that name."""
    path = Path(problem)
    named = problems_root() / problem
    if not (path / "problem.yaml").is_file() and path.name != "problem.yaml" and (named / "problem.yaml").is_file():
        path = named
    if not path.exists():
        known = ", ".join(p.name for p in spec.find_problems(problems_root()))
        raise Usage(f"no problem {problem!r} (not a folder; "
                    + (f"known problems: {known})" if known else f"{no_problems()})"))
    return spec.load_problem(path)


def store_path(db: Optional[Path]) -> Path:
    """The results store this command uses (--db, JUDGE_DB or the user store). Call it once per
    command: with the default store, a per-folder store of an older kernel-judge here is named on
    stderr (it is never read), so its results are not lost without a word."""
    where = paths.store_location(db)
    if where.folder_store is not None:
        err.print(folder_store_note(where))
    return where.path


def folder_store_note(where: paths.StoreLocation) -> str:
    old = escape(str(where.folder_store))
    if where.path.exists():
        fix = f"read it with --db {old} (or JUDGE_DB={old}); stores are not merged"
    else:
        fix = (f"make it yours with `mkdir -p {escape(str(where.path.parent))} && mv {old}* "
               f"{escape(str(where.path.parent))}/`, or read it with --db {old}")
    return (f"[yellow]note:[/] {old} is a results store kept per folder by an older kernel-judge; this command "
            f"uses your store {escape(str(where.path))} instead: {fix}")
def cpu_check_hint(language: toolchain.Toolchain, target: Path) -> str:
    """What `judge init` and `judge drill` add after "judge it with: judge submit ..." for a language
    that `judge test --cpu` checks without a GPU (Triton's)."""
    return f" (without a GPU: judge test {escape(str(target))} --cpu)" if language.worker == "triton" else ""


def problem_arg(p: spec.Problem) -> str:
    """How to name `p` on a command line that works from any folder: its name when that is how
    `resolve` finds it, else its folder."""
    named = problems_root() / p.name
    return p.name if named.resolve() == p.root.resolve() else str(p.root)


def solution_file(path: Path) -> Path:
    """The solution named on the command line: an existing file some toolchain takes, or Usage."""
    if not path.is_file():
        raise Usage(f"no such file: {path}")
    if not toolchain.is_solution(path):
        raise Usage(f"{path} is not a {' or '.join(toolchain.suffixes())} file")
    return path


def solution_and_problem(problem: Optional[str], solution: Path, command: str) -> tuple[spec.Problem, Path]:
    """The solution file and its problem: the one named on the command line, else the one its
    header names (`// judge: softmax`, judge/build/header.py). Both, differing, is a usage error."""
    from judge.build import header

    src = solution_file(solution)
    try:
        named = header.read(src)
    except header.HeaderError as e:
        raise Usage(str(e)) from None
    if problem is None:
        if named is None:
            raise Usage(f"which problem is {src} for? Name it (judge {command} PROBLEM {src}) or put "
                        f"`{toolchain.for_source(src).comment} judge: PROBLEM` in the file's first lines")
        return resolve(named.problem), src
    p = resolve(problem)
    if named is not None and named.problem != p.name:
        raise Usage(f"{src} says it is for {named.problem} (line {named.line}: judge: {named.problem}) but the "
                    f"command names {p.name}: drop one, or make them agree")
    return p, src


def problem_then_solution(first: str, second: Optional[Path], command: str) -> tuple[spec.Problem, Path]:
    """`judge COMMAND [PROBLEM] SOLUTION`: with one argument it is the solution file."""
    if second is None:
        if not toolchain.is_solution(Path(first)) and not Path(first).is_file():
            raise Usage(f"missing the solution file: judge {command} {first} FILE "
                        f"(or judge {command} FILE, with the problem named in the file's header)")
        return solution_and_problem(None, Path(first), command)
    return solution_and_problem(first, second, command)


@contextmanager
def errors(as_json: bool, debug: bool) -> Iterator[None]:
    """Turn every failure into one clear message and its exit code (judge/contract/verdict.py); never a
    traceback."""
    try:
        yield
    except spec.ProblemError as e:
        fail(as_json, EXIT_USAGE, f"invalid problem {e.file}", [f"{loc}: {msg}" for loc, msg in e.errors])
    except (Usage, device.NotVisible) as e:
        fail(as_json, EXIT_USAGE, str(e))
    except RunError as e:  # the library's: a leaderboard run that cannot start, with its exit code
        fail(as_json, e.exit_code, str(e))
    except typer.Exit:
        raise
    except KeyboardInterrupt:
        fail(as_json, 130, "interrupted")
    except Exception as e:  # noqa: BLE001 — the judge's own fault: INTERNAL_ERROR, exit 3
        if debug:
            traceback.print_exc()
        fail(as_json, EXIT_NOT_YOUR_CODE, f"INTERNAL_ERROR (not your code): {type(e).__name__}: {e}"
             + ("" if debug else " (run with --debug for the traceback)"))


def fail(as_json: bool, code: int, message: str, details: list[str] | None = None) -> NoReturn:
    """Say what went wrong (JSON on stdout with --json, else on stderr) and exit with `code`."""
    if as_json:
        print(json.dumps({"error": message, "details": details or [], "exit_code": code}))
    else:
        err.print(f"[red]error:[/] {escape(message)}")
        for d in details or []:
            err.print(f"  {escape(d)}")
    raise typer.Exit(code)


def runner_choice(runner: str, image: Optional[str], mounts: List[str], host_env: bool, gpus: str,
                  check_mounts: bool = True) -> Runner:
    """The runner options of the command line, typed (judge/runner/job.py); Usage on a bad one.
    `check_mounts=False` where the mounts' sources are paths on the machine that judges (a
    cluster node), which checks them itself."""
    if runner == "local":
        return LocalRunner()
    if runner != "docker":
        raise Usage(f"--runner {runner!r}: expected local or docker")
    from judge.runner.docker import GPU_STYLES, MountError, parse_mount

    if gpus not in GPU_STYLES:
        raise Usage(f"--docker-gpus {gpus!r}: expected one of {', '.join(GPU_STYLES)}")
    if check_mounts:
        try:
            for m in mounts:
                parse_mount(m)
        except MountError as e:
            raise Usage(str(e)) from None
    return DockerRunner.model_validate({"image": image, "mounts": list(mounts), "host_env": host_env, "gpus": gpus})


def record(report: Report, db: Optional[Path]) -> None:
    """Append the report to the results store. A store that cannot be written costs a warning,
    never the verdict (the report is already on stdout)."""
    from judge.practice.drill import attempt_drill
    from judge.store import Store, StoreError

    try:
        with Store(store_path(db)) as store:  # an attempt on a problem of the active drill belongs to it
            store.record(report, drill_id=attempt_drill(store, report.problem))
    except StoreError as e:
        err.print(f"[yellow]warning:[/] the result was not recorded: {escape(str(e))}")
