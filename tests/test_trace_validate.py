"""Reading a trace checks its content: each known way a corrupted trace used to crash a reader.

Every case edits one line of a real fuzz trace of the os-ken simple_switch
(``tools_fuzz_trace`` in conftest.py) and expects a TraceFormatError naming
that line, and, through the CLI, one ``error: ... -- fix: ...`` line and exit 2.
"""

from __future__ import annotations

import contextlib
import io
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from netsleuth.cli import main
from netsleuth.errors import TraceFormatError
from netsleuth.races.hbtrace import read_hb_json
from netsleuth.trace.io import MAX_JSON_DEPTH, read_trace

Edit = Callable[[dict[str, Any]], Any]


def _lines(trace: Path) -> list[str]:
    return trace.read_text(encoding="utf-8").splitlines()


def _edited(trace: Path, tmp_path: Path, pick: Callable[[dict], bool], edit: Edit) -> tuple[Path, int]:
    """A copy of ``trace`` with the first event ``pick`` accepts changed by ``edit``; (path, its line number)."""
    lines = _lines(trace)
    for i, line in enumerate(lines[1:], 1):
        ev = json.loads(line)
        if pick(ev):
            out = edit(ev)
            lines[i] = out if isinstance(out, str) else json.dumps(ev, sort_keys=True)
            path = tmp_path / "edited.jsonl"
            path.write_text("\n".join(lines) + "\n", encoding="utf-8")
            return path, i + 1
    raise AssertionError("the recorded trace has no such event")


def _kind(kind: str, mtype: str | None = None) -> Callable[[dict], bool]:
    return lambda ev: ev["kind"] == kind and (mtype is None or ev["msg"]["type"] == mtype)


def _flow_mod(ev: dict) -> dict:
    return ev["msg"]["body"]["OFPFlowMod"]


CASES: list[tuple[str, Callable[[dict], bool], Edit, str]] = [
    ("empty body", _kind("of_to_switch", "FLOW_MOD"), lambda ev: ev["msg"].update(body={}), "FLOW_MOD"),
    ("match of the wrong shape", _kind("of_to_switch", "FLOW_MOD"),
     lambda ev: _flow_mod(ev).update(match=[1, 2]), "FLOW_MOD"),
    ("match field out of range", _kind("of_to_switch", "FLOW_MOD"),
     lambda ev: _flow_mod(ev)["match"]["OFPMatch"].update(dl_vlan=70000), "FLOW_MOD"),
    ("action of the wrong shape", _kind("of_to_switch", "FLOW_MOD"),
     lambda ev: _flow_mod(ev).update(actions=[{"OFPActionOutput": "port 1"}]), "FLOW_MOD"),
    ("PACKET_IN data a number", _kind("of_to_controller", "PACKET_IN"),  # bytes(n) would be n zero bytes
     lambda ev: ev["msg"]["body"]["OFPPacketIn"].update(data=2**32), "PACKET_IN"),
    ("non-integer xid", _kind("of_to_switch"), lambda ev: ev["msg"].update(xid="7"), "xid"),
    ("unknown message type", _kind("of_to_switch"), lambda ev: ev["msg"].update(type="WARP"), "'WARP'"),
    ("type and body disagree", _kind("of_to_switch", "FLOW_MOD"),
     lambda ev: ev["msg"].update(type="PACKET_OUT"), "PACKET_OUT"),
    ("unknown OpenFlow version", _kind("of_to_switch"), lambda ev: ev["msg"].update(version=3), "version 3"),
    ("1.0 body claimed as 1.3", _kind("of_to_switch", "FLOW_MOD"), lambda ev: ev["msg"].update(version=4),
     "FLOW_MOD"),
    ("message in the wrong direction", _kind("of_to_controller", "PACKET_IN"),
     lambda ev: ev.update(kind="of_to_switch"), "PACKET_IN"),
    ("packet hlen a list", lambda ev: ev["kind"] == "packet" and ev["packet"].get("l3", {}).get("hlen") is not None,
     lambda ev: ev["packet"]["l3"].update(hlen=[]), "packet"),
    ("packet MAC malformed", _kind("traffic"), lambda ev: ev["packet"].update(eth_src="00:00:zz"), "packet"),
    ("fingerprint of the wrong type", _kind("packet"), lambda ev: ev.update(fp={"IPv4": 1}), "'fp'"),
    ("fingerprint a scalar", _kind("of_to_switch"), lambda ev: ev.update(fp=5), "'fp'"),
    ("unknown switch", _kind("host_migration"), lambda ev: ev.update(new_switch="s99"), "'s99'"),
    ("line break in a name", _kind("host_migration"), lambda ev: ev.update(new_switch="s1\nerror: forged"),
     "s1\\nerror"),
    ("unknown host", _kind("traffic"), lambda ev: ev.update(host="h99"), "'h99'"),
    ("unknown link", _kind("link_failure"), lambda ev: ev.update(port1=9), "link"),
    ("unknown dpid", _kind("of_to_switch"), lambda ev: ev.update(dpid=99), "dpid 99"),
    ("port beyond OpenFlow 1.0", _kind("packet"), lambda ev: ev.update(port=70000), "70000"),
    ("time far out of range", _kind("packet"), lambda ev: ev.update(t=1e300), "1e+300"),
    ("negative time", _kind("packet"), lambda ev: ev.update(t=-1.0), "-1.0"),
    ("time going back", _kind("host_migration"), lambda ev: ev.update(t=0.0), "goes back"),
    ("seq repeated", _kind("host_migration"), lambda ev: ev.update(seq=0), "seq 0"),
    ("NaN", _kind("packet"), lambda ev: json.dumps(ev, sort_keys=True).replace(f'"t": {ev["t"]}', '"t": NaN'),
     "NaN"),
    ("deep nesting", _kind("packet"),
     lambda ev: json.dumps(ev, sort_keys=True).replace('"fp": [', '"fp": ' + "[" * 100000 + "]" * 99999 + ", ["),
     f"deeper than {MAX_JSON_DEPTH}"),
    ("unpaired surrogate", _kind("traffic"),
     lambda ev: json.dumps(ev, sort_keys=True).replace(f'"id": "{ev["id"]}"', '"id": "i\\ud800"'), "surrogate"),
]


