"""The one exception of the OpenFlow 1.3 model: an ofp_error the switch must send.

Every rejection the specification prescribes (a match with a missing
prerequisite, a goto to an earlier table, a group that already exists ...)
is an ``OFError`` carrying the OFPET_*/code pair, so the switch that holds
this library answers with exactly that ERROR message and a user of the
library sees which rule of the spec was broken.
"""

from __future__ import annotations

from os_ken.ofproto import ofproto_v1_3 as ofp

from netsleuth.errors import NetsleuthError

_TYPE_PREFIX = {
    ofp.OFPET_BAD_REQUEST: "OFPBRC_", ofp.OFPET_BAD_ACTION: "OFPBAC_", ofp.OFPET_BAD_INSTRUCTION: "OFPBIC_",
    ofp.OFPET_BAD_MATCH: "OFPBMC_", ofp.OFPET_FLOW_MOD_FAILED: "OFPFMFC_",
    ofp.OFPET_GROUP_MOD_FAILED: "OFPGMFC_", ofp.OFPET_METER_MOD_FAILED: "OFPMMFC_",
}


def error_name(err_type: int, err_code: int) -> str:
    """``OFPBMC_BAD_PREREQ`` for (OFPET_BAD_MATCH, 4): the spec's name of an error."""
    prefix = _TYPE_PREFIX.get(err_type, "")
    if prefix:
        for name in dir(ofp):
            if name.startswith(prefix) and getattr(ofp, name) == err_code:
                return name
    return f"error type {err_type} code {err_code}"


class OFError(NetsleuthError, ValueError):
    """A request the OpenFlow 1.3 spec says to reject with ``(err_type, err_code)``."""

    def __init__(self, err_type: int, err_code: int, problem: str, fix: str = "") -> None:
        self.err_type = err_type
        self.err_code = err_code
        self.name = error_name(err_type, err_code)
        super().__init__(f"{self.name}: {problem}", fix or "change the request to satisfy the OpenFlow 1.3 spec")


def bad_match(code: int, problem: str, fix: str = "") -> OFError:
    return OFError(ofp.OFPET_BAD_MATCH, code, problem, fix)


def bad_action(code: int, problem: str, fix: str = "") -> OFError:
    return OFError(ofp.OFPET_BAD_ACTION, code, problem, fix)


def bad_instruction(code: int, problem: str, fix: str = "") -> OFError:
    return OFError(ofp.OFPET_BAD_INSTRUCTION, code, problem, fix)
