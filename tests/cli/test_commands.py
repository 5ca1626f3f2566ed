"""The command table (`worqr.cli.COMMANDS`): every subcommand has a function,
each takes the parsed arguments and returns the exit code, and none is
imported until its command runs."""

from __future__ import annotations

import argparse
import inspect
import subprocess
import sys
import typing

import pytest

from tests.support import ROOT
from tests.support.cli import cli_env
from worqr.cli import COMMANDS, build_parser, command_function


def subcommands() -> list[str]:
    parser = build_parser()
    found = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    assert len(found) == 1
    return list(found[0].choices)


def test_every_subcommand_has_a_function_and_every_function_a_subcommand() -> None:
    assert sorted(subcommands()) == sorted(COMMANDS)


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_each_function_takes_the_arguments_and_returns_the_exit_code(name: str) -> None:
    function = command_function(name)
    assert inspect.isfunction(function), COMMANDS[name]
    assert len(inspect.signature(function).parameters) == 1, COMMANDS[name]
    hints = typing.get_type_hints(function)
    assert list(hints.values()) == [argparse.Namespace, int], (COMMANDS[name], hints)


def test_help_imports_no_commands_module() -> None:
    code = (
        "import contextlib, io, sys, worqr.cli\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    assert worqr.cli.main(['--help']) == 0\n"
        "    assert worqr.cli.main(['worker', '--help']) == 0\n"
        "modules = {t.partition(':')[0] for t in worqr.cli.COMMANDS.values()}\n"
        "print(sorted(modules & set(sys.modules)))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=cli_env()
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_supervised_children_get_every_worker_option_back() -> None:
    """`worqr worker --processes N` starts each child with the options it was
    given: flags as flags (``--isolated True`` would not parse), values as values."""
    from worqr._cli.worker import OVERRIDES, child_command

    parser = build_parser()
    given = ["worker", "app:worker", "--processes", "2", "--isolated", "--no-history"]
    given += ["--grace", "3", "--max-memory-per-child", "200MB", "--ttl", "2"]
    args = parser.parse_args(given)
    child = parser.parse_args(child_command(args)(0)[3:])
    assert child.processes == 1 and child.supervised and child.process_index == 0
    for option in OVERRIDES:
        name = option.removeprefix("--").replace("-", "_")
        assert getattr(child, name) == getattr(args, name), option
    assert (child.isolated, child.no_history, child.grace) == (True, False, 3.0)