@pytest.mark.parametrize("name, pick, edit, words", CASES, ids=[c[0] for c in CASES])
@pytest.mark.real
def test_bad_content_is_one_error_naming_the_line(tools_fuzz_trace: Path, tmp_path: Path, name: str,
                                                   pick: Callable[[dict], bool], edit: Edit, words: str) -> None:
    path, lineno = _edited(tools_fuzz_trace, tmp_path, pick, edit)
    with pytest.raises(TraceFormatError) as err:
        read_trace(path)
    assert f"{path} line {lineno}: " in err.value.problem, err.value.problem
    assert words in err.value.problem, err.value.problem
    assert err.value.fix
    assert err.value.one_line().isprintable(), "an error must stay one line"


@pytest.mark.real
def test_cli_prints_one_line_and_exits_2(tools_fuzz_trace: Path, tmp_path: Path) -> None:
    path, lineno = _edited(tools_fuzz_trace, tmp_path, _kind("host_migration"),
                           lambda ev: ev.update(new_switch="s99"))
    for argv in (["invariants", str(path)], ["pcap", str(path), "--out", str(tmp_path / "x.pcap")],
                 ["races", str(path)], ["diff", str(tools_fuzz_trace), str(path)]):
        err = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            assert main(argv) == 2, argv
        assert err.getvalue().count("\n") == 1
        assert err.getvalue().startswith(f"error: {path} line {lineno}: new switch") or "'s99'" in err.getvalue()
        assert " -- fix: " in err.getvalue()


@pytest.mark.real
def test_the_recorded_trace_itself_reads(tools_fuzz_trace: Path) -> None:
    trace = read_trace(tools_fuzz_trace)
    assert len(trace.events) == len(_lines(tools_fuzz_trace)) - 1


def _repeat_with(trace: Path, tmp_path: Path, pick: Callable[[dict], bool], member: str,
                 bad: Callable[[dict], Any]) -> tuple[Path, int]:
    """A copy of ``trace`` whose first ``pick`` event is written again right after itself, as the
    recorder writes lines (compact, sorted keys), with its ``member`` given twice: first the
    recorded value, then a bad one, which JSON readers take (the last of equal keys wins)."""
    lines = _lines(trace)
    for i, line in enumerate(lines[1:], 1):
        ev = json.loads(line)
        if pick(ev):
            good = json.dumps(ev[member], sort_keys=True, separators=(",", ":"))
            worse = json.loads(good)
            bad(worse)
            again = dict(ev, seq=ev["seq"], t=ev["t"])
            text = json.dumps(again, sort_keys=True, separators=(",", ":"))
            head = f'"{member}":{good}'
            assert head in text
            twice = text.replace(head, f'{head},"{member}":' + json.dumps(worse, sort_keys=True,
                                                                        separators=(",", ":")), 1)
            # the repeated line takes the next line's place in the numbering: same seq and t as the
            # line it replaces, so only the member differs from a line that reads
            nxt = json.loads(lines[i + 1])
            twice = twice.replace(f',"seq":{ev["seq"]},"t":{ev["t"]!r}}}',
                                  f',"seq":{nxt["seq"]},"t":{nxt["t"]!r}}}')
            lines[i + 1] = twice
            path = tmp_path / "twice.jsonl"
            path.write_text("\n".join(lines) + "\n", encoding="utf-8")
            return path, i + 2
    raise AssertionError("the recorded trace has no such event")


