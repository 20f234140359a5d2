"""The traceback reader behind the `exceptions` invariant, on logs real controllers wrote.

tests/data/tracebacks/ holds whole controller logs as netsleuth recorded them: os-ken running the
seeded-KeyError copy of simple_switch (tests/data/osken_apps/keyerror_on_move.py) under fuzz, POX
gar's l2_multi crashing while it prints a switch's ERROR (chained tracebacks, all in POX's own
code), os-ken's hub dying on an OpenFlow 1.0 ERROR (a prefixed "hub: uncaught exception:" line),
and Faucet's exception log (Faucet started with its Prometheus port taken).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from netsleuth.invariants.exceptions import TracebackParser, finding, is_framework, short_path
from netsleuth.invariants.violation_text import violation_lines

DATA = Path(__file__).parent / "data" / "tracebacks"


def parse(text: str, chunk: int | None = None) -> list:
    p = TracebackParser()
    out = []
    step = chunk or len(text) or 1
    for i in range(0, len(text), step):
        out += p.feed(text[i:i + step])
    return out + p.close()


def test_osken_handler_keyerror_names_the_apps_frame_not_the_framework() -> None:
    [tb] = parse((DATA / "osken_keyerror.log").read_text())
    assert (tb.type, tb.message) == ("KeyError", "(3, 3)")
    assert tb.frames[0].short == "os_ken/base/app_manager.py"      # the dispatcher, outermost
    assert tb.app_frame is not None and tb.app_frame.func == "forget_port"
    assert tb.app_frame.short == "keyerror_on_move.py"
    assert tb.app_frame.source.startswith("for mac in self.macs_on.pop(")
    assert (tb.handler, tb.event) == ("_port_status_handler", "EventOFPPortStatus")
    f = finding("c0", tb, after="after input i3: host h1 moves from s3:3 to s2:4")
    assert f.message == "controller c0 raised KeyError: (3, 3) in forget_port (keyerror_on_move.py:121)"
    lines = violation_lines(f)
    assert lines[0].startswith("exceptions: controller c0 raised KeyError")
    assert any("handler: _port_status_handler handling EventOFPPortStatus" in ln for ln in lines)
    assert any(ln.strip().startswith("after input i3: host h1 moves") for ln in lines)
    assert all(len(ln) < 160 for ln in lines)


def test_pox_chained_tracebacks_in_the_framework() -> None:
    tbs = parse((DATA / "pox_error_hexdump.log").read_text())
    assert len(tbs) == 6  # each crash is two chained tracebacks in the log: one exception each
    for tb in tbs:
        assert tb.type == "TypeError" and tb.message.startswith("ord() expected string of length 1")
        assert tb.chain == ("TypeError: ord() expected string of length 1, but int found",)
        assert tb.context.startswith("ERROR:openflow.of_01:Exception reading connection")
        assert tb.app_frame is None   # POX's own machinery crashed: no component's frame
        assert tb.blamed is not None and tb.blamed.short == "pox/lib/util.py"
    assert len({tb.identity() for tb in tbs}) == 1   # one defect, six times
    f = finding("c0", tbs[0])
    assert "in the framework" in f.details["frame_text"]


def test_faucet_exception_log() -> None:
    [tb] = parse((DATA / "faucet_exception.log").read_text())
    assert (tb.type, tb.message) == ("OSError", "[Errno 98] Address already in use")
    assert tb.context.endswith("faucet.exception ERROR    Unhandled exception, killing RYU")
    # eventlet and os-ken's hub are the framework; Faucet's own code is the app
    assert tb.app_frame is not None and (tb.app_frame.short, tb.app_frame.func) == ("faucet/prom_client.py", "start")
    assert tb.frames[-1].short == "eventlet/convenience.py"


def test_osken_hub_traceback_on_a_prefixed_line() -> None:
    tbs = parse((DATA / "osken_hub_error_msg.log").read_text())
    assert len(tbs) == 3   # one per switch
    for tb in tbs:
        assert tb.type == "AttributeError" and "OFPET_EXPERIMENTER" in tb.message
        assert tb.context.startswith("Error in the datapath 000000000000000")
        assert tb.app_frame is None and tb.blamed is not None
        assert (tb.blamed.short, tb.blamed.func) == ("os_ken/controller/ofp_handler.py", "error_msg_handler")


@pytest.mark.parametrize("name", ["osken_keyerror.log", "pox_error_hexdump.log", "faucet_exception.log",
                                  "osken_hub_error_msg.log"])
@pytest.mark.parametrize("chunk", [1, 7, 64, 4096])
def test_incremental_reading_finds_the_same_tracebacks(name: str, chunk: int) -> None:
    text = (DATA / name).read_text()
    assert parse(text, chunk) == parse(text)


def test_a_traceback_is_held_until_the_log_settles_or_goes_on() -> None:
    text = (DATA / "osken_keyerror.log").read_text()
    end = text.index("KeyError: (3, 3)") + len("KeyError: (3, 3)\n")
    p = TracebackParser()
    assert p.feed(text[:end - 12]) == []          # mid-traceback: nothing yet
    assert p.feed(text[end - 12:end]) == []       # complete, but a chained one could follow
    [tb] = p.settle()                              # the log has nothing more for now
    assert tb.type == "KeyError"
    assert p.feed(text[end:]) == [] and p.close() == []


def test_the_same_defect_with_another_message_has_the_same_identity() -> None:
    text = (DATA / "osken_keyerror.log").read_text()
    [a] = parse(text)
    [b] = parse(text.replace("KeyError: (3, 3)", "KeyError: (1, 1)"))
    assert a.message != b.message and a.identity() == b.identity()
    assert a.identity() == ("KeyError", "keyerror_on_move.py", "forget_port", "121")


@pytest.mark.parametrize(("path", "framework"), [
    ("/venv/lib/python3.11/site-packages/os_ken/base/app_manager.py", True),
    ("/venv/lib/python3.11/site-packages/os_ken/lib/hub.py", True),
    ("/venv/lib/python3.11/site-packages/eventlet/greenthread.py", True),
    ("/usr/lib/python3.11/threading.py", True),
    ("<frozen importlib._bootstrap>", True),
    ("/venv/lib/python3.11/site-packages/os_ken/app/simple_switch.py", False),
    ("/venv/lib/python3.11/site-packages/faucet/valve.py", False),
    ("/home/me/pox/pox/openflow/of_01.py", True),
    ("/home/me/pox/pox/lib/revent/revent.py", True),
    ("/home/me/pox/pox/core.py", True),
    ("/home/me/pox/pox/forwarding/l2_multi.py", False),
    ("/home/me/pox/ext/my_component.py", False),
    ("/home/me/apps/my_switch.py", False),
])
def test_framework_or_app(path: str, framework: bool) -> None:
    assert is_framework(path) is framework


def test_short_paths_do_not_depend_on_where_the_code_is() -> None:
    assert short_path("/a/site-packages/faucet/valve.py") == "faucet/valve.py"
    assert short_path("/x/pox/pox/forwarding/l2_multi.py") == "pox/forwarding/l2_multi.py"
    assert short_path("/work/apps/my_switch.py") == "my_switch.py"
