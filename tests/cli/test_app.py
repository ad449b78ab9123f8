"""The root of `judge`: --version, shell completion, and help that shows flags as flags."""
from __future__ import annotations

import pytest
import typer
from typer.testing import CliRunner

from cli.app import app
from judge import __version__

runner = CliRunner()


def test_version():
    r = runner.invoke(app, ["--version"])
    assert r.exit_code == 0, r.output
    assert r.stdout.strip() == f"kernel-judge {__version__}"


def test_shell_completion_is_offered():
    r = runner.invoke(app, ["--help"])
    assert "--install-completion" in r.output and "--show-completion" in r.output


def _command_paths(group, prefix=()):
    for name, cmd in group.commands.items():
        yield (*prefix, name)
        if hasattr(cmd, "commands"):
            yield from _command_paths(cmd, (*prefix, name))


@pytest.mark.parametrize("path", list(_command_paths(typer.main.get_command(app))))
def test_help_shows_no_value_for_a_flag(path):
    r = runner.invoke(app, [*path, "--help"], terminal_width=200)
    assert r.exit_code == 0, r.output
    assert "<bool>" not in r.output
    if path in (("submit",), ("list",)):
        line = next(ln for ln in r.output.splitlines() if "--json" in ln)
        assert "Machine-readable" in line
    if path == ("submit",):
        assert "<str>" in next(ln for ln in r.output.splitlines() if "--arch" in ln)