@pytest.mark.parametrize("pick, member, bad, words", [
    (_kind("of_to_switch", "FLOW_MOD"), "msg",
     lambda m: m["body"]["OFPFlowMod"]["match"]["OFPMatch"].update(dl_vlan=70000), "FLOW_MOD"),
    (lambda ev: ev["kind"] == "packet" and ev["packet"].get("l3", {}).get("hlen") is not None, "packet",
     lambda p: p["l3"].update(hlen=[]), "packet"),
])
@pytest.mark.real
def test_a_checked_line_repeated_with_a_second_bad_member_is_still_checked(
        tools_fuzz_trace: Path, tmp_path: Path, pick: Callable[[dict], bool], member: str,
        bad: Callable[[dict], Any], words: str) -> None:
    """Messages and packets already checked are recognised by the text of their line; a line that
    starts like a checked one but carries the member twice (the second, bad, value is the one read)
    must not pass for it."""
    read_trace(tools_fuzz_trace)  # every good line checked and remembered
    path, lineno = _repeat_with(tools_fuzz_trace, tmp_path, pick, member, bad)
    with pytest.raises(TraceFormatError) as err:
        read_trace(path)
    assert f"{path} line {lineno}: " in err.value.problem and words in err.value.problem, err.value.problem


def test_missing_trace_names_the_commands_that_write_one(tmp_path: Path) -> None:
    with pytest.raises(TraceFormatError) as err:
        read_trace(tmp_path / "nope.jsonl")
    assert "netsleuth fuzz --trace" not in err.value.fix and "OUT/trace.jsonl" in err.value.fix


# ------------------------------------------------------------- SDNRacer hb.json
_HB_LINE = ('{"eid": 1, "type": "HbMessageSend", "mid_in": 1, "mid_out": [2], "msg_type": "OFPT_HELLO", '
            '"dpid": 1, "msg": "AQAACAAAAAE="}')


@pytest.mark.parametrize("data, words", [
    (_HB_LINE.encode() + b"\n" + b'{"eid": 2, "type": "Hb\xff"}\n', "not valid UTF-8"),
    (b"[1, 2]\n", "must be a JSON object"),
    (_HB_LINE.replace('"eid": 1', '"eid": [1]').encode() + b"\n", "'eid'"),
    (_HB_LINE.replace('"mid_out": [2]', '"mid_out": 2').encode() + b"\n", "'mid_out'"),
    (_HB_LINE.replace('"AQAACAAAAAE="', '"not base64!"').encode() + b"\n", "base64"),
    (_HB_LINE.replace('"mid_in": 1', '"mid_in": ' + "[" * 50000 + "]" * 50000).encode() + b"\n", "deeper"),
    (b'{"eid": 3, "type": "HbMessageHandle", "operations": ["{\\"type\\": '
     b'\\"TraceSwitchFlowTableWrite\\", \\"t\\": \\"1.0\\", \\"flow_mod\\": \\"AQ4=\\"}"]}\n', "FLOW_MOD"),
    (b'{"eid": 3, "type": "HbMessageHandle", "operations": [7]}\n', "operation"),
])
def test_hb_json_reader_rejects_bad_lines_in_one_line(tmp_path: Path, data: bytes, words: str) -> None:
    path = tmp_path / "bad.hb.json"
    path.write_bytes(data)
    with pytest.raises(TraceFormatError) as err:
        read_hb_json(path)
    assert f"{path} line " in err.value.problem and words in err.value.problem, err.value.problem
    out = io.StringIO()
    with contextlib.redirect_stderr(out), contextlib.redirect_stdout(io.StringIO()):
        assert main(["races", str(path)]) == 2
    assert out.getvalue().count("\n") == 1 and "hb.json" in out.getvalue() and "trace.jsonl" in out.getvalue()
