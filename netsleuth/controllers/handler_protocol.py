"""The pipe protocol of the handler servers (os-ken's and POX's): framing, errors, the request loop.

The model checker runs a controller's unmodified handlers in a server
process inside the controller's own environment and talks to it over its
stdin and stdout: length-prefixed pickled requests and answers.  Both servers
run as scripts with this folder on ``sys.path`` and import this module as
``handler_protocol``; like them it imports only the standard library.
"""

import logging
import os
import pickle
import struct
import sys
import traceback

PROTOCOL = 4
_LEN = struct.Struct("!I")


def read_frame(stream):
    head = stream.read(4)
    if len(head) < 4:
        return None
    (n,) = _LEN.unpack(head)
    data = stream.read(n)
    if len(data) < n:
        return None
    return pickle.loads(data)


def write_frame(stream, obj):
    data = pickle.dumps(obj, protocol=PROTOCOL)
    stream.write(_LEN.pack(len(data)) + data)
    stream.flush()


class HandlerRequestError(Exception):
    """A request the server cannot carry out, answered as {"error", "fix"} (and what failed to import)."""

    import_error = None  # [module, app, message] when an app or component cannot be imported

    def __init__(self, problem, fix):
        super().__init__(problem)
        self.problem = problem
        self.fix = fix


def serve(handle, loglevel_env):
    """Answer requests until "quit" or end of input: ``handle(request)`` gives the answer.

    stdout is the protocol channel, so whatever the controller's code prints goes to stderr
    (the server's log); ``loglevel_env`` names the variable that sets the log level.
    """
    out = open(os.dup(sys.stdout.fileno()), "wb")
    inp = open(os.dup(sys.stdin.fileno()), "rb")
    sys.stdout = sys.stderr
    logging.basicConfig(stream=sys.stderr, level=os.environ.get(loglevel_env, "WARNING"))
    while True:
        req = read_frame(inp)
        if req is None or req.get("op") == "quit":
            return 0
        try:
            resp = handle(req)
        except HandlerRequestError as exc:
            resp = {"error": exc.problem, "fix": exc.fix}
            if exc.import_error is not None:
                resp["import_error"] = exc.import_error
        except Exception as exc:
            resp = {"error": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc()}
        write_frame(out, resp)
