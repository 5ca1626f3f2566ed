"""Placeholder until the worker runtime lands (issue 3)."""

from __future__ import annotations

import argparse

from ._cli_base import CliError


def run_worker(args: argparse.Namespace) -> int:
    raise CliError("not available yet: the worker runtime is still being built")
