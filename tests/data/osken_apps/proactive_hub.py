"""A proactive os-ken app: wildcard rules installed when a switch joins, no packet-in handling.

Every switch floods everything (a hub), except that TCP to port 22 is sent
out of port 99, which no switch has: a drop-to-nowhere on a wildcard rule,
the kind of blackhole a proactive app's typo makes.  On a topology with a
cycle the flood rule loops; on any topology the port-22 rule is a blackhole.
The header spaces involved are broad (everything but one TCP port), which is
what the readable violation summaries are tested on.
"""

from os_ken.base import app_manager
from os_ken.controller import ofp_event
from os_ken.controller.handler import CONFIG_DISPATCHER, set_ev_cls
from os_ken.ofproto import ofproto_v1_0


class ProactiveHub(app_manager.OSKenApp):
    OFP_VERSIONS = [ofproto_v1_0.OFP_VERSION]

    @set_ev_cls(ofp_event.EventOFPSwitchFeatures, CONFIG_DISPATCHER)
    def _features(self, ev):
        dp = ev.msg.datapath
        ofp, parser = dp.ofproto, dp.ofproto_parser
        self._add(dp, parser.OFPMatch(), 1, [parser.OFPActionOutput(ofp.OFPP_FLOOD)])
        ssh = parser.OFPMatch(dl_type=0x0800, nw_proto=6, tp_dst=22)
        self._add(dp, ssh, 100, [parser.OFPActionOutput(99)])

    @staticmethod
    def _add(dp, match, priority, actions):
        parser = dp.ofproto_parser
        dp.send_msg(parser.OFPFlowMod(datapath=dp, match=match, cookie=0, command=dp.ofproto.OFPFC_ADD,
                                      idle_timeout=0, hard_timeout=0, priority=priority, actions=actions))
