"""Shared rich output for every command's front end: the two consoles and the progress bars.

Every command-line module prints through this one place -- the top-level
``cli.py`` and the subsystem ones (``nice/cli.py``, ``defined/cli.py``,
``rootcause/cli.py``, ``controllers/faucet_cli.py``, ...) -- so results, notes
and progress look and behave the same whichever command runs: results on
stdout, progress and notes on stderr, progress bars only on a terminal (never
in JSON output, pipes or tests).

It imports nothing of netsleuth but rich, so it sits low in the layers: the
subsystem CLI modules live at their package's layer, below the top-level
CLI, and must be able to import it without an upward import.

Both consoles are made once. rich resolves ``sys.stdout``/``sys.stderr`` at
each print, so output redirected later (pytest's capture, a caller swapping
streams) still lands in the right place.
"""

from __future__ import annotations

import sys

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    SpinnerColumn,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)

out = Console()
"""Results: tables, summaries, findings (stdout)."""

err = Console(stderr=True)
"""Progress bars and notes about the run itself (stderr), so stdout stays the result."""


def stdout_console(pipe_width: int = 160) -> Console:
    """A stdout console without highlighting; when stdout is not a terminal, ``pipe_width`` columns wide.

    rich falls back to 80 columns on a pipe, which wraps the wide tables of
    the stepping console; a fixed width keeps scripted output stable.
    """
    return Console(highlight=False, width=None if sys.stdout.isatty() else pipe_width)


def progress_bar(*, counted: bool = True) -> Progress:
    """A transient progress display on stderr, disabled when stderr is not a terminal.

    ``counted``: a bar with done/total; otherwise a spinner and a line of text
    (for searches whose size is not known up front).
    """
    columns: list[ProgressColumn] = [SpinnerColumn(), TextColumn("{task.description}")]
    if counted:
        columns += [BarColumn(), MofNCompleteColumn()]
    return Progress(*columns, TimeElapsedColumn(), console=err, transient=True, disable=not err.is_terminal)


class JobProgressBar:
    """Shows a job's phases (the ``runtime.session.JobProgress`` protocol) on a rich progress display."""

    def __init__(self, progress: Progress) -> None:
        self.progress = progress
        self.task: TaskID | None = None

    def phase(self, name: str, total: int | None) -> None:
        if self.task is not None:
            self.progress.update(self.task, visible=False)
        self.task = self.progress.add_task(name, total=total)

    def advance(self, completed: int) -> None:
        if self.task is not None:
            self.progress.update(self.task, completed=completed)

    def note(self, text: str) -> None:
        self.progress.console.print(text)


def print_lines(lines: list[str]) -> None:
    """Plain lines on stdout: no markup, no highlighting, long lines left unwrapped."""
    for line in lines:
        out.print(line, soft_wrap=True, markup=False, highlight=False)
