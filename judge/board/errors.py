"""Why a leaderboard run cannot start, with the exit code that says whose fault it is. Its own
module, light to import: the command line catches these around every command."""
from __future__ import annotations

from judge.contract.verdict import EXIT_NOT_YOUR_CODE, EXIT_USAGE


class RunError(Exception):
    """A run that cannot start; `exit_code` says whose fault it is."""
    exit_code = EXIT_NOT_YOUR_CODE


class BadRequest(RunError):
    """The request is wrong (a missing folder, a GPU that is not here): exit 2."""
    exit_code = EXIT_USAGE


class Unavailable(RunError):
    """The machinery is missing (no GPU here, no cluster there): exit 3, not the submissions' fault."""
    exit_code = EXIT_NOT_YOUR_CODE
