"""OpenFlow 1.3 instructions and the checks a flow_mod's instruction set must pass.

An entry's instructions run in the spec's order whatever order they came
in (meter, apply-actions, clear-actions, write-actions, write-metadata,
goto-table; spec 5.9), so ``Instructions`` stores them by kind.  Checks,
with the errors the spec names:

* goto-table must go forward and to an existing table -> OFPBIC_BAD_TABLE_ID
  (a pipeline can only move forward: spec 5.1);
* a meter that does not exist -> OFPMMFC_INVALID_METER (as Open vSwitch);
* each action's own validity (``actions.check_action_value``) and, walking
  the actions in execution order from what the match guarantees, their
  consistency with the packet: a set_field whose prerequisites are not
  guaranteed, pop_vlan without a tag, an MPLS action on a non-MPLS packet,
  an IP TTL action on a non-IP packet -> OFPBAC_MATCH_INCONSISTENT; a group
  that does not exist -> OFPBAC_BAD_OUT_GROUP.  "Guaranteed" is computed
  as Open vSwitch does: from the match's exact fields, updated by the
  actions before (push_vlan makes a tag certain, push_mpls makes the
  packet MPLS and its L3 fields unknown, ...).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from os_ken.ofproto import ofproto_v1_3 as ofp
from os_ken.ofproto import ofproto_v1_3_parser as parser

from netsleuth.model.of13.actions import (
    Action,
    DecMplsTtl,
    DecNwTtl,
    Group,
    Output,
    PopMpls,
    PopVlan,
    PushMpls,
    PushVlan,
    SetField,
    SetMplsTtl,
    SetNwTtl,
    action_from_ofp,
    action_to_ofp,
    check_action_value,
    check_output_port,
    render_action,
)
from netsleuth.model.of13.actionset import ActionSet
from netsleuth.model.of13.errors import OFError, bad_action, bad_instruction
from netsleuth.model.of13.fieldspec import BY_NAME, ETH_IP_TYPES, VID_PRESENT
from netsleuth.model.of13.headers import MPLS_TYPES
from netsleuth.model.of13.oxm import OxmMatch

FULL64 = (1 << 64) - 1


@dataclass(frozen=True, slots=True)
class Instructions:
    """One flow entry's instruction set (at most one instruction of each kind)."""

    meter: int | None = None
    apply: tuple[Action, ...] | None = None
    clear: bool = False
    write: tuple[Action, ...] | None = None
    metadata: tuple[int, int] | None = None     # (value, mask)
    goto: int | None = None

    @classmethod
    def actions(cls, *actions: Action) -> Instructions:
        """Apply-actions only: what a 1.0-style rule becomes."""
        return cls(apply=tuple(actions))

    def all_actions(self) -> list[Action]:
        return [*(self.apply or ()), *(self.write or ())]

    def next_action_set(self, aset: ActionSet) -> ActionSet:
        """The action set after this entry: clear-actions, then write-actions (spec 5.9)."""
        if self.clear:
            aset = aset.clear()
        if self.write:
            aset = aset.write(self.write)
        return aset

    def next_metadata(self, metadata: int) -> int:
        """The metadata after this entry's write-metadata (its masked bits replaced)."""
        if self.metadata is None:
            return metadata
        value, mask = self.metadata
        return (metadata & ~mask) | (value & mask)

    def outputs_to(self, port: int) -> bool:
        """For out_port filters: an output action to ``port`` in apply- or write-actions."""
        return any(type(a) is Output and a.port == port for a in self.all_actions())

    def uses_group(self, group_id: int) -> bool:
        return any(type(a) is Group and a.group_id == group_id for a in self.all_actions())

    def render(self) -> str:
        """ovs-ofctl ``actions=`` text (OpenFlow 1.3 instruction syntax)."""
        parts: list[str] = []
        if self.meter is not None:
            parts.append(f"meter:{self.meter}")
        if self.apply is not None:
            parts += [render_action(a) for a in self.apply]
        if self.clear:
            parts.append("clear_actions")
        if self.write is not None:
            parts.append("write_actions(" + ",".join(render_action(a) for a in self.write) + ")")
        if self.metadata is not None:
            parts.append(f"write_metadata:{self.metadata[0]:#x}/{self.metadata[1]:#x}")
        if self.goto is not None:
            parts.append(f"goto_table:{self.goto}")
        return ",".join(parts) or "drop"

    # -- os-ken ------------------------------------------------------------------

    def to_ofp(self) -> list[Any]:
        out: list[Any] = []
        if self.meter is not None:
            out.append(parser.OFPInstructionMeter(self.meter))
        if self.apply is not None:
            out.append(parser.OFPInstructionActions(ofp.OFPIT_APPLY_ACTIONS, [action_to_ofp(a) for a in self.apply]))
        if self.clear:
            out.append(parser.OFPInstructionActions(ofp.OFPIT_CLEAR_ACTIONS, []))
        if self.write is not None:
            out.append(parser.OFPInstructionActions(ofp.OFPIT_WRITE_ACTIONS, [action_to_ofp(a) for a in self.write]))
        if self.metadata is not None:
            out.append(parser.OFPInstructionWriteMetadata(*self.metadata))
        if self.goto is not None:
            out.append(parser.OFPInstructionGotoTable(self.goto))
        return out

    @classmethod
    def from_ofp(cls, insts: Iterable[Any]) -> Instructions:
        """From os-ken instruction objects; a kind given twice -> OFPBIC_UNSUP_INST."""
        kw: dict[str, Any] = {}

        def put(key: str, value: Any) -> None:
            if key in kw:
                raise bad_instruction(ofp.OFPBIC_UNSUP_INST, f"two {key} instructions in one flow entry",
                                      "give each instruction kind at most once (spec 5.9)")
            kw[key] = value

        for inst in insts:
            name = type(inst).__name__
            if name == "OFPInstructionGotoTable":
                put("goto", inst.table_id)
            elif name == "OFPInstructionWriteMetadata":
                put("metadata", (inst.metadata, inst.metadata_mask))
            elif name == "OFPInstructionMeter":
                put("meter", inst.meter_id)
            elif name == "OFPInstructionActions":
                acts = tuple(action_from_ofp(a) for a in inst.actions)
                if inst.type == ofp.OFPIT_APPLY_ACTIONS:
                    put("apply", acts)
                elif inst.type == ofp.OFPIT_WRITE_ACTIONS:
                    put("write", acts)
                elif inst.type == ofp.OFPIT_CLEAR_ACTIONS:
                    put("clear", True)
                else:
                    raise bad_instruction(ofp.OFPBIC_UNKNOWN_INST, f"instruction type {inst.type}",
                                          "use an OpenFlow 1.3 instruction")
            else:
                raise bad_instruction(ofp.OFPBIC_UNKNOWN_INST, f"instruction {name}", "use an OpenFlow 1.3 instruction")
        return cls(**kw)


