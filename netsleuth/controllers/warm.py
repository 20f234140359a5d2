"""Warm starts of os-ken controllers, netsleuth's side: one fork server per environment, processes it starts.

A cold os-ken start spends about half a second of CPU importing what every
start imports; campaigns, minimizations and test suites start hundreds.
Faucet is an os-ken app in an environment of its own, and starts the same
way there (its launcher's arguments turned into the manager's, see
``ControllerProcess._warm_argv``).
``warm_osken.py`` imports it once in the controller environment and forks
each start from there (its docstring says what is imported ahead and why
the controller still runs as a cold start would).  This module starts that
server when a process first needs one, hands it starts, and gives back a
:class:`WarmProcess` that :class:`~netsleuth.controllers.external.ControllerProcess`
uses as it uses a ``Popen`` of ``guard.py``: the same pid (the guard, leader
of the controller's process group), exit status, waits and signals.

Anything that keeps a warm start from working (the server does not start,
dies, or refuses) makes the start cold: a warm start is only quicker, never
required.  ``NETSLEUTH_WARM_START=0`` turns warm starts off.
"""

from __future__ import annotations

import hashlib
import json
import os
import select
import signal
import socket
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import BinaryIO

WARM_OSKEN = Path(__file__).with_name("warm_osken.py")
READY_TIMEOUT = 30.0
#: Environment variables read while the server imports (or by the interpreter as it starts): a start whose
#: environment differs in one of them needs a server of its own.  Others are set in each controller.
_AT_IMPORT = ("PYTHON", "EVENTLET", "OSKEN", "SETUPTOOLS", "LD_", "OSLO", "LANG", "LC_")


class WarmStartError(OSError):
    """The warm-start server could not make this start (the caller starts the controller cold)."""


class WarmProcess:
    """A controller started warm, seen through its guard: ``pid``, ``poll()``, ``wait()``, ``returncode``."""

    def __init__(self, pid: int, status_fd: int, args: list[str]) -> None:
        self.pid = pid
        self.args = args
        self.returncode: int | None = None
        self._status_fd = status_fd
        self._status = b""

    def _read_status(self, timeout: float | None) -> bool:
        if self.returncode is not None:
            return True
        while len(self._status) < 4:
            if not select.select([self._status_fd], [], [], timeout)[0]:
                return False
            chunk = os.read(self._status_fd, 4 - len(self._status))
            if not chunk:
                break
            self._status += chunk
        os.close(self._status_fd)
        # No status: the guard was killed with its group (kill(), or netsleuth's lifeline let go).
        self.returncode = (os.waitstatus_to_exitcode(int.from_bytes(self._status, "little"))
                           if len(self._status) == 4 else -signal.SIGKILL)
        self._until_reaped()
        return True

    def _until_reaped(self, limit: float = 2.0) -> None:
        """The server collects its ended guards at once; wait that moment, so the pid is really gone."""
        deadline = time.monotonic() + limit
        while time.monotonic() < deadline:
            try:
                os.kill(self.pid, 0)
            except ProcessLookupError:
                return
            except PermissionError:  # pragma: no cover - someone else's process got the pid
                return
            time.sleep(0.002)

    def poll(self) -> int | None:
        self._read_status(0)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if not self._read_status(timeout):
            raise subprocess.TimeoutExpired(self.args, timeout or 0)
        assert self.returncode is not None
        return self.returncode


