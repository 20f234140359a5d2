"""The suite's launch guard: a test that starts a process must be marked ``real``.

``make test-fast`` runs ``-m "not real and not slow"`` on a machine with no
Debian package and no controller environment, so a test that starts a
controller, Open vSwitch, tshark, Chromium or any other program (a
netsleuth subprocess, a multiprocessing worker) and is not marked ``real``
would break there. This guard sees every launch, at the two places Python
starts programs (``subprocess.Popen`` and ``multiprocessing``'s
``Process.start``; asyncio's subprocesses go through Popen) and where
netsleuth's warm-start server forks a controller, and fails the
test that made it (the linters ruff and mypy, from .venv like pytest itself,
excepted). A launch while a fixture is set up is charged to that
fixture: every test that uses it (directly or through another fixture) must
be ``real`` too, whichever test happened to build it first.

It also tells xdist how ``make test`` hands tests to its workers
(``--dist loadgroup``, :class:`_ModuleFixtureScheduling`).
"""

from __future__ import annotations

import ast
import fcntl
import gc
import multiprocessing.process
import os
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from xdist.scheduler import LoadScopeScheduling

from netsleuth.controllers.warm import WarmStarter

_state: dict[str, Any] = {"fixture": [], "launches": []}
_launching_fixtures: dict[str, str] = {}   # fixture name -> what it started first


def _describe(args: Any) -> str:
    """A short name for what a launch runs: ``ovs-vswitchd``, ``tshark``, ``python -m netsleuth.cli``..."""
    argv = [str(a) for a in args] if isinstance(args, (list, tuple)) else [str(args)]
    text = " ".join(argv)
    for key, name in (("netsleuth.cli", "a netsleuth subprocess"), ("bin/netsleuth", "a netsleuth subprocess"),
                      ("osken_main.py", "a controller (os-ken)"), ("osken_handler_server", "an os-ken handler server"),
                      ("guard.py", "a controller under its guard"), ("faucet", "Faucet"), ("ovs", "Open vSwitch"),
                      ("tshark", "tshark"), ("chromium", "Chromium"), ("pytest", "a pytest subprocess")):
        if key in text:
            return f"{name}: {Path(argv[0]).name} {' '.join(argv[1:4])}"[:160]
    return f"a subprocess: {Path(argv[0]).name} {' '.join(argv[1:3])}"[:160]


# The checkout's own linters (installed in .venv with netsleuth, `make lint`) are no real component.
_TOOLS = (("-m", "ruff"), ("-m", "mypy"))


def _is_tool(args: Any) -> bool:
    argv = [str(a) for a in args] if isinstance(args, (list, tuple)) else []
    return any(tuple(argv[i:i + 2]) == tool for tool in _TOOLS for i in range(1, 3))


def _record(what: str) -> None:
    if _state["fixture"]:
        _launching_fixtures.setdefault(_state["fixture"][-1], what)
    _state["launches"].append(what)


_real_execute_child = subprocess.Popen._execute_child  # type: ignore[attr-defined]
_real_process_start = multiprocessing.process.BaseProcess.start


def _guarded_execute_child(self: subprocess.Popen, args: Any, *rest: Any, **kw: Any) -> Any:
    if not _is_tool(args):
        _record(_describe(args))
    return _real_execute_child(self, args, *rest, **kw)


def _guarded_process_start(self: multiprocessing.process.BaseProcess) -> None:
    _record(f"a multiprocessing worker ({self.name})")
    _real_process_start(self)


_real_warm_launch = WarmStarter.launch


def _guarded_warm_launch(self: WarmStarter, argv: list[str], *rest: Any, **kw: Any) -> Any:
    _record(_describe(argv))   # a controller forked by the warm-start server: no Popen of its own
    return _real_warm_launch(self, argv, *rest, **kw)


subprocess.Popen._execute_child = _guarded_execute_child  # type: ignore[attr-defined]
multiprocessing.process.BaseProcess.start = _guarded_process_start  # type: ignore[method-assign]
WarmStarter.launch = _guarded_warm_launch  # type: ignore[method-assign]


def pytest_configure(config: pytest.Config) -> None:
    """A cache of this run's own: what netsleuth remembers between runs (the configs Faucet's checker
    passed) starts empty for every test run, and the xdist workers, started after this, share it."""
    if os.environ.get("PYTEST_XDIST_WORKER") or os.environ.get("NETSLEUTH_CACHE_DIR"):
        return
    config._netsleuth_cache = tempfile.TemporaryDirectory(prefix="netsleuth-cache-")  # type: ignore[attr-defined]
    os.environ["NETSLEUTH_CACHE_DIR"] = config._netsleuth_cache.name  # type: ignore[attr-defined]


def pytest_collection_finish(session: pytest.Session) -> None:
    """What collection made (the test items, their modules, the strategies they build) lives as long as
    the test process: set aside from the cyclic collector once, so that no full collection during the
    tests walks it again (about a quarter of a million objects)."""
    gc.collect()
    gc.freeze()


def pytest_unconfigure(config: pytest.Config) -> None:
    cache = getattr(config, "_netsleuth_cache", None)
    if cache is not None:
        os.environ.pop("NETSLEUTH_CACHE_DIR", None)
        cache.cleanup()


@pytest.hookimpl(hookwrapper=True)
def pytest_fixture_setup(fixturedef: pytest.FixtureDef, request: pytest.FixtureRequest):  # noqa: ANN201
    _state["fixture"].append(fixturedef.argname)
    try:
        yield
    finally:
        _state["fixture"].pop()


