"""Why a ping failed, in words: which frame went missing and what the network did with it.

A ping is up to four frames: src's ARP request for dst, dst's ARP reply, src's echo request and
dst's echo reply.  The first one that never reached its host is the one to explain, from what
the World saw happen to it (world/fates.py): a controller that is down, a switch that punted it
to the controller and never got an answer, a rule that dropped it (named), a link that lost it;
and an OpenFlow ERROR a switch answered the controller with meanwhile, which is often why.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from netsleuth.model.packet import Arp
from netsleuth.world.fates import Fate, Sent


@dataclass(frozen=True, slots=True)
class PingWhy:
    """A failed ping's explanation: ``cause`` is a short key (punted-unanswered,
    dropped, lost, switch-error, controller-down, not-sent), ``text`` the sentence."""

    cause: str
    text: str
    frame: str = ""   # which of the ping's frames went missing: ARP request, ARP reply, echo request, echo reply

    def to_json(self) -> dict:
        return {"cause": self.cause, "why": self.text, "frame": self.frame}


def _is_arp(s: Sent, op: int, spa: int, tpa: int) -> bool:
    a = s.packet.l3
    return isinstance(a, Arp) and a.op == op and a.spa == spa and a.tpa == tpa


def _is_echo(s: Sent, src_ip: int, dst_ip: int, reply: bool) -> bool:
    ip, icmp = s.packet.l3, s.packet.l4
    return getattr(ip, "src", None) == src_ip and getattr(ip, "dst", None) == dst_ip and \
        getattr(icmp, "type", None) == (0 if reply else 8)


def explain(world: Any, src: str, dst: str, since: float) -> PingWhy:
    """Why ``src``'s ping of ``dst``, started at ``since`` (the World's clock), got no answer."""
    down = _controller_down(world, src)
    if down:
        return PingWhy("controller-down", down)
    a, b = world.topology.host(src), world.topology.host(dst)
    frames = world.fates.since(since) if world.fates is not None else []
    steps = (
        ("ARP request", src, dst, lambda s: s.host == src and _is_arp(s, 1, a.ip, b.ip)),
        ("ARP reply", dst, src, lambda s: s.host == dst and _is_arp(s, 2, b.ip, a.ip)),
        ("echo request", src, dst, lambda s: s.host == src and _is_echo(s, a.ip, b.ip, False)),
        ("echo reply", dst, src, lambda s: s.host == dst and _is_echo(s, b.ip, a.ip, True)),
    )
    for i, (what, frm, to, pick) in enumerate(steps):
        sent = [s for s in frames if pick(s)]
        arrived = [s for s in sent if any(f.kind == "delivered" and f.node == to for f in s.fates)]
        if arrived:
            continue
        if not sent:
            if i < 2 and not any(steps[0][3](s) for s in frames):
                continue   # src knew dst's MAC already: no ARP this time
            return PingWhy("not-sent", f"{frm} sent no {what}", what)
        return _frame_why(world, what, frm, to, sent[-1], arp=i < 2)
    return PingWhy("late", "every frame arrived, the answer too late for the ping's timeout")


def _frame_why(world: Any, what: str, frm: str, to: str, s: Sent, *, arp: bool) -> PingWhy:
    why = _fate_why(frm, s)
    head = f"{'ARP never answered: ' if arp else ''}{frm}'s {what} never reached {to}: {why.text}"
    refused = _refusals(world, s.t)
    if refused:   # a refused message is often why the controller's answer never came
        return PingWhy("switch-error", f"{head}; meanwhile {refused}", what)
    return PingWhy(why.cause, head, what)


def _fate_why(frm: str, s: Sent) -> PingWhy:
    """What the network did with one frame and its copies."""
    drops = [f for f in s.fates if f.kind == "dropped"]
    punts = [f for f in s.fates if f.kind == "punted"]
    lost = [f for f in s.fates if f.kind == "lost"]
    if drops:
        return PingWhy("dropped", f"dropped at {drops[0].node} by {drops[0].why}")
    last = _last(s.fates)
    if punts and last is not None and last.kind == "punted":
        where = ", ".join(dict.fromkeys(f.node for f in punts))
        return PingWhy("punted-unanswered", f"punted to the controller at {where} (PACKET_IN), which never sent it on")
    if lost:
        return PingWhy("lost", f"lost at {lost[0].node}: {lost[0].why}")
    if not s.fates:
        return PingWhy("lost", f"it never reached a switch ({frm}'s link is down)")
    where = ", ".join(dict.fromkeys(f.node for f in s.fates if f.kind == "forwarded"))
    return PingWhy("misdelivered", f"forwarded by {where or 'no switch'}, never to its host")


def _last(fates: list[Fate]) -> Fate | None:
    return fates[-1] if fates else None


def _refusals(world: Any, since: float) -> str:
    """The OpenFlow ERRORs switches answered since ``since``, in words (empty when none)."""
    rejections = getattr(world, "rejections", None) or []
    seen = [r for r in rejections if r.t >= since]
    if not seen:
        return ""
    from netsleuth.invariants.openflow_errors import error_names, message_type

    r = seen[0]
    tname, cname = error_names(r.version, r.err_type, r.err_code)
    more = f" (and {len(seen) - 1} more)" if len(seen) > 1 else ""
    return f"{r.switch} refused the controller's {message_type(r.msg)} with {tname}/{cname}{more}"


def _controller_down(world: Any, host: str) -> str:
    alive = world.controllers_alive
    if alive and not any(alive.values()):
        return "the controller is down (" + ", ".join(sorted(n for n, up in alive.items() if not up)) + " not running)"
    switch, _ = world.host_at[host]
    dpid = world.switches[switch].dpid
    if not any(c.up and c.features_replied and c.dpid == dpid for c in world.connections.values()):
        return f"{switch}, {host}'s switch, is not connected to a controller"
    return ""
