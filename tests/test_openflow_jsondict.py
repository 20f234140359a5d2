"""netsleuth's from_jsondict and to_jsondict against os-ken's own: the same message, JSON or error.

The inputs are the messages of a real fuzz trace of the os-ken simple_switch
(``tools_fuzz_trace`` in conftest.py), as recorded and with one field of each
retyped, dropped, renamed or out of range by a seeded mutator: reading a trace
rebuilds them all, so any input a corrupted trace can carry must go the way
os-ken's generic decoding goes.
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
import random
from pathlib import Path
from typing import Any

import pytest
from json_paths import json_paths
from os_ken.ofproto import ofproto_v1_0_parser as parser10

from netsleuth.openflow import json_view
from netsleuth.openflow.codec import encode, msg_from_json
from netsleuth.openflow.jsondict import from_jsondict, to_jsondict

pytestmark = pytest.mark.real  # the fixture trace is recorded against os-ken's simple_switch

_VALUES: list[Any] = [None, True, 0, -1, 2**16, 2**32, 2**64, 0.5, "", "AAAA", "not base64!", [], [1], {},
                      {"a": 1}, {"1": "AA=="}, {"OFPActionOutput": {"port": 1}}, {"OFPNope": {}}]


def _mutants(msg: dict[str, Any], rng: random.Random, n: int) -> list[dict[str, Any]]:
    """``n`` copies of ``msg`` with one place inside its body changed."""
    places = [p for p in json_paths(msg["body"]) if len(p) >= 2]
    if not places:  # a body without fields (FEATURES_REQUEST): nothing to change
        return []
    out = []
    for _ in range(n):
        m = copy.deepcopy(msg)
        path = rng.choice(places)
        parent = m["body"]
        for key in path[:-1]:
            parent = parent[key]
        how = rng.randrange(3)
        if how == 0:
            parent[path[-1]] = copy.deepcopy(rng.choice(_VALUES))
        elif how == 1 and isinstance(parent, dict):
            del parent[path[-1]]
        elif isinstance(parent, dict):
            parent[rng.choice(["type", "len", "id", "datapath", "extra"])] = parent.pop(path[-1])
        out.append(m)
    return out


def _outcome(msg: dict[str, Any]) -> tuple[Any, ...]:
    """What rebuilding ``msg`` gives: its wire bytes and its os-ken description, or the error's type."""
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            rebuilt = msg_from_json(copy.deepcopy(msg))
            return "ok", encode(rebuilt), str(rebuilt.to_jsondict())
    except Exception as exc:  # noqa: BLE001 - which error, not whether, is compared
        return "error", type(exc).__name__


def _osken_from_jsondict(cls: Any, attrs: Any, **extra: Any) -> Any:
    return cls.from_jsondict(attrs, **extra)


def test_rebuilding_matches_osken_on_recorded_and_mutated_messages(tools_fuzz_trace: Path, monkeypatch) -> None:
    rng = random.Random(7)
    seen: dict[str, dict[str, Any]] = {}
    for line in tools_fuzz_trace.read_text(encoding="utf-8").splitlines()[1:]:
        ev = json.loads(line)
        if ev["kind"] in ("of_to_switch", "of_to_controller"):
            seen.setdefault(json.dumps(ev["msg"]["body"], sort_keys=True), ev["msg"])
    cases = [m for msg in seen.values() for m in [msg, *_mutants(msg, rng, 6)]]
    ours = [_outcome(m) for m in cases]
    monkeypatch.setattr(json_view, "from_jsondict", _osken_from_jsondict)
    theirs = [_outcome(m) for m in cases]
    assert len({m["type"] for m in seen.values()}) >= 5, "the trace should hold most kinds of message"
    assert sum(o[0] == "ok" for o in ours) > len(seen) and sum(o[0] == "error" for o in ours) > len(seen)
    differ = [(m, a, b) for m, a, b in zip(cases, ours, theirs, strict=True) if a != b]
    assert not differ, differ[:3]


def test_describing_matches_osken_on_recorded_and_mutated_messages(tools_fuzz_trace: Path) -> None:
    """Every message a trace rebuilds, also from mutated JSON (odd field types, missing fields), is
    described as os-ken describes it, down to the key order of the JSON text."""
    rng = random.Random(11)
    messages = []
    for line in tools_fuzz_trace.read_text(encoding="utf-8").splitlines()[1:]:
        ev = json.loads(line)
        if ev["kind"] in ("of_to_switch", "of_to_controller"):
            for m in [ev["msg"], *_mutants(ev["msg"], rng, 2)]:
                with contextlib.suppress(Exception), contextlib.redirect_stdout(io.StringIO()):
                    messages.append(msg_from_json(m))
    assert len({type(m) for m in messages}) >= 5, "the trace should hold most kinds of message"
    for msg in messages:
        assert json.dumps(to_jsondict(msg), default=repr) == json.dumps(msg.to_jsondict(), default=repr)


def test_described_reserved_names_lists_and_odd_values_match_osken() -> None:
    """A field named like a builtin loses os-ken's trailing underscore, text and bytes become base64,
    mappings get text keys, values that cannot describe themselves stay as they are."""
    stats = parser10.OFPFlowStats()
    stats.type_, stats.names, stats.ports, stats.blob, stats.odd = 1, ["a", b"b"], {1: b"x"}, b"\xff", object()
    stats.match = parser10.OFPMatch(in_port=1)
    stats.actions = [parser10.OFPActionOutput(2)]
    assert str(to_jsondict(stats)) == str(stats.to_jsondict())
    fields = list(to_jsondict(stats)["OFPFlowStats"])
    assert fields == sorted(fields) and "type" in fields and "type_" not in fields and "odd" in fields


def test_reserved_names_and_integer_keys_are_restored_as_osken_does() -> None:
    """A 1.0 FEATURES_REPLY names its ports by number (JSON keys are text) and a stats request has a
    field named like a Python builtin (``type``): both come back as os-ken's own reader gives them."""
    reply = {"ports": {"1": {"OFPPhyPort": {"port_no": 1, "hw_addr": "02:00:00:00:00:01", "name": "czE=",
                                            "config": 0, "state": 0, "curr": 0, "advertised": 0,
                                            "supported": 0, "peer": 0}}},
             "datapath_id": 1, "n_buffers": 256, "n_tables": 1, "capabilities": 0, "actions": 0}
    ours = from_jsondict(parser10.OFPSwitchFeatures, copy.deepcopy(reply), datapath=None)
    theirs = parser10.OFPSwitchFeatures.from_jsondict(copy.deepcopy(reply), datapath=None)
    assert list(ours.ports) == [1] and ours.to_jsondict() == theirs.to_jsondict()
    # os-ken writes a stats request's "type" but its constructor takes none: "type" becomes "type_"
    # on the way in, and both readers refuse it the same way.
    vendor = {"type": 0xFFFF, "flags": 0, "vendor": 0x2320, "specific_data": "AAE="}
    for read in (lambda: from_jsondict(parser10.OFPVendorStatsRequest, dict(vendor), datapath=None),
                 lambda: parser10.OFPVendorStatsRequest.from_jsondict(dict(vendor), datapath=None)):
        with pytest.raises(TypeError, match="type_"), contextlib.redirect_stdout(io.StringIO()):
            read()
