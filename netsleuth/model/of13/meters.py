"""OpenFlow 1.3 meters: meter_mod semantics and token-bucket bands over the model's clock.

A meter measures the rate of the packets of the flows that use it and, per
spec 5.7, applies the band with the highest rate below the measured rate:
OFPMBT_DROP drops the packet, OFPMBT_DSCP_REMARK raises its drop
precedence.  Measurement is one token bucket per band (rate in kb/s or
packets/s, depth ``burst_size`` with OFPMF_BURST, else one second of
rate), refilled from the injected ``now`` -- never the wall clock -- so a
replay meters the same packets the same way.

meter_mod errors: OFPMMFC_INVALID_METER (id 0 or above OFPM_MAX; the
reserved SLOWPATH/CONTROLLER/ALL ids), METER_EXISTS, UNKNOWN_METER (modify
of a missing id; deleting one is not an error), BAD_FLAGS (both or
neither of KBPS/PKTPS), BAD_RATE (rate 0), BAD_BAND (unknown band type),
BAD_BAND_VALUE (a DSCP remark with prec_level 0), BAD_BURST (a burst size
without OFPMF_BURST).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from os_ken.ofproto import ofproto_v1_3 as ofp

from netsleuth.model.of13.errors import OFError


def _mmf(code: int, problem: str, fix: str) -> OFError:
    return OFError(ofp.OFPET_METER_MOD_FAILED, code, problem, fix)


@dataclass(frozen=True, slots=True)
class Band:
    type: int            # OFPMBT_DROP or OFPMBT_DSCP_REMARK
    rate: int
    burst_size: int = 0
    prec_level: int = 0


@dataclass
class BandState:
    tokens: float
    packet_count: int = 0
    byte_count: int = 0


@dataclass
class MeterEntry:
    meter_id: int
    flags: int
    bands: tuple[Band, ...]
    installed_at: float = 0.0
    last: float = 0.0
    packet_count: int = 0
    byte_count: int = 0
    flow_count: int = 0
    state: list[BandState] = field(default_factory=list)

    def depth(self, band: Band) -> float:
        cap = band.burst_size if self.flags & ofp.OFPMF_BURST and band.burst_size else band.rate
        return float(cap) * (1000.0 if self.flags & ofp.OFPMF_KBPS else 1.0)   # bits or packets

    def reset(self, now: float) -> None:
        self.state = [BandState(self.depth(b)) for b in self.bands]
        self.last = now


@dataclass(frozen=True, slots=True)
class Verdict:
    """What a meter does to one packet: pass, drop, or raise DSCP drop precedence by ``remark``."""

    drop: bool = False
    remark: int = 0


PASS = Verdict()


class MeterTable:
    """Meters by id."""

    def __init__(self) -> None:
        self.meters: dict[int, MeterEntry] = {}

    def exists(self, meter_id: int) -> bool:
        return meter_id in self.meters

    def _validate(self, meter_id: int, flags: int, bands: tuple[Band, ...]) -> None:
        if not 1 <= meter_id <= ofp.OFPM_MAX:
            raise _mmf(ofp.OFPMMFC_INVALID_METER, f"meter id {meter_id:#x}", "use a meter id 1..0xffff0000")
        unit = flags & (ofp.OFPMF_KBPS | ofp.OFPMF_PKTPS)
        if unit not in (ofp.OFPMF_KBPS, ofp.OFPMF_PKTPS) or flags & ~(ofp.OFPMF_KBPS | ofp.OFPMF_PKTPS
                                                                        | ofp.OFPMF_BURST | ofp.OFPMF_STATS):
            raise _mmf(ofp.OFPMMFC_BAD_FLAGS, f"meter flags {flags:#x}", "set exactly one of OFPMF_KBPS and OFPMF_PKTPS")
        for b in bands:
            if b.type not in (ofp.OFPMBT_DROP, ofp.OFPMBT_DSCP_REMARK):
                raise _mmf(ofp.OFPMMFC_BAD_BAND, f"band type {b.type}", "use OFPMBT_DROP or OFPMBT_DSCP_REMARK")
            if b.rate <= 0:
                raise _mmf(ofp.OFPMMFC_BAD_RATE, f"band rate {b.rate}", "give every band a rate > 0")
            if b.burst_size and not flags & ofp.OFPMF_BURST:
                raise _mmf(ofp.OFPMMFC_BAD_BURST, "a burst size without OFPMF_BURST",
                           "set OFPMF_BURST or leave burst_size 0")
            if b.type == ofp.OFPMBT_DSCP_REMARK and not 1 <= b.prec_level <= 3:
                raise _mmf(ofp.OFPMMFC_BAD_BAND_VALUE, f"DSCP remark prec_level {b.prec_level}",
                           "use a prec_level of 1..3")

    def add(self, meter_id: int, flags: int, bands: tuple[Band, ...], *, now: float = 0.0) -> MeterEntry:
        if meter_id in self.meters:
            raise _mmf(ofp.OFPMMFC_METER_EXISTS, f"meter {meter_id} exists", "use OFPMC_MODIFY or another id")
        self._validate(meter_id, flags, bands)
        entry = MeterEntry(meter_id, flags, tuple(bands), now)
        entry.reset(now)
        self.meters[meter_id] = entry
        return entry

    def modify(self, meter_id: int, flags: int, bands: tuple[Band, ...], *, now: float = 0.0) -> MeterEntry:
        if meter_id not in self.meters:
            raise _mmf(ofp.OFPMMFC_UNKNOWN_METER, f"meter {meter_id} does not exist", "add it first (OFPMC_ADD)")
        self._validate(meter_id, flags, bands)
        old = self.meters[meter_id]
        entry = MeterEntry(meter_id, flags, tuple(bands), old.installed_at, flow_count=old.flow_count)
        entry.reset(now)
        self.meters[meter_id] = entry
        return entry

    def delete(self, meter_id: int) -> list[int]:
        """Delete one meter or all (OFPM_ALL); the ids removed (their flows go too)."""
        if meter_id == ofp.OFPM_ALL:
            ids = sorted(self.meters)
            self.meters.clear()
            return ids
        if meter_id not in self.meters:
            return []   # like a group delete: nothing to do is not an error (Open vSwitch agrees)
        del self.meters[meter_id]
        return [meter_id]

    def apply(self, meter_id: int, nbytes: int, now: float) -> Verdict:
        """Meter one packet of ``nbytes`` at time ``now``."""
        m = self.meters.get(meter_id)
        if m is None:
            return Verdict(drop=True)
        elapsed = max(0.0, now - m.last)
        m.last = now
        m.packet_count += 1
        m.byte_count += nbytes
        cost = nbytes * 8.0 if m.flags & ofp.OFPMF_KBPS else 1.0
        exceeded: list[int] = []
        for i, (b, st) in enumerate(zip(m.bands, m.state)):
            rate = b.rate * (1000.0 if m.flags & ofp.OFPMF_KBPS else 1.0)
            st.tokens = min(m.depth(b), st.tokens + elapsed * rate)
            if st.tokens >= cost:
                st.tokens -= cost
            else:
                exceeded.append(i)
        if not exceeded:
            return PASS
        i = max(exceeded, key=lambda j: (m.bands[j].rate, -j))
        band, st = m.bands[i], m.state[i]
        st.packet_count += 1
        st.byte_count += nbytes
        if band.type == ofp.OFPMBT_DROP:
            return Verdict(drop=True)
        return Verdict(remark=band.prec_level)


def remark_dscp(dscp: int, prec_level: int) -> int:
    """Raise the drop precedence of an AF codepoint (RFC 2597: class xxx, precedence yy0) by ``prec_level``.

    Other codepoints are left alone: only the AF classes have drop precedence.
    """
    cls, prec, low = dscp >> 3, (dscp >> 1) & 3, dscp & 1
    if not 1 <= cls <= 4 or low or prec == 0:
        return dscp
    return (cls << 3) | (min(3, prec + prec_level) << 1)


__all__ = ["Band", "MeterEntry", "MeterTable", "PASS", "Verdict", "remark_dscp"]
