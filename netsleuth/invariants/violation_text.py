"""Violations as an operator reads them: header classes in words, one short line each.

The header-space checks find exact sets of headers, and on broad rules (a
hub, a proactive app's wildcards, Faucet's VLAN tables) the exact set is a
wildcard expression of a thousand characters.  An operator speaks of the
same set as ``TCP h1 -> h2:22`` or ``all traffic except LLDP``.  This
module turns a header set (either layout, 1.0 or 1.3) into those words and
prints every kind of finding the same way, wherever it is shown: ``run``,
``fuzz``, ``invariants``, ``minimize``'s report, ``viz``, campaigns and the
pytest report all call :func:`violation_lines`.  The exact header space
stays in the finding's details (``result.json``, the trace's violation
event) and is printed only when asked for (``--verbose``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from netsleuth.model.addr import int_to_ip, int_to_mac

if TYPE_CHECKING:   # the header-space engine (os-ken's codecs with it) is imported by the first set described:
    # the findings of routing daemons' kernel tables carry none, and their command-line process does not pay for it
    from netsleuth.invariants.headerspace.space import FieldLayout, HeaderSet
    from netsleuth.invariants.headerspace.terms import Term

WIDTH = 158          # every printed line stays under 160 characters
_SUMMARY = 90        # characters a header-class summary may take in a headline
ARROW = "→"

# The role each field plays, per layout: (1.0 name, 1.3 names).
_ROLES10 = {"src_mac": ("dl_src",), "dst_mac": ("dl_dst",), "eth_type": ("dl_type",), "proto": ("nw_proto",),
            "src_ip": ("nw_src",), "dst_ip": ("nw_dst",), "sport": ("tp_src",), "dport": ("tp_dst",),
            "vlan": ("dl_vlan",), "pcp": ("dl_vlan_pcp",), "tos": ("nw_tos",)}
_ROLES13 = {"src_mac": ("eth_src",), "dst_mac": ("eth_dst",), "eth_type": ("eth_type",), "proto": ("ip_proto",),
            "src_ip": ("ipv4_src", "arp_spa"), "dst_ip": ("ipv4_dst", "arp_tpa"),
            "sport": ("tcp_src", "udp_src", "sctp_src"), "dport": ("tcp_dst", "udp_dst", "sctp_dst"),
            "icmp_type": ("icmpv4_type",), "arp_op": ("arp_op",), "vlan": ("vlan_vid",), "pcp": ("vlan_pcp",),
            "tos": ("ip_dscp", "ip_ecn")}
_ETH = {0x0800: "IPv4", 0x0806: "ARP", 0x88CC: "LLDP", 0x86DD: "IPv6", 0x8100: "802.1Q", 0x88A8: "802.1ad",
        0x8847: "MPLS", 0x8848: "MPLS", 0x9000: "loopback (0x9000)"}
_IP = {1: "ICMP", 6: "TCP", 17: "UDP", 132: "SCTP", 58: "ICMPv6"}
_ICMP = {8: "echo request", 0: "echo reply", 3: "unreachable", 11: "time exceeded"}
_ARP = {1: "request", 2: "reply"}
_VID_PRESENT = 0x1000


class Hosts:
    """Host names by MAC and by IPv4 address, to name the ends of a header class.

    ``said``: the words already found for these very names (shared by every ``Hosts`` of the
    same hosts): a check names the same few host pairs and rules in finding after finding,
    and check after check on a network whose hosts stay the same."""

    def __init__(self, hosts: Iterable[Any] = ()) -> None:
        self.by_mac: dict[int, str] = {}
        self.by_ip: dict[int, str] = {}
        for h in hosts:
            self.by_mac[h.mac] = h.name
            if getattr(h, "ip", None) is not None:
                self.by_ip[h.ip] = h.name
        key = (tuple(self.by_mac.items()), tuple(self.by_ip.items()))
        said = _SAID.get(key)
        if said is None or len(said) >= _SAID_MAX:
            if len(_SAID) >= _SAID_HOSTS:
                _SAID.clear()
            said = _SAID[key] = {}
        self.said: dict[Any, str] = said


# words said per set of host names (Hosts.said): how many sets, and how many words each, kept
_SAID: dict[Any, dict[Any, str]] = {}
_SAID_HOSTS = 8
_SAID_MAX = 1 << 14


def _fields(hs: HeaderSet, v: int, m: int) -> dict[str, tuple[int, int, int]]:
    """``{field: (value, field mask, full mask)}`` of the fields ``(v, m)`` looks at, in the
    layout's order (``SHIFTS``)."""
    plan = _PLANS.get(type(hs))
    if plan is None:
        from netsleuth.invariants.headerspace.space import FieldLayout

        plan = _PLANS[type(hs)] = (FieldLayout.of(hs.SHIFTS, hs.FULLS), (1 << hs.WIDTH) - 1)
    layout, whole = plan
    out = {}
    if layout is None or m == whole:   # fields that overlap, or a whole header: each field in turn
        for name, sh in hs.SHIFTS.items():
            full = hs.FULLS[name]
            fm = (m >> sh) & full
            if fm:
                out[name] = ((v >> sh) & full, fm, full)
        return out
    for _k, name, sh, full in sorted(layout.fields_in(m)):
        out[name] = ((v >> sh) & full, (m >> sh) & full, full)
    return out