def _why_real(item: pytest.Item, launched: list[str]) -> str | None:
    """Why ``item`` needs the ``real`` mark it lacks, or None."""
    if item.get_closest_marker("real") is not None:
        return None
    if launched:
        return f"it started {launched[0]}"
    for name in getattr(item, "fixturenames", ()):
        if name in _launching_fixtures:
            return f"its fixture {name} started {_launching_fixtures[name]}"
    return None


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):  # noqa: ANN201
    outcome = yield
    report = outcome.get_result()
    launched, _state["launches"] = _state["launches"], []
    if report.when == "teardown" or report.failed:
        return
    why = _why_real(item, launched)
    if why is not None:
        report.outcome = "failed"
        report.longrepr = (f"{item.nodeid} is not marked real but {why} -- fix: mark it "
                           "@pytest.mark.real (and @pytest.mark.slow when it takes over ~5 s), "
                           "or start nothing from it")


_SHARED_SCOPES = ("module", "class", "package")


def _is_slow_mark(node: ast.AST) -> bool:
    return isinstance(node, ast.Attribute) and node.attr == "slow"


def _module_facts(path: Path) -> tuple[bool, bool, frozenset[str]]:
    """What test module ``path``'s source says: (it defines a module, class or package fixture or asks
    for an xdist group; it marks all its tests slow; the names of the functions it marks slow).

    Read from the source: xdist's controller, which hands the tests out, does
    not collect them, so it knows them by their ids only.
    """
    try:
        tree = ast.parse(path.read_text())
    except (OSError, SyntaxError, ValueError):
        return True, False, frozenset()   # cannot tell: keep the module together, as --dist loadfile would
    shared = all_slow = False
    slow: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr == "xdist_group":
            shared = True
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) == "fixture":
            shared |= any(k.arg == "scope" and isinstance(k.value, ast.Constant) and k.value.value in _SHARED_SCOPES
                          for k in node.keywords)
        elif isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "pytestmark" for t in node.targets):
            all_slow |= any(_is_slow_mark(n) for n in ast.walk(node.value))
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and any(
                _is_slow_mark(n) for d in node.decorator_list for n in ast.walk(d)):
            slow.add(node.name)
    return shared, all_slow, frozenset(slow)


class _ModuleFixtureScheduling(LoadScopeScheduling):
    """xdist's ``--dist loadgroup``, by module fixture: one test at a time, a module with a shared fixture whole.

    ``make test`` hands tests out one at a time, so a file of a few long tests
    (the tutorials, the daemon replays) is spread over every worker instead of
    holding one for minutes. A module or class fixture (a trace recorded
    against a controller, an Open vSwitch sandbox) would then be built once per
    worker that runs one of its tests: such a module goes to one worker whole,
    as ``--dist loadfile`` sent every file. (xdist's own loadgroup puts a group
    into the test's id, which pytest 9 no longer lets a plugin change.)
    Groups are handed out first, the longest first, then the tests marked
    slow, then the rest: the short tests fill the end, where a long one
    started last would keep one worker busy while the others idle.
    """

    def __init__(self, config: pytest.Config, log: Any = None) -> None:
        super().__init__(config, log)
        self._root = Path(str(config.rootpath))
        self._facts: dict[str, tuple[bool, bool, frozenset[str]]] = {}

    def _module(self, nodeid: str) -> tuple[str, tuple[bool, bool, frozenset[str]]]:
        module = nodeid.split("::", 1)[0]
        facts = self._facts.get(module)
        if facts is None:
            facts = self._facts[module] = _module_facts(self._root / module)
        return module, facts

    def _split_scope(self, nodeid: str) -> str:
        module, (shared, _, _) = self._module(nodeid)
        return module if shared else nodeid

    def _rank(self, scope: str, tests: dict) -> int:
        if len(tests) > 1:
            return 0
        _, (_, all_slow, slow) = self._module(scope)
        name = scope.split("::")[-1].split("[", 1)[0]
        return 1 if all_slow or name in slow else 2

    def schedule(self) -> None:
        first = self.collection is None
        super().schedule()
        if first and self.workqueue:   # what is still to hand out, in that order (a stable sort)
            units = sorted(self.workqueue.items(), key=lambda unit: self._rank(*unit))
            self.workqueue.clear()
            self.workqueue.update(units)


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    if config.getvalue("dist") == "loadgroup":
        return _ModuleFixtureScheduling(config, log)
    return None


def pytest_runtest_logstart(nodeid: str, location: tuple) -> None:
    _state["launches"] = []   # what collection or a previous test's teardown started is nobody's here


@pytest.fixture(scope="session")
def built_once(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str, Callable[[Path], Path]], Path]:
    """``built_once(name, make)``: ``make(directory)`` run once per test run, its path shared by the xdist workers.

    A session fixture is built by every xdist worker that runs one of its
    tests; a real trace recorded against a controller costs seconds each
    time. The first worker builds it under a file lock in the run's common
    temporary directory; the others wait for it and read the path. Who uses
    the result reads it and never writes there. The fixture ``name`` is
    charged with the launch even where another worker made it, so the guard
    judges its users the same on every worker.
    """
    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent   # <run>/popen-gwN -> <run>, common to the workers

    def build(name: str, make: Callable[[Path], Path]) -> Path:
        done = root / f"built-once-{name}.path"
        with open(root / f"built-once-{name}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if done.exists():
                _launching_fixtures.setdefault(name, "a real component (in the xdist worker that built it)")
                return Path(done.read_text())
            where = root / f"built-once-{name}"
            where.mkdir(exist_ok=True)
            result = make(where)
            done.write_text(str(result))
            return result

    return build
