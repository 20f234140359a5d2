"""The command-line options of the switches' limits (packet buffering, table size) and of POX's checkout.

run and fuzz take them as given; replay and minimize default to what the
trace's header recorded (None here), so a replay runs the switches the
recording ran.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from netsleuth.options import at_least

if TYPE_CHECKING:  # the model (os-ken) is imported only when a command runs, not to build the parser
    from netsleuth.model.switch_io import SwitchLimits


def add_switch_options(p: argparse.ArgumentParser, default: int | None = 0) -> None:
    """--buffer-packets, --table-size (recorded in the trace: a replay's default is the trace's) and --pox."""
    of_trace = "" if default == 0 else "; default: the trace's"
    p.add_argument("--buffer-packets", type=at_least(0), default=default, metavar="N",
                   help="switches buffer every PACKET_IN, up to N at once, as Open vSwitch did before 2.7 "
                        "(POX's l2_multi and l3_learning expect it); 0: off, as OVS today" + of_trace)
    p.add_argument("--table-size", type=at_least(0), default=default, metavar="N",
                   help="a FLOW_MOD ADD that would grow a switch's table past N entries is refused (OpenFlow "
                        "1.0: ALL_TABLES_FULL; 1.3: TABLE_FULL, each table on its own), as Open vSwitch refuses "
                        "it with a flow limit; 0: no limit" + of_trace)
    p.add_argument("--pox", metavar="DIR", help="the POX checkout pox: controllers run from ($NETSLEUTH_POX)")


def limits_of(args: argparse.Namespace) -> SwitchLimits:
    """The switch limits the options of ``add_switch_options`` give (run and fuzz)."""
    from netsleuth.model.switch_io import SwitchLimits

    return SwitchLimits(args.buffer_packets, args.table_size)


__all__ = ["add_switch_options", "limits_of"]
