"""Real controller processes: launch, watch, kill, restart.

The controller under test is a real program in its own environment. This
module is the only place that starts it; it picks a free port, captures its
log to a file (os-ken swallows handler exceptions and only logs them, so the
log is how a crash is seen), waits until it listens, and turns every way of
failing to start into one ControllerError carrying the log's last lines.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import BinaryIO

import psutil

from netsleuth.controllers import warm
from netsleuth.controllers.faucet import FaucetLaunch, launch_for, render_config
from netsleuth.controllers.listening import listeners, port_listening
from netsleuth.controllers.measure import coverage_argv, python_program
from netsleuth.controllers.osken_apps import MISSING_MARK
from netsleuth.controllers.pox import pox_argv, pox_home
from netsleuth.errors import ControllerError, EnvironmentSetupError, NetsleuthError
from netsleuth.model.topology import Topology
from netsleuth.trace.controller_spec import APP_KINDS, ControllerSpec, Kind

OSKEN_MAIN = Path(__file__).with_name("osken_main.py")
GUARD = Path(__file__).with_name("guard.py")
ERROR_MARKERS = ("Traceback (most recent call last)", "Error in", "Exception in")


def find_controller_python() -> str:
    """The Python of the controller environment (.venv-controller), or a clear error."""
    env = os.environ.get("NETSLEUTH_CONTROLLER_PYTHON")
    if env:
        if not Path(env).exists():
            raise EnvironmentSetupError(f"NETSLEUTH_CONTROLLER_PYTHON={env} does not exist",
                                        "point it at the python of a venv with os-ken 1.4.1, or unset it")
        return env
    roots = [Path.cwd(), *Path.cwd().parents, Path(__file__).resolve().parents[2]]
    for root in roots:
        candidate = root / ".venv-controller" / "bin" / "python"
        if candidate.exists():
            return str(candidate)
    raise EnvironmentSetupError("the os-ken controller environment (.venv-controller) was not found",
                                "run `make setup` in the netsleuth checkout, or set NETSLEUTH_CONTROLLER_PYTHON")


def pox_python() -> str:
    """The Python that runs POX (standard library only): the controller environment's, else python3 on PATH."""
    try:
        return find_controller_python()
    except EnvironmentSetupError:
        found = shutil.which("python3")
        if found is None:
            raise EnvironmentSetupError("no Python to run POX with", "run `make setup` or install python3") from None
        return found


class Lifeline:
    """The write end of the pipe a guarded process watches (see guard.py).

    While netsleuth holds it open the guard lets its controller run; when
    netsleuth exits or is killed the kernel closes it and the guard takes the
    controller's whole process group down.  :meth:`release` does the same on
    purpose, after netsleuth has stopped the controller itself.
    """

    def __init__(self) -> None:
        self.read_fd, self.write_fd = os.pipe()  # both close-on-exec; the read end is passed explicitly

    def wrap(self, argv: list[str]) -> list[str]:
        """``argv`` run under the guard (the guard's own Python is netsleuth's)."""
        return [sys.executable, "-I", str(GUARD), str(self.read_fd), "--", *argv]

    def started(self) -> None:
        """The guard has its copy of the read end; ours must go so only the guard holds it."""
        if self.read_fd >= 0:
            os.close(self.read_fd)
            self.read_fd = -1

    def release(self) -> None:
        for fd in (self.read_fd, self.write_fd):
            if fd >= 0:
                try:
                    os.close(fd)
                except OSError:
                    pass
        self.read_fd = self.write_fd = -1


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def _lost_port(log_path: Path, start: int) -> bool:
    """Whether the controller's log (from ``start``) says its port was taken."""
    try:
        with open(log_path, "rb") as f:
            f.seek(start)
            text = f.read().decode(errors="replace")
    except OSError:
        return False
    return "Address already in use" in text or "EADDRINUSE" in text


def _ours(pid: int | None, guard: int) -> bool:
    """Whether the listener ``pid`` is the controller we started: in the guard's process group, or a
    descendant of the guard (a command such as ``timeout`` moves its child to a group of its own)."""
    if pid is None:
        return True  # the system hides the owner: nothing to tell it by, take it as ours (as before)
    try:
        if os.getpgid(pid) == guard:
            return True
        return any(parent.pid == guard for parent in psutil.Process(pid).parents())
    except (OSError, psutil.Error):
        return False


# A free port is only free until someone binds it: between free_port() and the controller's own
# bind, another netsleuth job (a campaign runs many side by side) may have picked the same one.
PORT_ATTEMPTS = 5


