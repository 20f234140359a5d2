"""Which controllers can be measured for fault localization, and the command that measures them.

Every controller netsleuth launches as a user's program is Python (os-ken
and Ryu apps, Faucet, POX, a ``cmd:`` Python program) except a ``cmd:``
binary.  :func:`coverage_argv` puts ``covlaunch.py`` (run by the
controller's own Python, with the coverage package of that environment) in
front of the program and says which code is the controller's own (the app's
files, Faucet's package, POX's components) and which its framework's
(os-ken, POX's core), so a ranking can leave the framework out.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

from netsleuth.errors import EnvironmentSetupError
from netsleuth.trace.controller_spec import APP_KINDS, ControllerSpec, Kind, is_app_file

COVLAUNCH = Path(__file__).with_name("covlaunch.py")
_PYTHON = re.compile(r"python[0-9.]*\Z")
# Interpreter options that take no value and change nothing coverage cares about.
_PLAIN_FLAGS = frozenset({"-u", "-B", "-O", "-OO", "-E", "-s", "-S", "-b", "-bb", "-q", "-I", "-P"})


def python_program(argv: list[str]) -> tuple[str, list[str]] | None:
    """``(interpreter, [script, args...] | ["-m", module, args...])`` when ``argv`` runs Python, else None."""
    if not argv:
        return None
    head = argv[0]
    if _PYTHON.match(os.path.basename(head)):
        rest = list(argv[1:])
        while rest and rest[0] in _PLAIN_FLAGS:
            rest.pop(0)
        if not rest or (rest[0].startswith("-") and rest[0] != "-m") or (rest[0] == "-m" and len(rest) < 2):
            return None  # -c CODE, a REPL, or options we do not know: nothing to launch in its place
        return head, rest
    interpreter = _shebang_python(head)
    return (interpreter, list(argv)) if interpreter else None


def _shebang_python(path: str) -> str | None:
    try:
        with open(path, "rb") as f:
            first = f.readline(256)
    except OSError:
        return None
    if not first.startswith(b"#!"):
        return None
    words = first[2:].decode(errors="replace").split()
    if not words:
        return None
    if os.path.basename(words[0]) == "env" and len(words) > 1:
        words = words[1:]
    return words[0] if _PYTHON.match(os.path.basename(words[0])) else None


def _top(module: str) -> str:
    return module.split(".")[0]


def _osken_options(spec: ControllerSpec, framework: bool) -> list[str]:
    opts = ["--framework-pkg", "os_ken", "--concurrency", "eventlet", "--windows", "--flows"]
    opts += ["--source-pkg", "os_ken"] if framework else []
    for app in spec.apps:
        if is_app_file(app):
            folder = str(Path(app).resolve().parent)  # the app and the helpers beside it
            opts += ["--source", folder, "--own-path", folder]
        else:
            opts += ["--own-module", app]
            if _top(app) in ("os_ken", "ryu"):  # a sample app: itself, under the name os-ken loads it by
                opts += [] if framework else ["--source-pkg", "os_ken" + app[3:] if _top(app) == "ryu" else app]
            else:
                opts += ["--source-pkg", _top(app)]
    return opts


def _python_options(rest: list[str], framework: bool) -> list[str]:
    if rest[0] == "-m":
        top = _top(rest[1])
        return ["--source-pkg", top, "--own-module", top]
    script = Path(rest[0]).resolve()
    folder = str(script.parent)
    if script.name == "pox.py":  # POX: its components are the controller's code, pox/ the framework
        ext = str(script.parent / "ext")
        # POX's scheduler thread starts at boot; --windows: a coverage context per handler call, as os-ken's
        # --flows: which call stored the app state each call reads (see covlaunch.py)
        opts = ["--framework-pkg", "pox", "--own-path", ext, "--early", "--windows", "--flows"]
        opts += ["--source", folder] if framework else ["--source", ext]
        for word in rest[1:]:
            component = word.split(":")[0]
            if not word.startswith("-") and component != "openflow.of_01":   # of_01: POX's, added by netsleuth
                opts += ["--own-module", component, "--own-module", f"pox.{component}"]
                opts += [] if framework else ["--source-pkg", component, "--source-pkg", f"pox.{component}"]
        return opts
    return ["--source", folder, "--own-path", folder]


def coverage_argv(spec: ControllerSpec, argv: list[str], out: Path, *, run_now: bool,
                  framework: bool = False) -> list[str] | None:
    """``argv`` run under coverage, writing its lines to ``out``; None for a controller that is not Python.

    ``framework``: measure the framework's code too (os-ken, POX's core), for ``--all-code``; it costs
    time in every handler, so only the controller's own code is measured otherwise."""
    program = python_program(argv)
    if program is None:
        return None
    interpreter, rest = program
    if spec.kind in APP_KINDS:
        opts = _osken_options(spec, framework)
    elif spec.kind is Kind.FAUCET:
        opts = ["--source-pkg", "faucet", "--own-module", "faucet", "--framework-pkg", "os_ken",
                "--concurrency", "eventlet", "--faucet", "--windows"]
        opts += ["--source-pkg", "os_ken"] if framework else []
    else:
        opts = _python_options(rest, framework)
    return [interpreter, str(COVLAUNCH), "--out", str(out), *opts, *(["--run-now"] if run_now else []), "--", *rest]


def measurable(spec: ControllerSpec) -> bool:
    """Whether netsleuth can measure this controller's lines: a Python program it launches."""
    if spec.kind in (*APP_KINDS, Kind.FAUCET, Kind.POX):   # pox: netsleuth runs pox.py with a Python it chooses
        return True
    if spec.kind is Kind.TCP:
        return False
    return python_program(list(spec.command)) is not None


def check_coverage_installed(interpreter: str) -> None:
    """Fail early, with the fix, when the controller's Python has no coverage package."""
    try:
        done = subprocess.run([interpreter, "-c", "import coverage"], capture_output=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise EnvironmentSetupError(f"cannot run the controller's Python {interpreter}: {exc}",
                                    "check the controller command") from None
    if done.returncode != 0:
        raise EnvironmentSetupError(f"the controller's Python {interpreter} has no coverage package, which "
                                    "--localize needs to see which lines the controller runs",
                                    f"{interpreter} -m pip install coverage (make setup does it for "
                                    ".venv-controller and .venv-faucet)")


__all__ = ["COVLAUNCH", "check_coverage_installed", "coverage_argv", "measurable", "python_program"]