# ---------------------------------------------------------------------------
# checks


@dataclass
class FlowContext:
    """What the match and the actions so far guarantee about every packet (OVS's reading)."""

    exact: dict[str, int] = field(default_factory=dict)
    tagged: bool = False

    @classmethod
    def of_match(cls, match: OxmMatch) -> FlowContext:
        exact = {n: v for n, v, m in match.entries if m == BY_NAME[n].full}
        vid = match.get("vlan_vid")
        return cls(exact, vid is not None and bool(vid[0] & vid[1] & VID_PRESENT))

    def copy(self) -> FlowContext:
        return FlowContext(dict(self.exact), self.tagged)

    def prereqs_ok(self, name: str) -> bool:
        for dep, allowed in BY_NAME[name].prereqs:
            if dep == "vlan_vid":
                if not self.tagged:
                    return False
                continue
            if dep not in self.exact or (allowed and self.exact[dep] not in allowed):
                return False
        return True


def _inconsistent(problem: str, fix: str) -> OFError:
    return bad_action(ofp.OFPBAC_MATCH_INCONSISTENT, problem, fix)


def check_actions(actions: Iterable[Action], ctx: FlowContext, *, group_exists: Callable[[int], bool],
                  packet_out: bool = False) -> None:
    """Validate actions in order against ``ctx`` (updated in place); OFError per the module docstring."""
    for a in actions:
        kind = type(a)
        if isinstance(a, Output) and packet_out:
            check_output_port(a.port, packet_out=True)
        else:
            check_action_value(a)
        if kind is Output:
            pass
        elif isinstance(a, Group):
            if not group_exists(a.group_id):
                raise bad_action(ofp.OFPBAC_BAD_OUT_GROUP, f"group {a.group_id} does not exist",
                                 "add the group (group_mod ADD) before a rule that uses it")
        elif kind is PushVlan:
            ctx.tagged = True
        elif kind is PopVlan:
            if not ctx.tagged:
                raise _inconsistent("pop_vlan on packets the match does not guarantee to be tagged",
                                    "match vlan_vid=0x1000/0x1000 (or push a tag first)")
            ctx.tagged = False
        elif isinstance(a, PushMpls):
            ctx.exact = {k: v for k, v in ctx.exact.items() if k in _L2_FIELDS}
            ctx.exact["eth_type"] = a.ethertype
        elif kind in (PopMpls, DecMplsTtl, SetMplsTtl):
            if ctx.exact.get("eth_type") not in MPLS_TYPES:
                raise _inconsistent(f"{render_action(a)} on packets the match does not guarantee to be MPLS",
                                    "match eth_type=0x8847 (or push_mpls first)")
            if isinstance(a, PopMpls):
                ctx.exact = {k: v for k, v in ctx.exact.items() if k in _L2_FIELDS}
                ctx.exact["eth_type"] = a.ethertype
        elif kind in (DecNwTtl, SetNwTtl):
            if ctx.exact.get("eth_type") not in ETH_IP_TYPES:
                raise _inconsistent(f"{render_action(a)} on packets the match does not guarantee to be IP",
                                    "match eth_type=0x0800 or 0x86dd")
        elif isinstance(a, SetField):
            name = a.field
            if not ctx.prereqs_ok(name) or (name in ("vlan_vid", "vlan_pcp") and not ctx.tagged):
                raise _inconsistent(f"set_field {name} without its prerequisites in the match",
                                    f"match the prerequisites of {name} (e.g. eth_type, ip_proto)")