class ControllerProcess:
    """One controller: started from a spec, reachable at (host, port)."""

    def __init__(self, spec: ControllerSpec, log_path: Path, name: str = "c0",
                 port: int | None = None, extra_args: tuple[str, ...] = (),
                 topology: Topology | None = None, coverage_dir: Path | None = None,
                 coverage_framework: bool = False) -> None:
        self.spec = spec
        self.name = name
        self.log_path = Path(log_path)
        self.host = spec.host
        self.port = spec.port or port or 0
        self.port_fixed = bool(self.port)  # given by the user: never moved to another port
        self.extra_args = extra_args
        self.proc: subprocess.Popen | warm.WarmProcess | None = None
        self.lifeline: Lifeline | None = None
        self.starts = 0
        self.topology = topology
        # Faucet's config, logs and environment (faucet:auto generates its config from ``topology``).
        self.faucet: FaucetLaunch | None = (launch_for(spec.config, self.log_path, topology)
                                            if spec.kind is Kind.FAUCET else None)
        # --- line coverage for fault localization (controllers/measure.py, covlaunch.py) ---
        self.coverage_dir = coverage_dir
        self.coverage_framework = coverage_framework  # the framework's lines too (os-ken, POX's core)
        self.coverage_file: Path | None = None  # this start's lines, written when the controller stops
        self.coverage_marked = False            # the handshakes are done: restarts count from their start

    @property
    def external(self) -> bool:
        return self.spec.kind is Kind.TCP

    def argv(self) -> list[str]:
        if self.spec.kind in APP_KINDS:
            # osken_main.py loads the apps itself (files, Ryu's names) before os-ken's manager runs.
            ryu = ["--ryu"] if self.spec.kind is Kind.RYU else []
            # An app with a REST API (ofctl_rest, ...) makes os-ken serve HTTP, on every interface by
            # default: loopback only, unless the spec says otherwise.
            web = [] if any(o.startswith("--wsapi-host") for o in self.spec.options) else ["--wsapi-host",
                                                                                            "127.0.0.1"]
            return [find_controller_python(), str(OSKEN_MAIN), *ryu, "--apps", ",".join(self.spec.apps), "--",
                    "--ofp-tcp-listen-port", str(self.port), "--ofp-listen-host", self.host, *web,
                    *self.spec.options, *self.extra_args]
        if self.faucet is not None:
            return [*self.faucet.argv(self.host, self.port), *self.extra_args]
        if self.spec.kind is Kind.POX:
            return [*pox_argv(pox_python(), str(pox_home()), self.spec.command, self.host, self.port), *self.extra_args]
        return [a.replace("{port}", str(self.port)) for a in self.spec.command]

    def _warm_argv(self, argv: list[str]) -> list[str] | None:
        """``PYTHON osken_main.py ARGS`` for a start the warm-start server can make, else None.

        os-ken and Ryu apps run os-ken's launcher anyway, under coverage or not (covlaunch.py then runs it).
        Faucet's launcher only turns its arguments into the manager's and execs ``osken-manager``, which
        ``osken_main.py`` is when given no apps: the same program in the same environment, minus one
        interpreter's start (under coverage, covlaunch.py does the same turn itself).  Never a ``cmd:``
        or POX (they run programs of their own), or Faucet given extra arguments."""
        if self.spec.kind in APP_KINDS:
            return argv
        if self.faucet is None or self.extra_args:
            return None
        if self.coverage_file is not None:
            return argv
        program = python_program(argv)
        if program is None:
            return None
        return [program[0], str(OSKEN_MAIN), *self.faucet.manager_argv(self.host, self.port)]

    def start(self, timeout: float = 30.0) -> tuple[str, int]:
        """Launch (or, for tcp:, check) the controller and wait until it listens.

        A port netsleuth chose may be taken by another job between the choice and the
        controller's bind (the controller then fails to bind, or the port's listener is
        some other process): the controller is started again on a fresh port, up to
        PORT_ATTEMPTS times; the address returned is where it really listens."""
        if self.external:
            self._check_reachable()
            return self.host, self.port
        for attempt in range(1, PORT_ATTEMPTS + 1):
            if not self.port or (not self.port_fixed and port_listening(self.port)):
                self.port = free_port(self.host)
            elif port_listening(self.port):
                raise ControllerError(f"port {self.port} is already in use",
                                      "stop what listens there or let netsleuth pick a free port")
            if self._launch(timeout):
                return self.host, self.port
            if self.port_fixed or attempt == PORT_ATTEMPTS:
                break
            self.port = 0  # lost the port to someone else: take another
        raise ControllerError(f"controller {self.spec} could not listen on port {self.port}: another "
                              f"process took it first ({attempt} attempt(s))",
                              "let netsleuth pick the port (no fixed port in the spec), or stop what listens "
                              "there", details=self.log_tail())

    def _launch(self, timeout: float) -> bool:
        """Start the process on ``self.port``; False if the port turned out to be someone else's."""
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        env = launch_env(self.spec)
        if self.faucet is not None:
            env.update(self.faucet.prepare())
        log = open(self.log_path, "ab")
        log_start = log.seek(0, os.SEEK_END)
        self._release()
        # Under a guard, in a process group of its own: the controller and its children
        # die with netsleuth however it ends (guard.py), and kill() reaches them all.
        lifeline = Lifeline()
        try:
            argv = self._measured(self.argv())
            warm_argv = self._warm_argv(argv)
            self.proc = _warm_start(warm_argv, env, log, lifeline) if warm_argv else None
            if self.proc is None:
                self.proc = subprocess.Popen(lifeline.wrap(argv), stdout=log, stderr=subprocess.STDOUT,
                                             stdin=subprocess.DEVNULL, env=env, start_new_session=True,
                                             pass_fds=(lifeline.read_fd,))
        except OSError as exc:
            lifeline.release()
            raise ControllerError(f"cannot start controller {self.spec}: {exc}",
                                  "check the command exists and is executable") from exc
        finally:
            log.close()
        lifeline.started()
        self.lifeline = lifeline
        self.starts += 1
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            code = self.proc.poll()
            if code is not None:
                app_error = app_import_error(self.spec, self.log_path, log_start)
                if app_error is not None:
                    raise app_error
                if not self.port_fixed and _lost_port(self.log_path, log_start):
                    self._release()
                    return False
                raise ControllerError(
                    f"controller {self.spec} exited with code {code} while starting",
                    f"see its log {self.log_path}", details=self.log_tail())
            pids = listeners(self.port)
            if pids:
                if any(_ours(pid, self.proc.pid) for pid in pids):
                    return True
                if not self.port_fixed:  # another job's controller has this port: ours cannot bind it
                    self.kill()
                    return False
            time.sleep(0.05)
        self.kill()
        raise ControllerError(f"controller {self.spec} did not listen on port {self.port} "
                              f"within {timeout:.0f}s", f"see its log {self.log_path}",
                              details=self.log_tail())

    def _measured(self, argv: list[str]) -> list[str]:
        """``argv`` under coverage when this controller's lines are wanted (and it is Python)."""
        self.coverage_file = None
        if self.coverage_dir is None:
            return argv
        self.coverage_dir.mkdir(parents=True, exist_ok=True)
        out = self.coverage_dir / f"{self.name}-{self.starts + 1}.json"
        wrapped = coverage_argv(self.spec, argv, out, run_now=self.coverage_marked,
                                framework=self.coverage_framework)
        if wrapped is None:
            return argv
        self.coverage_file = out
        return wrapped

    def mark_coverage(self) -> Path | None:
        """The handshakes are done: from now on the controller's lines count (covlaunch.py's SIGUSR2).
        Returns the file that appears once the controller has switched, to wait for."""
        self.coverage_marked = True
        pid = self.pid if self.coverage_file is not None else None
        if pid is None or self.coverage_file is None:
            return None
        try:
            os.kill(pid, signal.SIGUSR2)
        except ProcessLookupError:
            return None
        return Path(str(self.coverage_file) + ".run")

    def _check_reachable(self) -> None:
        try:
            with socket.create_connection((self.host, self.port), timeout=3):
                pass
        except OSError as exc:
            raise ControllerError(f"no controller answers at {self.host}:{self.port} ({exc.strerror or exc})",
                                  "start it first, or use osken:/cmd: to let netsleuth launch it") from exc

    def alive(self) -> bool:
        if self.external:
            return True
        return self.proc is not None and self.proc.poll() is None

    def wait_exit(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for the process to end; True if it did."""
        if self.proc is None or self.external:
            return False
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return False
        return True

    def exit_code(self) -> int | None:
        return None if self.proc is None else self.proc.poll()

    def kill(self) -> None:
        """SIGKILL the controller and its process group (a crash, as the fuzzer injects it)."""
        if self.proc is None or self.proc.poll() is not None:
            self._release()
            return
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait(timeout=10)
        self._release()

    def stop(self, grace: float = 3.0) -> None:
        if self.proc is None or self.proc.poll() is not None:
            self._release()
            return
        if self.coverage_file is not None:
            grace = max(grace, 15.0)  # it writes its lines on SIGTERM before it goes
        try:
            os.killpg(self.proc.pid, signal.SIGTERM)
            self.proc.wait(timeout=grace)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            self.kill()
        self._release()

    def _release(self) -> None:
        if self.lifeline is not None:
            self.lifeline.release()
            self.lifeline = None

    @property
    def configurable(self) -> bool:
        """Whether config changes can rewrite this controller's configuration (Faucet's YAML file)."""
        return self.faucet is not None

    def initial_config(self) -> str | None:
        """The configuration text the controller starts from (None when it has no file netsleuth knows)."""
        if self.faucet is None:
            return None
        if self.faucet.config == "auto" and self.topology is not None:
            return render_config(self.topology)
        try:
            return self.faucet.read_config()
        except ControllerError:
            return Path(self.faucet.config).read_text(errors="replace")

    def change_config(self, text: str) -> Path:
        """Write ``text`` as the controller's configuration and, if it runs, tell it to reload (SIGHUP,
        as an operator does). A crashed controller reads the file when it is restarted."""
        if self.faucet is None:
            raise ControllerError(f"controller {self.spec} has no configuration file netsleuth can change",
                                  "config changes apply to faucet: controllers; leave config_change out of the rates")
        path = self.faucet.write_config(text)
        pid = self.pid
        if pid is not None:
            try:
                os.kill(pid, signal.SIGHUP)
            except ProcessLookupError:  # it died in between: it reads the file when restarted
                pass
        return path

    def restart(self, timeout: float = 30.0) -> tuple[str, int]:
        self.kill()
        return self.start(timeout)

    def log_tail(self, lines: int = 15) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            text = ""
        tail = "\n".join(text.splitlines()[-lines:])
        if self.faucet is not None:
            tail = "\n".join(part for part in (self.faucet.log_tail(lines), tail) if part)
        return tail

    def traceback_logs(self) -> list[Path]:
        """The files a controller's tracebacks go to: its own output, and Faucet's exception log."""
        return [self.log_path] + ([self.faucet.exception_log_path] if self.faucet is not None else [])

    def log_errors(self) -> list[str]:
        """Exceptions the controller logged (os-ken logs and swallows handler crashes)."""
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return []
        if self.faucet is not None:
            text += "\n" + self.faucet.exception_text()
        lines = text.splitlines()
        found = []
        for i, line in enumerate(lines):
            if any(m in line for m in ERROR_MARKERS):
                # the exception line closes a traceback: the first unindented line after it
                j = i + 1
                while j < len(lines) and (lines[j].startswith(" ") or lines[j].startswith("\t")):
                    j += 1
                found.append(lines[j] if j < len(lines) else line)
        return found

    @property
    def pid(self) -> int | None:
        """The controller's own process id (``proc`` is its guard, guard.py), while it runs."""
        if not self.alive() or self.proc is None:
            return None
        deadline = time.monotonic() + 2.0
        while True:  # the guard forks the controller as its first act
            try:
                children = psutil.Process(self.proc.pid).children()
            except psutil.Error:
                return None
            if children or time.monotonic() > deadline:
                return children[0].pid if children else None
            time.sleep(0.01)

    def rss_bytes(self) -> int:
        """Memory of the controller and its children (not of the guard)."""
        pid = self.pid
        if pid is None:
            return 0
        try:
            p = psutil.Process(pid)
            return p.memory_info().rss + sum(c.memory_info().rss for c in p.children(recursive=True))
        except psutil.Error:
            return 0


