"""DEFINED on daemons, the sans-I/O parts: configs, BGP stream reassembly, the relay's holding rules."""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
import tempfile
from pathlib import Path

import pytest

from netsleuth.defined.daemons import config, control
from netsleuth.defined.daemons.relaycore import RelayCore
from netsleuth.defined.daemons.spec import DaemonSpecError, med_net
from netsleuth.defined.daemons.wire import BgpStream, describe, tcp_of
from netsleuth.model.addr import ip_to_int
from netsleuth.model.packet import TCP, IPv4, Packet

ACK, PSH, SYN, FIN, RST = 0x10, 0x08, 0x02, 0x01, 0x04


def bgp(kind: int, body: bytes = b"") -> bytes:
    return b"\xff" * 16 + struct.pack("!HB", 19 + len(body), kind) + body


def update(prefix_len: int = 24, prefix: bytes = b"\xcb\x00\x71", med: int = 10) -> bytes:
    attrs = (b"\x40\x01\x01\x00"                                  # ORIGIN IGP
             + b"\x40\x02\x06\x02\x01" + struct.pack("!I", 65001)  # AS_PATH (4-byte ASNs)
             + b"\x40\x03\x04" + bytes([10, 255, 0, 1])            # NEXT_HOP
             + b"\x80\x04\x04" + struct.pack("!I", med))           # MED
    return bgp(2, struct.pack("!HH", 0, len(attrs)) + attrs + bytes([prefix_len]) + prefix)


EOR = bgp(2, b"\x00\x00\x00\x00")
KEEPALIVE = bgp(4)


def frame(src: str, dst: str, sport: int, dport: int, seq: int, payload: bytes = b"", flags: int = ACK | PSH,
          ack: int = 1) -> bytes:
    return Packet(0x1, 0x2, 0x0800, l3=IPv4(ip_to_int(src), ip_to_int(dst), 6),
                  l4=TCP(sport, dport, seq=seq, ack=ack, flags=flags), payload=payload).to_bytes()


def core() -> RelayCore:
    # "a" faces r3, "b" faces s1: a frame read on one end goes out the other, to the router named there
    return RelayCore({"a": ("b", "s1"), "b": ("a", "r3")}, {"10.0.1.1": "r3", "10.0.1.2": "s1"})


def syn(c: RelayCore) -> None:
    assert c.on_frame("b", frame("10.0.1.2", "10.0.1.1", 40000, 179, 99, flags=SYN))


def test_tcp_of_reads_the_flow_and_payload():
    seg = tcp_of(frame("10.0.1.2", "10.0.1.1", 40000, 179, 7, KEEPALIVE))
    assert seg is not None and seg.flow == ("10.0.1.2", 40000, "10.0.1.1", 179)
    assert seg.payload == KEEPALIVE and seg.bgp and seg.end == 7 + 19
    assert tcp_of(b"\x00" * 60) is None


def test_stream_reassembles_messages_split_across_segments_and_ignores_retransmissions():
    s = BgpStream()
    s.feed(tcp_of(frame("1.1.1.1", "2.2.2.2", 1, 179, 0, flags=SYN)))
    data = update() + KEEPALIVE
    first = s.feed(tcp_of(frame("1.1.1.1", "2.2.2.2", 1, 179, 1, data[:10])))
    assert first == [(-1, None)]           # a header begins here, its type not yet known
    assert s.feed(tcp_of(frame("1.1.1.1", "2.2.2.2", 1, 179, 1, data[:10]))) == []   # retransmission
    rest = s.feed(tcp_of(frame("1.1.1.1", "2.2.2.2", 1, 179, 11, data[10:])))
    assert rest == [(4, KEEPALIVE)]        # only the keepalive *starts* in the second segment
    assert s.take() == [update(), KEEPALIVE]


def test_describe_decodes_an_update_with_os_ken():
    d = describe(update(med=5))
    assert d == {"type": "UPDATE", "nlri": ["203.0.113.0/24"], "withdrawn": [], "as_path": [65001],
                 "next_hop": "10.255.0.1", "med": 5}
    assert describe(EOR) == {"type": "UPDATE", "eor": True}
    assert describe(KEEPALIVE) == {"type": "KEEPALIVE"}


