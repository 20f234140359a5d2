"""An os-ken app that takes the switches' packet-ins and never answers one (no PACKET_OUT, no
FLOW_MOD): hosts cannot even resolve each other's addresses."""

from os_ken.base import app_manager
from os_ken.controller import ofp_event
from os_ken.controller.handler import MAIN_DISPATCHER, set_ev_cls
from os_ken.ofproto import ofproto_v1_0


class Deaf(app_manager.OSKenApp):
    OFP_VERSIONS = [ofproto_v1_0.OFP_VERSION]

    @set_ev_cls(ofp_event.EventOFPPacketIn, MAIN_DISPATCHER)
    def _packet_in(self, ev):
        self.logger.info("packet-in from %s ignored", ev.msg.datapath.id)