def launch_env(spec: ControllerSpec) -> dict[str, str]:
    """The environment a controller of ``spec`` starts in (a Faucet start adds its own variables to it)."""
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    if spec.kind is Kind.OSKEN:
        # os-ken imports distutils' LooseVersion; setuptools' copy of distutils (its default) drags in
        # pkg_resources first, a third of the controller's start-up CPU for the same class.
        env.setdefault("SETUPTOOLS_USE_DISTUTILS", "stdlib")
    return env


def share_warm_start(specs: Sequence[str | ControllerSpec]) -> None:
    """Have, in this process, the warm-start server its os-ken and Ryu controllers start from (warm.py),
    before it starts worker processes that start such controllers (a campaign's or a minimization's
    pool): they join it, as the server's environment variable is handed to them, instead of each
    starting and patching one of its own, about 0.8 s of CPU per worker. A server this process
    already has is kept. Nothing is raised here: a spec that does not parse, a missing controller
    environment, warm starts turned off or failing are found by the workers' own starts, as before."""
    for given in specs:
        try:
            spec = given if isinstance(given, ControllerSpec) else ControllerSpec.parse(given)
            if spec.kind in APP_KINDS:
                warm.starter_for(find_controller_python(), launch_env(spec))
        except NetsleuthError:
            continue