# a layout's FieldLayout (None: its fields overlap) and a whole header's mask, by HeaderSet class
_PLANS: dict[type, tuple[FieldLayout | None, int]] = {}


def _role(fields: dict[str, tuple[int, int, int]], roles: Mapping[str, tuple[str, ...]], role: str,
          exact: bool = True) -> tuple[str, int, int, int] | None:
    for name in roles.get(role, ()):
        f = fields.get(name)
        if f is not None and (not exact or f[1] == f[2]):
            return (name, *f)
    return None


def _end(fields: dict, roles: Mapping[str, tuple[str, ...]], side: str, hosts: Hosts) -> str | None:
    """One end of a class: a host name when its MAC or address is one, else the MAC or address."""
    mac = _role(fields, roles, f"{side}_mac")
    ip = _role(fields, roles, f"{side}_ip", exact=False)
    if mac is not None:
        name = hosts.by_mac.get(mac[1])
        if name or ip is None:
            return name or int_to_mac(mac[1])
        # a MAC no host has (a router's, a load balancer's) says less than the address behind it
    if ip is not None:
        _n, val, fm, full = ip
        if fm == full:
            return hosts.by_ip.get(val) or int_to_ip(val)
        plen = fm.bit_count()
        return f"{int_to_ip(val)}/{plen}"
    return None


def _protocol(fields: dict, roles: Mapping[str, tuple[str, ...]], ten: bool) -> tuple[str | None, bool]:
    """(protocol words, whether the destination port is a transport port)."""
    et = _role(fields, roles, "eth_type")
    if et is None:
        return None, False
    etype = et[1]
    if etype == 0x0800:
        proto = _role(fields, roles, "proto")
        if proto is None:
            return "IPv4", False
        name = _IP.get(proto[1], f"IP protocol {proto[1]}")
        if proto[1] == 1:
            t = _role(fields, roles, "sport" if ten else "icmp_type")
            if t is not None and t[1] in _ICMP:
                name += f" {_ICMP[t[1]]}"
            return name, False
        return name, proto[1] in (6, 17, 132)
    if etype == 0x0806:
        op = _role(fields, roles, "proto" if ten else "arp_op")
        return ("ARP " + _ARP[op[1]] if op is not None and op[1] in _ARP else "ARP"), False
    return _ETH.get(etype, f"ethertype {etype:#06x}"), False


_USED = ("src_mac", "dst_mac", "eth_type", "proto", "src_ip", "dst_ip", "dport", "sport", "icmp_type", "arp_op")


def _extras(hs: HeaderSet, fields: dict, roles: Mapping[str, tuple[str, ...]], ten: bool, ported: bool,
            v: int, m: int) -> list[str]:
    """What the words above leave out: VLANs, source ports, any other field, in the layout's own text."""
    used = {n for r in _USED for n in roles.get(r, ())}
    if not ported:  # ICMP type/code or ARP opcode already spoken for (1.0 packs them into tp_*/nw_proto)
        used -= set(roles["dport"]) - ({"tp_dst"} if ten else set())
    out = []
    for name, (val, fm, full) in fields.items():
        if name in used and not (name in roles["sport"] and ported):
            continue
        if name in roles["vlan"] or name == "vlan1_vid":
            words = _vlan_words(name, val, fm, full, ten)
            if words is not None:
                if words:
                    out.append(words)
                continue
        if val == 0 and fm == full:
            continue  # a field the protocol does not have, or a default an exact match fixes
        sh = hs.SHIFTS[name]
        out.append(hs.wildcard_text(v & (full << sh), m & (fm << sh)))
    return out


def _vlan_words(name: str, val: int, fm: int, full: int, ten: bool) -> str | None:
    """A VLAN field in words ("" for untagged, what hosts send anyway), None when it takes the raw text."""
    inner = "inner " if name == "vlan1_vid" else ""
    if ten:
        return "" if val == 0xFFFF else (f"vlan {val}" if fm == full else None)
    if not fm & _VID_PRESENT:
        return None
    if not val & _VID_PRESENT:
        return ""
    if fm & 0xFFF == 0xFFF:
        return f"{inner}vlan {val & 0xFFF}"
    return "double-tagged" if inner else "tagged" if not fm & 0xFFF else None