def test_relay_holds_an_update_and_queues_its_flow_behind_it_until_released():
    c = core()
    syn(c)
    assert c.on_frame("b", frame("10.0.1.2", "10.0.1.1", 40000, 179, 100, KEEPALIVE)) == [("a", frame(
        "10.0.1.2", "10.0.1.1", 40000, 179, 100, KEEPALIVE))]
    held = frame("10.0.1.2", "10.0.1.1", 40000, 179, 119, update())
    assert c.on_frame("b", held) == []
    later = frame("10.0.1.2", "10.0.1.1", 40000, 179, 119 + len(update()), KEEPALIVE)
    assert c.on_frame("b", later) == []                     # FIFO behind the held UPDATE
    assert c.on_frame("b", held) == []                      # the retransmission is not queued twice
    assert c.on_frame("a", b"\x00" * 42) == [("b", b"\x00" * 42)]   # not TCP: straight through
    ev = c.take_events()
    assert [e["ev"] for e in ev] == ["held"] and ev[0]["unit"]["src"] == "s1" and ev[0]["unit"]["dst"] == "r3"
    assert c.release(1) == [("a", held), ("a", later)]
    end = 119 + len(update())
    c.on_frame("a", frame("10.0.1.1", "10.0.1.2", 179, 40000, 1, flags=ACK, ack=end - 1))
    assert [e["ev"] for e in c.take_events()] == ["released"]   # not yet covered
    c.on_frame("a", frame("10.0.1.1", "10.0.1.2", 179, 40000, 1, flags=ACK, ack=end))
    assert c.take_events() == [{"ev": "acked", "id": 1}]


def test_relay_passes_end_of_rib_and_everything_when_not_holding():
    c = core()
    syn(c)
    eor = frame("10.0.1.2", "10.0.1.1", 40000, 179, 100, EOR)
    assert c.on_frame("b", eor) == [("a", eor)]
    c.set_hold(False)
    up = frame("10.0.1.2", "10.0.1.1", 40000, 179, 100 + len(EOR), update())
    assert c.on_frame("b", up) == [("a", up)]
    assert c.take_events() == []


def test_release_stops_at_the_next_held_unit_of_the_flow():
    c = core()
    syn(c)
    u1 = frame("10.0.1.2", "10.0.1.1", 40000, 179, 100, update(med=1))
    u2 = frame("10.0.1.2", "10.0.1.1", 40000, 179, 100 + len(update()), update(med=2))
    assert c.on_frame("b", u1) == [] and c.on_frame("b", u2) == []
    assert c.release(1) == [("a", u1)]
    assert c.release(2) == [("a", u2)]
    assert c.release(2) == []


def test_a_connection_its_receiver_closes_lets_what_it_held_go_as_reset():
    """Of two connections one speaker pair opened at once, the daemons keep one and close the
    other; an UPDATE held on the closed one will never be read, so it is no longer pending."""
    c = core()
    syn(c)
    u1 = frame("10.0.1.2", "10.0.1.1", 40000, 179, 100, update(med=1))
    after = frame("10.0.1.2", "10.0.1.1", 40000, 179, 100 + len(update()), KEEPALIVE)
    assert c.on_frame("b", u1) == [] and c.on_frame("b", after) == []
    c.on_frame("b", frame("10.0.1.2", "10.0.1.1", 40001, 179, 499, flags=SYN))
    other = frame("10.0.1.2", "10.0.1.1", 40001, 179, 500, update(med=2))   # another connection: stays held
    assert c.on_frame("b", other) == []
    c.take_events()
    fin = frame("10.0.1.1", "10.0.1.2", 179, 40000, 1, flags=ACK | FIN)   # r3 closes the first connection
    assert c.on_frame("a", fin) == [("a", u1), ("a", after), ("b", fin)]
    assert c.take_events() == [{"ev": "reset", "id": 1}]
    assert c.release(1) == []
    assert c.release(2) == [("a", other)]
    c.on_frame("b", frame("10.0.1.2", "10.0.1.1", 40002, 179, 899, flags=SYN))
    rst = frame("10.0.1.2", "10.0.1.1", 40002, 179, 900, update(med=3))
    assert c.on_frame("b", rst) == []                                       # the sender aborts a third
    abort = frame("10.0.1.2", "10.0.1.1", 40002, 179, 900 + len(update()), flags=RST)
    assert c.on_frame("b", abort) == [("a", rst), ("a", abort)]
    assert [e for e in c.take_events() if e["ev"] == "reset"] == [{"ev": "reset", "id": 3}]