def _warm_start(argv: list[str], env: dict[str, str], log: BinaryIO, lifeline: Lifeline) -> warm.WarmProcess | None:
    """``argv`` (``PYTHON osken_main.py ...``) started from the warm-start server of its environment (warm.py),
    or None: start it cold."""
    starter = warm.starter_for(argv[0], env)
    if starter is None:
        return None
    try:
        return starter.launch(argv, env, os.getcwd(), log.fileno(), lifeline.read_fd)
    except warm.WarmStartError:
        warm.forget(starter)
        return None


class AppImportError(ControllerError):
    """An os-ken/Ryu app cannot be loaded: it imports a module the environment lacks, or an option is unknown."""


_NO_NAME = re.compile(r"cannot import name '([A-Za-z0-9_]+)' from '([A-Za-z0-9_.]+)'")


def import_error_for(kind: str, module: str, app: str, message: str) -> AppImportError:
    """The one-line error for an app that cannot be imported (the launcher's marked line, parsed).

    ``from ryu.contrib import x`` of a module os-ken lacks fails as "cannot
    import name 'x' from 'os_ken.contrib'": the module named is then the
    package's plus that name, under the name the app used.
    """
    where = Path(app).name if "/" in app else app
    if not module:  # the launcher could not even place the apps (two files with one module name)
        return AppImportError(f"cannot load the apps: {message}", "rename one of the app files")
    if module == app or app.startswith(module + ".") or Path(app).stem == module:
        what = "Ryu" if kind == "ryu" else "os-ken"
        return AppImportError(f"cannot import {what} app module '{where}': {message}",
                              "check the module name (e.g. os_ken.app.simple_switch), or give the path of "
                              "the app's .py file")
    m = _NO_NAME.search(message)
    if m is not None and m.group(2) == module:
        module = f"{module}.{m.group(1)}"
    if kind == "osken" and (module == "ryu" or module.startswith("ryu.")):
        return AppImportError(f"app {where} imports {module}: it is a Ryu app, and osken: runs os-ken apps",
                              "run it as ryu:APP, which serves Ryu's modules from os-ken")
    if module.startswith(("os_ken", "ryu")) and module.partition(".")[0] in ("os_ken", "ryu"):
        shown = "ryu" + module[len("os_ken"):] if kind == "ryu" and module.startswith("os_ken") else module
        return AppImportError(f"app {where} imports {shown}, which os-ken 1.4.1 (Ryu's maintained fork, "
                              "which runs Ryu apps here) does not have",
                              f"change the app to do without {shown}, or copy that module into the app's "
                              "folder and import it from there")
    return AppImportError(f"app {where} imports {module}, which the controller environment does not have "
                          f"({message})",
                          f"put {module} beside the app, or install it into .venv-controller "
                          "(.venv-controller/bin/pip install ...)")


def app_import_error(spec: ControllerSpec, log_path: Path, start: int = 0) -> AppImportError | None:
    """The launcher's marked line (see osken_apps.py) in the part of the log written since ``start``."""
    if spec.kind not in APP_KINDS:
        return None
    try:
        with open(log_path, "rb") as f:
            f.seek(start)
            text = f.read().decode(errors="replace")
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith(MISSING_MARK):
            parts = line.split("\t")
            parts += [""] * (4 - len(parts))
            return import_error_for(spec.kind, parts[1], parts[2], parts[3])
        m = _UNKNOWN_OPTION.match(line)
        if m is not None:  # os-ken's option parser (argparse) refused a manager option of the spec
            return AppImportError(f"os-ken does not accept the options {m.group(1).strip()}",
                                  "use ryu-manager options os-ken 1.4.1 knows (e.g. --config-file FILE, "
                                  "--observe-links)")
    return None


_UNKNOWN_OPTION = re.compile(r"\S+: error: unrecognized arguments: (.+)$")


__all__ = ["AppImportError", "ControllerProcess", "Lifeline", "app_import_error", "find_controller_python",
           "free_port", "import_error_for", "launch_env", "port_listening", "share_warm_start"]
