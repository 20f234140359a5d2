"""Spare controllers: the next replay's controller, started ahead, is a fresh one listening in its own folder."""

from __future__ import annotations

from pathlib import Path

import psutil
import pytest

from netsleuth.controllers.external import port_listening
from netsleuth.live.spare import SpareControllers, can_prestart
from netsleuth.model.topo_builders import parse_topo

pytestmark = pytest.mark.real

SIMPLE_SWITCH = "osken:os_ken.app.simple_switch"


def test_a_spare_is_taken_once_for_its_folder_and_close_leaves_no_process(tmp_path: Path) -> None:
    spare = SpareControllers([SIMPLE_SWITCH], parse_topo("linear,2"))
    spare.prepare(tmp_path / "replay-1")
    assert spare.take(tmp_path / "replay-2") is None, "a spare belongs to the folder it was prepared for"
    got = spare.take(tmp_path / "replay-1")
    assert got is not None and len(got) == 1
    c = got[0]
    assert c.alive() and port_listening(c.port)
    assert c.log_path == tmp_path / "replay-1" / "controller.log"
    assert spare.take(tmp_path / "replay-1") is None, "taken already"
    spare.prepare(tmp_path / "replay-2")   # the next one starts while "replay-1" would run
    nxt = spare._procs[0]
    spare.close()
    c.stop()
    assert not c.alive() and not nxt.alive()
    for proc in (c, nxt):
        assert proc.proc is not None and not psutil.pid_exists(proc.proc.pid)


def test_only_controllers_on_ports_of_netsleuths_choice_are_prestarted() -> None:
    assert can_prestart([SIMPLE_SWITCH, "faucet:auto"])
    assert not can_prestart(["tcp:127.0.0.1:6653"])


def test_closing_a_spare_still_starting_kills_it(tmp_path: Path) -> None:
    spare = SpareControllers([SIMPLE_SWITCH], parse_topo("linear,2"))
    spare.prepare(tmp_path / "replay-1")
    procs = list(spare._procs)
    spare.close()   # at once: the controller is still importing os-ken
    assert spare.take(tmp_path / "replay-1") is None
    for c in procs:
        assert not c.alive()
        assert c.proc is None or not psutil.pid_exists(c.proc.pid)
