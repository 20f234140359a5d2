"""SIGTERM and SIGHUP stop a job the way Ctrl-C (SIGINT) does.

Ctrl-C already stops every job cleanly: inside ``asyncio.run`` the runner's
SIGINT handler cancels the job's main task at its next ``await`` (a safe
point), and outside the event loop Python raises KeyboardInterrupt; either
way the job's ``finally`` blocks flush the trace, write ``result.json`` with
``completed: false`` and stop the controllers.  CI systems and process
supervisors stop programs with SIGTERM, and a closed terminal sends SIGHUP,
both of which would otherwise kill netsleuth on the spot with nothing
written.  So their handler does exactly what SIGINT does -- it calls
whatever SIGINT handler is current -- after noting which signal it was, so
results can say ``stopped_by: "SIGTERM"`` and the CLI can exit with
128 + the signal's number (130 for SIGINT, 143 for SIGTERM, 129 for SIGHUP),
as shells do for a process a signal ended.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP)

_received: list[int] = []


def stopped_by() -> str:
    """The name of the signal that stopped the job ("SIGINT" when none was recorded: Ctrl-C)."""
    return signal.Signals(_received[0]).name if _received else "SIGINT"


def exit_code() -> int:
    """128 + the stopping signal's number, the shell's convention for a process a signal ended."""
    return 128 + (_received[0] if _received else int(signal.SIGINT))


def _handle(signum: int, frame: FrameType | None) -> None:
    if _received:
        return  # already stopping: let the clean-up finish (Ctrl-C twice still forces)
    _received.append(signum)
    handler: Any = signal.getsignal(signal.SIGINT)
    if callable(handler):
        handler(signal.SIGINT, frame)  # asyncio's runner cancels the main task; else KeyboardInterrupt
    else:
        raise KeyboardInterrupt


@contextmanager
def stop_signals() -> Iterator[None]:
    """Within the block, SIGTERM and SIGHUP act as SIGINT; the previous handlers come back after."""
    _received.clear()
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {s: signal.getsignal(s) for s in STOP_SIGNALS}
    for s in STOP_SIGNALS:
        signal.signal(s, _handle)
    try:
        yield
    finally:
        for s, h in previous.items():
            signal.signal(s, h)


__all__ = ["stop_signals", "stopped_by", "exit_code", "STOP_SIGNALS"]
