"""Typed errors that carry the fix.

Every error a user can cause (bad topology, controller that will not start,
malformed trace, port in use) is a :class:`NetsleuthError`: the CLI prints
``error: <problem> -- fix: <fix>`` on one line and exits with code 2.
"""

from __future__ import annotations


class NetsleuthError(Exception):
    """An error the user can act on: ``problem`` says what, ``fix`` says how."""

    exit_code = 2

    def __init__(self, problem: str, fix: str = "", details: str = "") -> None:
        super().__init__(problem)
        self.problem = problem
        self.fix = fix
        self.details = details

    def one_line(self) -> str:
        line = self.problem
        if self.fix:
            line += f" -- fix: {self.fix}"
        return line


class UnknownTopologyError(NetsleuthError):
    pass


class TraceFormatError(NetsleuthError):
    pass


class ControllerError(NetsleuthError):
    pass


class EnvironmentSetupError(NetsleuthError):
    pass


class CodecError(NetsleuthError):
    """Malformed OpenFlow bytes; ``err_type``/``err_code`` say which ERROR to reply with.

    ``version`` is the OpenFlow wire version (1 = 1.0, 4 = 1.3) whose rules
    the bytes broke: the error types and codes are that version's, and so is
    the OFPT_ERROR built from them.
    """

    def __init__(self, problem: str, err_type: int = 1, err_code: int = 0, xid: int = 0, data: bytes = b"",
                 version: int = 1) -> None:
        name = _OPENFLOW_NAMES.get(version, f"wire version {version}")
        super().__init__(problem, f"the peer sent bytes that are not valid OpenFlow {name}")
        self.err_type = err_type
        self.err_code = err_code
        self.xid = xid
        self.data = data
        self.version = version


_OPENFLOW_NAMES = {1: "1.0", 2: "1.1", 3: "1.2", 4: "1.3", 5: "1.4", 6: "1.5"}