def phrase(hs: HeaderSet, v: int, m: int, hosts: Hosts, bare: bool = False) -> str:
    """One wildcard of ``hs``'s layout in words: ``TCP h1 → h2:22``, ``ARP from h2``, ``all traffic``.
    The words depend on the layout, the wildcard and the host names alone (``Hosts.said``)."""
    key = (type(hs), v, m, bare)
    text = hosts.said.get(key)
    if text is None:
        text = hosts.said[key] = _phrase(hs, v, m, hosts, bare)
    return text


def _phrase(hs: HeaderSet, v: int, m: int, hosts: Hosts, bare: bool) -> str:
    ten = hs.DST == "dl_dst"
    roles = _ROLES10 if ten else _ROLES13
    fields = _fields(hs, v, m)
    proto, ported = _protocol(fields, roles, ten)
    src, dst = _end(fields, roles, "src", hosts), _end(fields, roles, "dst", hosts)
    dport = _role(fields, roles, "dport") if ported else None
    port = f":{dport[1]}" if dport is not None else ""
    extras = _extras(hs, fields, roles, ten, ported, v, m)
    if ported:
        sport = _role(fields, roles, "sport")
        if sport is not None and sport[1]:
            extras = [f"source port {sport[1]}"] + [e for e in extras if not e.startswith(sport[0])]
        elif sport is not None:
            extras = [e for e in extras if not e.startswith(sport[0])]
    what = proto or ("" if bare else ("traffic" if src or dst or port or extras else "all traffic"))
    if src and dst:
        text = f"{what} {src} {ARROW} {dst}{port}"
    elif src:
        text = f"{what} from {src}" + (f" to port {port[1:]}" if port else "")
    elif dst:
        text = f"{what} to {dst}{port}"
    elif port:
        text = f"{what} to port {port[1:]}"
    else:
        text = what
    if extras:
        text += (" " if text else "") + ("with " if text else "") + ", ".join(extras)
    return text.strip() or ("" if bare else "all traffic")


def _term_phrase(hs: HeaderSet, t: Term, hosts: Hosts, max_diffs: int) -> str:
    v, m, ds = t
    text = phrase(hs, v, m, hosts)
    if ds:
        # A difference lies inside its term: say only what it adds to it.
        shown = [p for p in dict.fromkeys(phrase(hs, dv, dm & ~m, hosts, bare=True) for dv, dm in ds) if p]
        if shown:
            text += " except " + elide(shown, max_diffs)
    return text


def elide(items: Sequence[str], limit: int, sep: str = ", ") -> str:
    """``a, b, c and 4 more``."""
    if len(items) <= limit:
        return sep.join(items)
    return sep.join(items[:limit]) + f" and {len(items) - limit} more"


def summarize(hs: HeaderSet, hosts: Hosts, width: int = _SUMMARY) -> str:
    """A header set as an operator says it, at most about ``width`` characters (the words of
    its terms: ``Hosts.said``)."""
    key = (type(hs), hs.terms, width)
    text = hosts.said.get(key)
    if text is None:
        text = hosts.said[key] = _summarize(hs, hosts, width)
    return text


def _summarize(hs: HeaderSet, hosts: Hosts, width: int) -> str:
    terms = hs.display_terms()
    if not terms:
        return "no headers"
    for max_diffs in (3, 2, 1):
        texts = _merge_ends(list(dict.fromkeys(_term_phrase(hs, t, hosts, max_diffs) for t in terms)))
        for limit in (3, 2, 1):
            text = "; ".join(texts) if len(texts) <= limit else \
                "; ".join(texts[:limit]) + f"; and {len(texts) - limit} more classes"
            if len(text) <= width:
                return text
    return clip(text, width)


def _merge_ends(texts: list[str]) -> list[str]:
    """``TCP h1 → h2:22`` and ``TCP h1 → h3:22`` said once: ``TCP h1 → h2:22, h3:22``."""
    heads: dict[str, list[str]] = {}
    for t in texts:
        head, sep, tail = t.rpartition(f" {ARROW} ")
        if not sep or " " in tail:
            heads.setdefault(t, [])
        else:
            heads.setdefault(head, []).append(tail)
    merged = [(h, tuple(tails)) for h, tails in heads.items()]
    # and senders with the same destinations said once: ``traffic h37, h38 → h4``
    by_tails: dict[tuple[str, tuple[str, ...]], list[str]] = {}
    for h, tails in merged:
        what, _, src = h.rpartition(" ")
        if not tails or not what:
            by_tails.setdefault((h, ()), [])
        else:
            by_tails.setdefault((what, tails), []).append(src)
    out = []
    for (what, tails), srcs in by_tails.items():
        out.append(f"{what} {elide(srcs, 4)} {ARROW} {elide(list(tails), 4)}" if tails else what)
    return out


def clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[:width - 1] + "…"


def example_header(hs: HeaderSet, senders: Sequence[Any], others: Sequence[Any]) -> int | None:
    """One header of ``hs`` an operator recognises: a ping, a TCP SYN or an ARP between real hosts
    (the sender's MAC and address, to another host) when the set holds one, else any.

    A finding's set names a few host pairs, and most (sender, destination) tried hold none of
    it: the last shape (any frame between them) holds every other, so when no term's base meets
    it none of their shapes can, and the pair is passed over without cutting ``hs`` to each."""
    for src in senders:
        for dst in [*others, None]:
            if dst is src:
                continue
            shapes = host_traffic_wildcards(hs, src, dst)
            ev, em = shapes[-1]
            if all((v ^ ev) & m & em for v, m, _ds in hs.terms):
                continue
            for w in shapes:
                h = hs.intersect_wc(w).witness()   # (the first term that holds a header: no prune needed)
                if h is not None:
                    return h
    return hs.witness()


def host_traffic_wildcards(hs: HeaderSet, src: Any, dst: Any) -> tuple[tuple[int, int], ...]:
    """Wildcards of the traffic ``src`` really sends (to ``dst``, or to anyone when None), most
    familiar first: a ping, a TCP SYN, ARP, any IPv4, any frame (which holds all the others); in
    ``hs``'s layout.  Worked out once per (layout, addresses): a check asks for the same pairs
    for finding after finding."""
    d = (dst.mac, dst.ip) if dst else None
    return _traffic_wildcards(hs.DST == "dl_dst", src.mac, src.ip, d)


@lru_cache(maxsize=1 << 12)
def _traffic_wildcards(ten: bool, src_mac: int, src_ip: int, dst: tuple[int, int] | None
                       ) -> tuple[tuple[int, int], ...]:
    if ten:
        from netsleuth.invariants.headerspace.space import field_wildcard as wc
        eth = {"dl_src": src_mac, "dl_vlan": 0xFFFF} | ({"dl_dst": dst[0]} if dst else {})
        ip = {"nw_src": src_ip} | ({"nw_dst": dst[1]} if dst else {})
        shapes = [dict(eth, dl_type=0x0800, nw_proto=1, tp_src=8, **ip), dict(eth, dl_type=0x0800, nw_proto=6, **ip),
                  dict(eth, dl_type=0x0806, nw_src=src_ip), dict(eth, dl_type=0x0800), dict(eth)]
    else:
        from netsleuth.model.of13.headerbits import wc13 as wc
        eth = {"eth_src": src_mac, "vlan_vid": 0} | ({"eth_dst": dst[0]} if dst else {})
        ip = {"ipv4_src": src_ip} | ({"ipv4_dst": dst[1]} if dst else {})
        shapes = [dict(eth, eth_type=0x0800, ip_proto=1, icmpv4_type=8, **ip),
                  dict(eth, eth_type=0x0800, ip_proto=6, **ip), dict(eth, eth_type=0x0806, arp_spa=src_ip),
                  dict(eth, eth_type=0x0800), dict(eth)]
    return tuple(wc(**s) for s in shapes)



def example_text(hs: HeaderSet, header: int, hosts: Hosts, fields: Mapping[str, object] | None = None) -> str:
    """A concrete header in words, with its addresses: what ``trace-packet`` would follow.
    ``fields``: ``hs.header_fields(header)``, when the caller has it."""
    full = (1 << hs.WIDTH) - 1
    words = phrase(hs, header, full, hosts)
    f = hs.header_fields(header) if fields is None else fields
    src = f.get("dl_src", f.get("eth_src"))
    dst = f.get("dl_dst", f.get("eth_dst"))
    ips = ""
    ip_s, ip_d = f.get("nw_src", f.get("ipv4_src", f.get("arp_spa"))), f.get("nw_dst", f.get("ipv4_dst",
                                                                                           f.get("arp_tpa")))
    if ip_s and ip_d and ip_s != "0.0.0.0":
        ips = f", {ip_s} {ARROW} {ip_d}"
    return f"{words} ({src} {ARROW} {dst}{ips})"


