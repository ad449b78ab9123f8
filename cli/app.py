"""`judge`: the command line over the library. Thin: parse, call, render, exit with the verdicts' codes.

This module only wires: each command module is a `typer.Typer` of its own, merged here in the order
`judge --help` lists them. What the modules share (consoles, options, the error mapping, `resolve`,
the record step) is cli/common.py; no module imports this one.
"""
from __future__ import annotations

import os
import sys

import typer

from . import drill_cmd, judge_cmd, leaderboard_cmd, store_cmd, tools_cmd, verify_cmd

app = typer.Typer(no_args_is_help=True, pretty_exceptions_enable=False,
                  help="kernel-judge: judge CUDA kernels against PyTorch references and vendor libraries.")


def _version(value: bool) -> None:
    if value:
        from judge import __version__

        print(f"kernel-judge {__version__}")
        raise typer.Exit(0)


@app.callback()
def _root(version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                       help="Print the version and exit.")) -> None:
    """kernel-judge: judge CUDA kernels against PyTorch references and vendor libraries."""
app.add_typer(judge_cmd.app)  # submit, test, list, show, init, validate, doctor
app.add_typer(verify_cmd.app)  # verify
app.add_typer(drill_cmd.app)  # hint, stats, solution
app.add_typer(tools_cmd.app)  # profile, compare, watch
app.add_typer(store_cmd.app)  # store
app.add_typer(leaderboard_cmd.app, name="leaderboard")  # leaderboard run|show
app.add_typer(drill_cmd.drill_app, name="drill")  # drill [status|end]


def main() -> None:
    """The console script. It ends with os._exit: once the output is flushed nothing is left to
    do, and skipping the interpreter's teardown (torch's CUDA context among it) saves time."""
    try:
        app()
        code = 0
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
