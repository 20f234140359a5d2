"""POX's l2_learning with NICE's fix for the migration blackhole (a POX component, for the tests).

When a MAC address shows up on a port other than the one the switch
learned for it, the host moved: the switch's flows towards it are deleted
before the packet is handled exactly as l2_learning handles it.
"""

import pox.openflow.libopenflow_01 as of
from pox.core import core
from pox.forwarding import l2_learning


class MovingLearningSwitch(l2_learning.LearningSwitch):
    def _handle_PacketIn(self, event):
        src = event.parsed.src
        old = self.macToPort.get(src)
        if old is not None and old != event.port:
            self.connection.send(of.ofp_flow_mod(command=of.OFPFC_DELETE, match=of.ofp_match(dl_dst=src)))
        super()._handle_PacketIn(event)


class moving_l2:  # noqa: N801 - POX registers a component under its class name
    def __init__(self):
        core.openflow.addListeners(self)

    def _handle_ConnectionUp(self, event):
        MovingLearningSwitch(event.connection, False)


def launch():
    core.registerNew(moving_l2)