_L2_FIELDS = frozenset(("in_port", "in_phy_port", "metadata", "tunnel_id", "eth_src", "eth_dst", "vlan_vid",
                        "vlan_pcp"))


def check_instructions(inst: Instructions, match: OxmMatch, table_id: int, n_tables: int, *,
                       group_exists: Callable[[int], bool], meter_exists: Callable[[int], bool]) -> None:
    """All checks of a flow_mod's instructions (module docstring), in the order OVS makes them."""
    if inst.goto is not None and not table_id < inst.goto < n_tables:
        raise bad_instruction(ofp.OFPBIC_BAD_TABLE_ID,
                              f"goto_table:{inst.goto} from table {table_id} (tables 0..{n_tables - 1})",
                              "goto a later table that exists: the pipeline only moves forward")
    if inst.meter is not None and not meter_exists(inst.meter):
        # UNKNOWN_METER is for a meter_mod MODIFY; for a flow, Open vSwitch says INVALID_METER.
        raise OFError(ofp.OFPET_METER_MOD_FAILED, ofp.OFPMMFC_INVALID_METER, f"meter {inst.meter} does not exist",
                      "add the meter (meter_mod ADD) before a rule that uses it")
    if inst.metadata is not None:
        value, mask = inst.metadata
        if not (0 <= value <= FULL64 and 0 <= mask <= FULL64):
            raise bad_instruction(ofp.OFPBIC_UNSUP_METADATA, "write_metadata wider than 64 bits",
                                  "keep metadata and mask within 64 bits")
    ctx = FlowContext.of_match(match)
    check_actions(inst.all_actions(), ctx, group_exists=group_exists)


__all__ = ["FlowContext", "Instructions", "check_actions", "check_instructions"]