def test_configs_name_each_router_and_the_med_attributes():
    net = med_net()
    bird = config.configs(net, "bird")
    assert set(bird) == {"r3", "s1", "s2", "s3"}
    assert "igp_metric = 30" in bird["r3"]["bird.conf"] and "deterministic med off" in bird["r3"]["bird.conf"]
    assert "bgp_med = 5;" in bird["s2"]["bird.conf"] and "bgp_path.prepend(65002);" in bird["s3"]["bird.conf"]
    frr = config.configs(med_net(deterministic_med=True), "frr")
    assert " bgp deterministic-med" in frr["r3"]["bgpd.conf"]
    assert " set metric 20" in frr["s3"]["bgpd.conf"]
    assert config.frr_daemons(net, net.router("r3")) == ["zebra", "bgpd"]
    assert config.frr_daemons(net, net.router("s1")) == ["bgpd"]
    assert config.kernel_routes(net, net.router("r3"), "frr")[1][-1] == "30"


def test_spec_rejects_names_that_do_not_fit_an_interface():
    from netsleuth.defined.daemons.spec import DaemonNet, Router
    with pytest.raises(DaemonSpecError):
        DaemonNet("x", (Router("router-one", 1),), ())


def test_bird_reply_parser_reads_best_and_bgp_attributes():
    raw = [b"1007-203.0.113.0/24       unicast [s1 07:24:10.340] * (100/10) [AS65001i]",
           b" \tvia 10.0.1.2 on r3-s1", b" \tBGP.as_path: 65001", b" \tBGP.next_hop: 10.255.0.1",
           b" \tBGP.med: 10", b"1007-                     unicast [s3 07:24:10.154] (100/20) [AS65002i]",
           b" \tBGP.next_hop: 10.255.0.3", b"0000 "]
    routes = control.bird_routes(control._bird_lines(raw))
    assert routes == {"203.0.113.0/24": [
        {"best": True, "from": "s1", "via": "10.0.1.2", "as_path": [65001], "next_hop": "10.255.0.1", "med": 10},
        {"best": False, "from": "s3", "next_hop": "10.255.0.3"}]}


def test_a_kernel_table_read_twice_is_the_same_bytes_and_a_dump_ends_at_its_done_message():
    """Reads of an unchanged table are compared as bytes (no parse): two dumps of this namespace's
    table must be identical, and a chunk ends the dump only at NLMSG_DONE or an error."""
    from netsleuth.defined.daemons import kroutes

    table = kroutes.NetlinkTable("/proc/self/ns/net")
    try:
        rtm = struct.pack("=8BI", 2, 0, 0, 0, 0, 0, 0, 0, 0)
        first, second = table._dump(kroutes.RTM_GETROUTE, rtm), table._dump(kroutes.RTM_GETROUTE, rtm)
        assert first == second and table.routes() == table.routes() == kroutes.parse_routes(first, table.ifnames)
    finally:
        table.close()

    def msg(kind: int, body: bytes = b"") -> bytes:
        pad = b"\0" * (-len(body) % 4)
        return struct.pack("=IHHII", 16 + len(body), kind, 2, 1, 0) + body + pad

    route = msg(kroutes.RTM_NEWROUTE, bytes(13))
    assert not kroutes._ends_dump(route + route)
    assert kroutes._ends_dump(route + msg(kroutes.NLMSG_DONE, bytes(4)))
    assert kroutes._ends_dump(msg(kroutes.NLMSG_DONE, bytes(4)))
    assert kroutes._ends_dump(msg(kroutes.NLMSG_ERROR, bytes(20)))
    assert kroutes._ends_dump(b"")


@pytest.mark.real
@pytest.mark.parametrize("daemon", ["bird", "frr"])
def test_generated_configs_parse_in_the_real_daemons(daemon):
    with tempfile.TemporaryDirectory(prefix="netsleuth-cfg-") as d:
        tmp = Path(d)
        tmp.chmod(0o755)   # FRR reads its configuration as user frr
        _check_configs(tmp, daemon)