class WarmStarter:
    """One warm-start server in the controller environment, and the socket to it: started by this process
    (:meth:`start`, which ends it on :meth:`close`) or by a parent netsleuth process (:meth:`join`)."""

    def __init__(self, sock: socket.socket, address: str, proc: subprocess.Popen | None = None,
                 errors: BinaryIO | None = None) -> None:
        self.owner = os.getpid()
        self._lock = threading.Lock()
        self._sock = sock
        self.address = address
        self.proc = proc
        self._errors = errors

    @classmethod
    def start(cls, python: str, env: dict[str, str]) -> WarmStarter:
        """Start a server of this process's own and wait until it has imported what it imports ahead."""
        sock, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        errors = tempfile.TemporaryFile()
        try:
            proc = subprocess.Popen([python, str(WARM_OSKEN), str(theirs.fileno())], pass_fds=(theirs.fileno(),),
                                    env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                    stderr=errors, start_new_session=True)
        except OSError:
            sock.close()
            errors.close()
            raise
        finally:
            theirs.close()
        self = cls(sock, "", proc, errors)
        sock.settimeout(READY_TIMEOUT)
        try:
            answer = json.loads(sock.recv(65536) or b"{}")
        except (OSError, ValueError) as exc:
            answer = {"error": str(exc)}
        if "ready" not in answer:
            errors.seek(0)
            tail = errors.read().decode(errors="replace").strip().splitlines()[-3:]
            self.close()
            raise WarmStartError(f"the warm-start server did not start: {answer.get('error') or ' / '.join(tail)}")
        self.address = str(answer.get("address", ""))
        sock.settimeout(None)
        return self

    @classmethod
    def join(cls, address: str) -> WarmStarter:
        """A server another netsleuth process of this tree started (its address from the environment)."""
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            sock.connect("\0" + address)
        except OSError as exc:
            sock.close()
            raise WarmStartError(f"the warm-start server at {address} is gone: {exc}") from exc
        return cls(sock, address)

    def launch(self, argv: list[str], env: dict[str, str], cwd: str, log_fd: int, lifeline_fd: int) -> WarmProcess:
        """Start ``SCRIPT argv[2:]`` (``argv``, ``PYTHON SCRIPT ...``, as a cold start would run it) under a
        guard; SCRIPT is ``osken_main.py`` or ``covlaunch.py`` (the server runs no other)."""
        request = json.dumps({"script": Path(argv[1]).name, "argv": argv[2:], "env": env, "cwd": cwd}).encode()
        read_fd, write_fd = os.pipe()
        try:
            with self._lock:
                self._sock.sendmsg([request], [(socket.SOL_SOCKET, socket.SCM_RIGHTS,
                                                _fds(log_fd, lifeline_fd, write_fd))])
                answer = json.loads(self._sock.recv(65536) or b"{}")
        except (OSError, ValueError) as exc:
            os.close(read_fd)
            raise WarmStartError(f"the warm-start server is gone: {exc}") from exc
        finally:
            os.close(write_fd)
        if "pid" not in answer:
            os.close(read_fd)
            raise WarmStartError(f"the warm-start server refused a start: {answer.get('error', answer)}")
        return WarmProcess(int(answer["pid"]), read_fd, argv)

    def close(self) -> None:
        """End the server if this process started it (end-of-file on its socket), else only leave it;
        controllers it started live on under their guards."""
        self._sock.close()
        if self.proc is not None:
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self._errors is not None:
            self._errors.close()


def _fds(*fds: int) -> bytes:
    return b"".join(fd.to_bytes(4, "little", signed=True) for fd in fds)


_starters: dict[tuple, WarmStarter | None] = {}
_starters_lock = threading.Lock()
#: The servers of this process tree, for the netsleuth processes it starts: {key digest: address}, as JSON.
SHARED_ENV = "NETSLEUTH_WARM_SERVERS"


def _digest(key: tuple) -> str:
    return hashlib.sha256(repr(key).encode()).hexdigest()[:16]


def _shared_servers() -> dict:
    """The servers named in this process's environment (:data:`SHARED_ENV`); {} if it names none rightly."""
    try:
        shared = json.loads(os.environ.get(SHARED_ENV, "{}"))
    except ValueError:
        return {}
    return shared if isinstance(shared, dict) else {}


def _shared(key: tuple) -> WarmStarter | None:
    """The server a parent netsleuth process started for ``key``, joined; None if there is none (any more)."""
    address = _shared_servers().get(_digest(key))
    if not isinstance(address, str) or not address:
        return None
    try:
        return WarmStarter.join(address)
    except WarmStartError:
        return None


def _share(key: tuple, starter: WarmStarter) -> None:
    """Name this process's own server in its environment, for the netsleuth processes it starts from now on."""
    shared = _shared_servers()
    shared[_digest(key)] = starter.address
    os.environ[SHARED_ENV] = json.dumps(shared, sort_keys=True)


def starter_for(python: str, env: dict[str, str]) -> WarmStarter | None:
    """The warm-start server of ``python`` (the controller environment's) for a start in ``env``, or None if the
    start must be cold: warm starts turned off, or a server that failed in this environment.

    A server that a parent netsleuth process started (named in :data:`SHARED_ENV`) is joined; else this
    process starts one, and names it there for the processes it starts in turn."""
    if os.environ.get("NETSLEUTH_WARM_START", "1") == "0":
        return None
    key = (python, tuple(sorted((k, v) for k, v in env.items() if k.startswith(_AT_IMPORT))))
    with _starters_lock:
        if key in _starters:
            known = _starters[key]
            if known is None or known.owner == os.getpid():  # (a forked copy of this process makes its own)
                return known
        starter = _shared(key)
        if starter is None:
            try:
                starter = WarmStarter.start(python, env)
            except OSError:  # WarmStartError among them
                starter = None
            else:
                if starter.address:
                    _share(key, starter)
        _starters[key] = starter
        return starter


def forget(starter: WarmStarter) -> None:
    """A server that failed a start is not asked again (starts in its environment go cold)."""
    with _starters_lock:
        for key, known in list(_starters.items()):
            if known is starter:
                _starters[key] = None
    starter.close()


__all__ = ["SHARED_ENV", "WarmProcess", "WarmStartError", "WarmStarter", "forget", "starter_for"]