# --------------------------------------------------------------------------- printing
def _get(v: Any, name: str, default: Any = None) -> Any:
    return v.get(name, default) if isinstance(v, Mapping) else getattr(v, name, default)


def violation_lines(v: Any, *, verbose: bool = False, trace: str | None = None,
                    traffic: Sequence[tuple[str, str, str | None]] = (), indent: str = "  ",
                    width: int = WIDTH) -> list[str]:
    """The lines that show one violation (a Finding, a trace Violation or its JSON in result.json):
    ``invariant: headline``, then its details on demand (where it enters, an example packet and
    the ``trace-packet`` command to follow one like it), and the exact header space with
    ``verbose``.  ``traffic`` lists a trace's traffic inputs as (id, host, dst) so the
    command names a recorded packet; ``trace`` is the trace's path.  Every line is at most
    ``width`` characters: long lists end in "and N more"."""
    d = _get(v, "details", {}) or {}
    lines = [f"{_get(v, 'invariant')}: {_get(v, 'message')}"]
    first = d.get("first_seen_text")
    if first:  # fuzz --check-every-flowmod: the message after which it first appeared
        lines.append(f"{indent}first seen {first}")
    origin = d.get("rule_from_text")
    if origin:  # the message that installed the entry it blames, when that was an earlier one
        lines.append(f"{indent}rule installed by {origin}")
    for key in ("entered", "cycle", "rule", "pairs", "frame", "handler", "chain", "request", "why"):
        val = d.get(f"{key}_text")
        if val:
            lines.append(f"{indent}{key}: {val}")
    if d.get("after_text"):  # what preceded an observed finding (a traceback)
        lines.append(f"{indent}{d['after_text']}")
    if (d.get("count") or 1) > 1:
        lines.append(f"{indent}{d['count']} times in this run")
    ex = d.get("example_text")
    if ex:
        lines.append(f"{indent}example: {ex}")
        cmd = _follow_command(d, trace, traffic)
        if cmd:
            lines.append(f"{indent}{cmd}")
    if verbose:
        lines.extend(_verbose_lines(d, indent))
    return [part for line in lines for part in _fold(line, width, indent * 3)]


def _follow_command(d: Mapping[str, Any], trace: str | None, traffic: Sequence[tuple[str, str, str | None]]) -> str:
    src, dst = d.get("example_src"), d.get("example_dst")
    if not trace or not src:
        return ""
    best = next((i for i, h, to in traffic if h == src and to == dst), None) or \
        next((i for i, h, _to in traffic if h == src), None)
    if best is None:
        return f"no recorded packet of {src} for netsleuth trace-packet to follow (--pingall records some)"
    return f"follow one: netsleuth trace-packet {trace} {best}"


def _verbose_lines(d: Mapping[str, Any], indent: str) -> list[str]:
    """The exact header space, wrapped (``--verbose``): whole, never elided."""
    out = []
    spaces = d.get("header_spaces") or ([{"at": d.get("ingress"), "header_space": d["header_space"]}]
                                        if d.get("header_space") else [])
    for s in spaces:
        out.extend(wrap(f"header space at {s.get('at')}: {s.get('header_space')}", indent))
    path = d.get("path")
    if path:
        out.extend(wrap("path: " + " -> ".join(path), indent))
    for r in d.get("rules", []) or []:
        out.extend(wrap(f"rule: {r}", indent))
    for w in d.get("why", []) or []:
        out.extend(wrap(f"why: {w}", indent))
    return out


def _fold(line: str, width: int, cont: str) -> list[str]:
    """One line cut at spaces into pieces of at most ``width`` characters (nothing is dropped:
    a Faucet finding's long sentence keeps every word)."""
    out = []
    while len(line) > width:
        cut = line.rfind(" ", len(cont) + 20, width)
        if cut < 0:
            cut = width
        out.append(line[:cut].rstrip())
        line = cont + line[cut:].lstrip()
    out.append(line)
    return out


def wrap(text: str, indent: str, width: int = WIDTH) -> list[str]:
    """``text`` cut into lines of at most ``width`` characters (continuations indented twice)."""
    out, first = [], True
    while text:
        pre = indent if first else indent * 2
        room = width - len(pre)
        if len(text) <= room:
            out.append(pre + text)
            break
        cut = text.rfind(",", 0, room)
        cut = room if cut < room // 2 else cut + 1
        out.append(pre + text[:cut])
        text, first = text[cut:], False
    return out


def violations_text(violations: Iterable[Any], **kw: Any) -> str:
    """Several violations, one block each (for reports that take one string)."""
    return "\n".join(line for v in violations for line in violation_lines(v, **kw))