def _check_configs(tmp_path: Path, daemon: str) -> None:
    from netsleuth.defined.daemons.spec import ospf_net, rip_net
    from netsleuth.defined.topologies import parse_net
    for net in (med_net(), rip_net(), ospf_net(parse_net("ring,4"))):
        _check_net(tmp_path, daemon, net)


def _check_net(tmp_path: Path, daemon: str, net) -> None:  # noqa: ANN001
    for router, files in config.configs(net, daemon).items():
        for name, text in files.items():
            f = tmp_path / f"{router}-{name}"
            f.write_text(text)
            if daemon == "bird":
                if shutil.which("bird") is None:
                    pytest.fail("bird2 is not installed (make debs)")
                r = subprocess.run(["bird", "-p", "-c", str(f)], capture_output=True, text=True)
            else:
                dm = name.split(".")[0]
                p = subprocess.Popen([f"/usr/lib/frr/{dm}", "-C", "-f", str(f), "-u", "frr", "-g", "frr",
                                      "--log", "stdout"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                out, err = p.communicate(timeout=30)
                shutil.rmtree(f"/var/tmp/frr/{dm}.{p.pid}", ignore_errors=True)   # FRR's scratch directory
                r = subprocess.CompletedProcess(p.args, p.returncode, out, err)
            said = r.stdout + r.stderr
            # FRR's dry run exits 0 even when a line fails; it says so in its log
            bad = ("No such command", "can't open", "Unknown command", "% ")
            assert r.returncode == 0 and not any(b in said for b in bad), (router, name, said)


def _tcp_checksum_ok(f: bytes) -> bool:
    from netsleuth.defined.daemons.wire import _csum
    ihl = (f[14] & 0x0F) * 4
    total = struct.unpack_from("!H", f, 16)[0]
    tcp = f[14 + ihl: 14 + total]
    pseudo = f[26:34] + struct.pack("!BBH", 0, 6, len(tcp))
    return _csum(f[14: 14 + ihl]) == 0 and _csum(pseudo + tcp) == 0


def test_a_keepalive_sharing_a_segment_with_an_update_is_cut_off_and_passes():
    c = core()
    syn(c)
    both = frame("10.0.1.2", "10.0.1.1", 40000, 179, 100, KEEPALIVE + update())
    sent = c.on_frame("b", both)
    assert len(sent) == 1 and _tcp_checksum_ok(sent[0][1])
    ka = tcp_of(sent[0][1])
    assert ka.payload == KEEPALIVE and ka.seq == 100
    ev = c.take_events()
    assert len(ev) == 1 and ev[0]["unit"]["messages"][0]["nlri"] == ["203.0.113.0/24"]
    assert c.on_frame("b", both) == []     # the sender's retransmission of the whole segment is dropped
    (iface, upd), = c.release(1)
    assert _tcp_checksum_ok(upd) and tcp_of(upd).seq == 119 and tcp_of(upd).payload == update()


@pytest.mark.real
def test_a_missing_daemon_is_one_line_and_exit_2():
    import os
    import sys
    root = Path(__file__).resolve().parents[1]
    env = dict(os.environ, PATH="/nonexistent", PYTHONPATH=str(root))   # no bird, no ip on the PATH
    r = subprocess.run([sys.executable, "-m", "netsleuth.cli", "defined", "run", "--daemon", "bird",
                        "--scenario", "med"], capture_output=True, text=True, env=env, cwd=root, timeout=60)
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == [
        "error: bird is not installed -- fix: apt-get install bird2 (or make debs)"]


def _rip_frame(src: str, entries: list[tuple[str, int]]) -> bytes:
    from netsleuth.model.packet import UDP
    body = b"\x02\x02\x00\x00" + b"".join(
        struct.pack("!HH4s4s4sI", 2, 0, bytes(int(x) for x in p.split(".")), b"\xff\xff\xff\x00", b"\0" * 4, m)
        for p, m in entries)
    return Packet(0x1, 0x01005E000009, 0x0800, l3=IPv4(ip_to_int(src), ip_to_int("224.0.0.9"), 17),
                  l4=UDP(520, 520), payload=body).to_bytes()


def test_on_the_virtual_clock_every_rip_message_is_held_and_released_in_link_order():
    c = RelayCore({"a": ("b", "s1"), "b": ("a", "r3")}, {"10.0.1.1": "r3", "10.0.1.2": "s1"},
                  hold=False, hold_datagrams=True)
    f1, f2 = _rip_frame("10.0.1.2", [("192.0.2.0", 2)]), _rip_frame("10.0.1.2", [("192.0.2.0", 16)])
    assert c.on_frame("b", f1) == [] and c.on_frame("b", f2) == []
    ev = c.take_events()
    assert [e["unit"]["messages"] for e in ev] == [
        [{"type": "RIP", "command": "response", "version": 2, "entries": [["192.0.2.0/24", 2]]}],
        [{"type": "RIP", "command": "response", "version": 2, "entries": [["192.0.2.0/24", 16]]}]]
    assert ev[0]["unit"]["src"] == "s1" and ev[0]["unit"]["dst"] == "r3"
    assert c.release(1) == [("a", f1)] and c.release(2) == [("a", f2)]
    assert c.rip == {"s1>r3": 2}


def test_a_message_whose_session_closed_before_delivery_is_named_by_its_resent_copy():
    """A speaker's session that closes while the first group gathers (a busy machine) loses the UPDATE
    held on it; the speaker announces again on its new session. The identity (sender, receiver, number)
    names that new message, never the lost one: delivering the lost one would end the run."""
    from netsleuth.defined.daemons import explore
    from netsleuth.defined.daemons.net import LiveNet

    n = LiveNet(med_net(deterministic_med=True), "frr")
    ann = [{"type": "UPDATE", "nlri": ["203.0.113.0/24"], "next_hop": "10.255.0.1"}]
    n._apply({"ev": "held", "unit": {"id": 1, "src": "s1", "dst": "r3", "arrival": 0, "messages": ann}})
    n._apply({"ev": "held", "unit": {"id": 2, "src": "s2", "dst": "r3", "arrival": 1, "messages": ann}})
    n._apply({"ev": "reset", "id": 1})
    n._apply({"ev": "held", "unit": {"id": 3, "src": "s1", "dst": "r3", "arrival": 2, "messages": ann}})
    assert n.held[1].dropped and n.held[3].identity() == n.held[1].identity() == ("s1", "r3", 0)
    assert n.find(("s1", "r3", 0)) is n.held[3]
    assert [h.id for h in n.pending()] == [3, 2]
    picked = explore._by_identity(n, n.pending(), [("s2", "r3", 0), ("s1", "r3", 0)], quiet=0.0)
    assert [h.id for h in picked] == [2, 3]


@pytest.mark.real
def test_a_kernel_table_is_dumped_again_only_after_the_kernel_announces_a_route_change():
    from netsleuth.defined.daemons import kroutes

    holder = subprocess.Popen(["unshare", "--net", "--", "sleep", "30"])
    try:
        ns = f"/proc/{holder.pid}/ns/net"
        control.wait_for(lambda: os.readlink(ns) != os.readlink("/proc/self/ns/net"), 5.0, "the namespace",
                         step=0.002)

        def ip(*args: str) -> None:
            subprocess.run(["nsenter", f"--net={ns}", "--", "ip", *args], check=True, capture_output=True)

        ip("link", "set", "lo", "up")
        ip("link", "add", "d0", "type", "veth", "peer", "name", "d1")
        ip("addr", "add", "10.9.0.1/24", "dev", "d0")
        ip("link", "set", "d0", "up")
        ip("link", "set", "d1", "up")
        table = kroutes.NetlinkTable(ns)
        try:
            assert kroutes.with_news({"t": table}) == {"t"}              # never dumped: to be read
            first = table.routes()
            assert [r.prefix for r in first] == ["10.9.0.0/24"] and table.dumps == 1
            assert table.routes() is first and table.dumps == 1        # nothing changed: no second dump
            assert kroutes.with_news({"t": table}) == set()
            ip("route", "add", "192.0.2.0/24", "via", "10.9.0.2")
            assert kroutes.with_news({"t": table}) == {"t"}              # the kernel's news waits for a read
            assert "192.0.2.0/24" in [r.prefix for r in table.routes()] and table.dumps == 2
            ip("route", "del", "192.0.2.0/24")
            assert [r.prefix for r in table.routes()] == ["10.9.0.0/24"] and table.dumps == 3
            assert table.routes() == first and table.dumps == 3
        finally:
            table.close()
    finally:
        holder.kill()
        holder.wait()
