"""netsleuth inside pytest: a live-network fixture, a marker, an option and a failure report.

Installed with netsleuth (entry point ``pytest11``), so every pytest run of
an environment that has netsleuth loads it; it stays out of the way of a test
suite that does not use it. Loading it imports nothing but pytest and the
standard library: the network, the invariants, the controllers and
Hypothesis are imported the first time a test asks for them
(``bench/pytest_plugin.py`` measures the cost). ``-p no:netsleuth`` turns it
off altogether.

- ``netsleuth_network``: a factory fixture. ``net = netsleuth_network(controller=..., topo=...)``
  starts the controller in its own process and a mock network connected to
  it, and returns a :class:`netsleuth.testing.LiveNetwork`; every network a
  test opened is closed (controller stopped) at its teardown, pass or fail.
- ``@pytest.mark.netsleuth(controller=..., topo=..., openflow=...)``: the
  defaults of that factory for one test (or a module, a class).
- ``--netsleuth-controller SPEC`` replaces the controller every test names,
  to run the same tests against another controller;
  ``--netsleuth-reproduce N`` makes :func:`netsleuth.testing.check_inputs`
  count a violation only when netsleuth's replay reproduces it (flaky real
  controllers).
- A failing test that used a network gets a ``netsleuth`` section in its
  report: the trace's path, the violations in plain words, and the commands
  that replay (``netsleuth replay``) and draw (``netsleuth viz``) it.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable, Generator, Iterator
from typing import Any

import pytest

# The variables below are read by netsleuth.testing, which this module does not import
# when it loads (its import is what a suite that does not use netsleuth must not pay for).
CONTROLLER_ENV = "NETSLEUTH_TEST_CONTROLLER"
REPRODUCE_ENV = "NETSLEUTH_TEST_REPRODUCE"
_NETWORK_MODULE = "netsleuth.testing.network"
_MARKER_KEYS = ("controller", "topo", "openflow")
_SAVED_ENV = pytest.StashKey[dict[str, str | None]]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("netsleuth", "netsleuth: test SDN controllers")
    group.addoption("--netsleuth-controller", metavar="SPEC", default=None,
                    help="run every netsleuth network with this controller instead of the one a test names "
                         "(osken:APP, ryu:APP, faucet:auto, cmd:'...', tcp:HOST:PORT)")
    group.addoption("--netsleuth-reproduce", metavar="N", type=int, default=None,
                    help="a violation found by netsleuth.testing.check_inputs counts only when netsleuth "
                         "replay reproduces it in N of N replays (for controllers with timing)")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "netsleuth(controller=None, topo=None, openflow=None): defaults of the "
                                       "netsleuth_network fixture for this test")
    wanted = {CONTROLLER_ENV: config.getoption("netsleuth_controller", None),
              REPRODUCE_ENV: config.getoption("netsleuth_reproduce", None)}
    if wanted[REPRODUCE_ENV] is not None and int(wanted[REPRODUCE_ENV]) < 0:
        raise pytest.UsageError("--netsleuth-reproduce must be 0 or more")
    saved = {}
    for name, value in wanted.items():
        if value is not None:
            saved[name] = os.environ.get(name)
            os.environ[name] = str(value)
    config.stash[_SAVED_ENV] = saved


def pytest_unconfigure(config: pytest.Config) -> None:
    for name, old in config.stash.get(_SAVED_ENV, {}).items():
        if old is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = old


def _marker_defaults(node: pytest.Item) -> dict[str, Any]:
    marker = node.get_closest_marker("netsleuth")
    if marker is None:
        return {}
    unknown = sorted(set(marker.kwargs) - set(_MARKER_KEYS))
    if unknown or marker.args:
        raise pytest.UsageError(f"@pytest.mark.netsleuth takes {', '.join(_MARKER_KEYS)} as keywords, "
                                f"not {', '.join(unknown) or repr(marker.args)}")
    return dict(marker.kwargs)


@pytest.fixture
def netsleuth_controller(request: pytest.FixtureRequest) -> str | None:
    """The controller this test runs: --netsleuth-controller, else the marker's, else None."""
    option: str | None = request.config.getoption("netsleuth_controller", None)
    return option or _marker_defaults(request.node).get("controller")


@pytest.fixture
def netsleuth_network(request: pytest.FixtureRequest,
                      tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[..., Any]]:
    """A factory of live networks: ``net = netsleuth_network(controller=..., topo=..., openflow=...)``.

    Arguments left out come from the test's ``netsleuth`` marker (topology
    default ``linear,3``); ``--netsleuth-controller`` replaces the
    controller. Further keywords go to LiveNetwork (``checks``, ``warmup``,
    ...). Each network writes to its own directory under pytest's temporary
    directory, and is closed at the test's teardown, whatever the outcome.
    """
    from netsleuth.testing.network import LiveNetwork

    defaults = _marker_defaults(request.node)
    opened: list[LiveNetwork] = []

    def factory(controller: str | list[str] | None = None, topo: str | None = None,
                openflow: str | None = None, **options: Any) -> LiveNetwork:
        out = tmp_path_factory.mktemp("netsleuth-" + re.sub(r"\W", "_", request.node.name)[:40], numbered=True)
        net = LiveNetwork(controller or defaults.get("controller"), topo or defaults.get("topo") or "linear,3",
                          openflow=openflow or defaults.get("openflow") or "auto", out=out, **options)
        opened.append(net)
        return net

    try:
        yield factory
    finally:
        for net in opened:
            net.close()


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """Forget the networks of earlier tests: a report names only the ones this test opened."""
    module = sys.modules.get(_NETWORK_MODULE)
    if module is not None:
        module.OPENED.clear()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, Any]:
    report = yield
    if report.failed:
        text = _failure_section(call)
        if text:
            report.sections.append(("netsleuth", text))
    return report


def _failure_section(call: pytest.CallInfo[None]) -> str:
    """The trace, violations and commands of every network the test opened and of a violated sequence."""
    parts = []
    module = sys.modules.get(_NETWORK_MODULE)
    if module is not None:
        parts += [net.report() for net in module.OPENED]
    if call.excinfo is not None:
        for exc in _leaves(call.excinfo.value):
            report = getattr(exc, "netsleuth_report", None)
            if callable(report):
                parts.append(report())
    return "\n\n".join(parts)


def _leaves(exc: BaseException) -> Iterator[BaseException]:
    """The exception, or each one inside an exception group (Hypothesis reports several bugs so)."""
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            yield from _leaves(inner)
    else:
        yield exc
