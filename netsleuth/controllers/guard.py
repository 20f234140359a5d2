"""Keeps a controller from outliving netsleuth: ``python guard.py FD -- ARGV...``.

A controller netsleuth launched must not survive it, however netsleuth
ends -- even SIGKILL, which runs no clean-up at all.  The kernel's
PR_SET_PDEATHSIG alone does not do it: it fires when the *thread* that
forked the child exits, and netsleuth starts controllers from worker threads
(a controller recovery runs in asyncio's thread pool), so a controller would
be killed when that thread retires, not when netsleuth dies.  Instead
netsleuth keeps the write end of a pipe and this small process (the guard)
holds the read end: when netsleuth is gone, for any reason, the kernel
closes the write end and the guard reads end-of-file.  The guard then
terminates its whole process group -- the controller and everything the
controller started -- with SIGTERM, and SIGKILL after a grace period.

The guard forks and execs the controller in its own process group (netsleuth
starts the guard as a session leader), marks it with PR_SET_PDEATHSIG so that
the controller also dies if the guard itself is killed (the guard has a
single thread, so here the signal means what it says), and exits with the
controller's status, re-raising the signal that killed it, so netsleuth sees
the controller's own exit code.  Standard library only: it runs in whatever
Python launches it and imports nothing of netsleuth.
"""

import ctypes
import errno
import os
import select
import signal
import sys
import time

PR_SET_PDEATHSIG = 1
GRACE = 2.0

# Bound at import: a warm start's guard is forked from a server that may since have been
# monkey-patched by eventlet (warm_osken.py), and the guard must block in the kernel's own calls.
_select = select.select
_waitpid = os.waitpid
_read = os.read
_write = os.write
_open = os.open
_sleep = time.sleep


def _pdeathsig(sig: int) -> None:
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, sig, 0, 0, 0)
    except (OSError, AttributeError):
        pass  # not Linux: the pipe still covers netsleuth's death


def _exit_like(status: int) -> None:
    """Leave with the child's wait status: its exit code, or killed by its signal."""
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        signal.signal(sig, signal.SIG_DFL)
        os.kill(os.getpid(), sig)
        _sleep(1)
        os._exit(128 + sig)
    os._exit(os.WEXITSTATUS(status) if os.WIFEXITED(status) else 1)


def _wait(pid: int, timeout: float) -> int | None:
    deadline = time.monotonic() + timeout
    while True:
        done, status = _waitpid(pid, os.WNOHANG)
        if done:
            return status
        if time.monotonic() >= deadline:
            return None
        _sleep(0.02)


def child_setup(guard_pid: int) -> None:
    """In the controller, first thing: die with the guard, and take stop signals as a program does."""
    _pdeathsig(signal.SIGKILL)
    if os.getppid() != guard_pid:  # the guard died before prctl took effect
        os._exit(1)
    for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(s, signal.SIG_DFL)


def stand_guard(pid: int, watch: int, report: int | None = None) -> None:
    """Be the guard of ``pid`` (a child of this process, the leader of its group) until it ends.

    Leaves with the controller's status; when ``watch`` reads end-of-file
    first, takes the whole group down.  ``report``, when given, is a pipe that
    gets the controller's wait status (4 bytes) before the guard leaves: for a
    guard that is not the child of whoever watches it (a warm start's,
    warm_osken.py), its exit status reaches nobody else."""
    # Stop signals are for the controller (they reach the whole group);
    # the guard stays to report its status.  It keeps no copy of the controller's pipes.
    for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(s, signal.SIG_IGN)
    devnull = _open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(devnull, 1)
    try:
        pidfd = os.pidfd_open(pid)
    except (AttributeError, OSError):
        pidfd = None
    while True:
        fds = [watch] + ([pidfd] if pidfd is not None else [])
        try:
            ready = _select(fds, [], [], None if pidfd is not None else 0.1)[0]
        except InterruptedError:
            ready = []
        done, status = _waitpid(pid, os.WNOHANG)
        if done:
            if report is not None:
                try:
                    _write(report, status.to_bytes(4, "little"))
                except OSError:
                    pass
            _exit_like(status)
        if watch in ready:
            try:
                data = _read(watch, 64)
            except OSError as exc:
                data = b"" if exc.errno != errno.EINTR else b"x"
            if not data:  # netsleuth is gone (or let go on purpose): take the group down
                os.killpg(0, signal.SIGTERM)
                _wait(pid, GRACE)
                os.killpg(0, signal.SIGKILL)  # the guard included
                os._exit(1)


def main(argv: list[str]) -> None:
    if len(argv) < 3 or argv[1] != "--":
        sys.stderr.write("usage: guard.py FD -- PROGRAM [ARGS...]\n")
        os._exit(2)
    watch = int(argv[0])
    program = argv[2:]
    me = os.getpid()
    pid = os.fork()
    if pid == 0:
        os.close(watch)
        child_setup(me)
        try:
            os.execvp(program[0], program)
        except OSError as exc:
            sys.stderr.write(f"cannot run {program[0]}: {exc.strerror}\n")
            os._exit(127)
    stand_guard(pid, watch)


if __name__ == "__main__":
    main(sys.argv[1:])
