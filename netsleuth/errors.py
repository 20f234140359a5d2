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
    """Malformed OpenFlow bytes; ``err_type``/``err_code`` say which ERROR to reply with."""

    def __init__(self, problem: str, err_type: int = 1, err_code: int = 0, xid: int = 0, data: bytes = b"") -> None:
        super().__init__(problem, "the peer sent bytes that are not valid OpenFlow 1.0")
        self.err_type = err_type
        self.err_code = err_code
        self.xid = xid
        self.data = data
