"""Warm starts of os-ken controllers: ``python warm_osken.py FD`` in the controller environment
(``.venv-controller``, or Faucet's, whose controller is os-ken's manager running the Faucet app).

Starting os-ken costs about half a second of CPU before it handles a single
message, nearly all of it importing: eventlet, oslo.config, and os-ken's
parsers of every OpenFlow version with its packet library.  A campaign, a
minimization or a test suite starts a controller per run, hundreds of
times, and that import was most of what a short run cost.  This server
(one per netsleuth process and controller environment, started by
``warm.py``) imports those modules once and then forks for each start: the
child runs ``osken_main.py`` (or ``covlaunch.py``, for a start under
coverage, which then runs it) as ``__main__``, exactly as a cold start runs
it, with its own arguments, environment, working directory and log, so the
manager, the apps and everything they import load in the child as they
would in a fresh process.

What it imports ahead is only what does not depend on eventlet's
monkey-patching: eventlet itself (``osken_main.py`` imports it first,
unpatched, anyway), oslo.config, and os-ken's OpenFlow and packet modules,
which take ``socket`` and ``time`` as modules (eventlet patches a module's
attributes in place, so they see the patched functions all the same).
os-ken's ``lib/hub.py`` is left to the child: importing it creates
eventlet's hub (an epoll descriptor forked children must not share) before
the manager patches the standard library, and that order is kept.

Each start makes two processes, as a cold start under ``guard.py`` does:
a guard, leader of a new session, that watches netsleuth's lifeline and
reports the controller's wait status on a pipe (it is this server's child,
not netsleuth's, so its exit status would reach nobody), and the controller,
its child, named in ``ps`` by the command line a cold start would have.

The protocol on FD (a SOCK_SEQPACKET Unix socket from netsleuth, the
server's owner): after its imports the server sends ``{"ready": PID,
"address": NAME}`` (or ``{"error": TEXT}`` and leaves); each request is a
JSON object ``{"argv", "env", "cwd"}`` carrying three descriptors (the log,
the lifeline's read end, the status pipe's write end) and is answered
``{"pid": GUARD_PID}`` or ``{"error": TEXT}``. The netsleuth processes the
owner starts (a CLI command a test runs, a campaign's pool workers) connect
to NAME, an abstract Unix address, and ask the same way, so that a tree of
netsleuth processes pays for one server, not one each; a connection from
another user is refused. End-of-file on FD (the owner closed it, or is
gone) ends the server and drops its guests; the controllers it started live
on under their own guards.

Standard library and os-ken only: this runs in the controller's
environment and never imports netsleuth.
"""

import array
import atexit
import json
import os
import runpy
import select
import signal
import socket
import struct
import sys
import traceback

import eventlet.wsgi

if not hasattr(eventlet.wsgi, "ALREADY_HANDLED"):  # os-ken 1.4.1 on newer eventlet (see osken_main.py)
    eventlet.wsgi.ALREADY_HANDLED = object()

import eventlet.hubs  # noqa: E402
import guard  # noqa: E402  (beside this file)
import osken_apps  # noqa: E402,F401  (beside this file; osken_main.py imports it)
import oslo_config.cfg  # noqa: E402,F401
import setproctitle  # noqa: E402
from os_ken.lib.packet import packet  # noqa: E402,F401
from os_ken.ofproto import ofproto_protocol  # noqa: E402,F401

_HERE = os.path.dirname(os.path.abspath(__file__))
OSKEN_MAIN = os.path.join(_HERE, "osken_main.py")
#: What a start may run, by name: os-ken's launcher, or the same under coverage (covlaunch.py, which runs
#: osken_main.py or Faucet's manager once it has set coverage up).
SCRIPTS = {os.path.basename(path): path for path in (OSKEN_MAIN, os.path.join(_HERE, "covlaunch.py"))}
MAX_REQUEST = 1 << 20
FDS_PER_REQUEST = 3


def _reap(signum, frame):
    """Guards that ended: collected at once, so a stopped controller's pids are really gone."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def _exit_code(exc):
    code = exc.code
    if code is None or isinstance(code, int):
        return code or 0
    print(code, file=sys.stderr)
    return 1


def _controller(request, script, log):
    """In the controller: become the process a cold start would have made, then run ``script``."""
    os.dup2(log, 1)
    os.dup2(log, 2)
    os.close(log)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    signal.signal(signal.SIGINT, signal.default_int_handler)  # Python's own, as at a fresh start
    sys.modules.pop("guard", None)  # ours, not an app's module of that name
    sys.argv = [script, *request["argv"]]
    setproctitle.setproctitle(" ".join([sys.executable, *sys.argv]))
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    code = 1
    try:
        runpy.run_path(script, run_name="__main__")
        code = 0
    except SystemExit as exc:
        code = _exit_code(exc)
    except BaseException:
        traceback.print_exc()
    try:  # what the interpreter does on its way out: logging flushes its handlers here
        atexit._run_exitfuncs()
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        os._exit(code)


def _start(request, fds, sockets):
    """Fork the guard, which forks the controller; returns the guard's pid (in this server)."""
    script = SCRIPTS[request.get("script", "osken_main.py")]   # (KeyError: refused)
    log, watch, report = fds
    sys.stdout.flush()
    sys.stderr.flush()
    _drop_hub()   # (the patched server's green calls may have made one since)
    pid = os.fork()
    if pid:
        return pid
    try:  # the guard
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)  # it waits for its controller itself
        for sock in sockets:   # the guard and its controller hold none of the server's sockets
            sock.close()
        os.setsid()
        me = os.getpid()
        child = os.fork()
        if child == 0:
            os.close(watch)
            os.close(report)
            guard.child_setup(me)
            _controller(request, script, log)
        os.close(log)
        guard.stand_guard(child, watch, report)
    finally:
        os._exit(1)


def _receive(server):
    data, ancillary, _, _ = server.recvmsg(MAX_REQUEST, socket.CMSG_SPACE(FDS_PER_REQUEST * 4))
    fds = array.array("i")
    for level, kind, payload in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(payload[:len(payload) - len(payload) % fds.itemsize])
    return data, list(fds)


def _admit(listener, guests):
    """A netsleuth process started by this server's owner (a CLI command, a pool worker) shares it; anyone
    else's connection is refused (a start runs code as this user)."""
    try:
        conn, _ = listener.accept()
    except OSError:   # gone before it was taken
        return
    _, uid, _ = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i")))
    if uid != os.getuid():
        conn.close()
        return
    guests.append(conn)


def _answer(data, fds, sockets, patched=None):
    """The reply to a start request: made by the patched server when the start may run there
    (``patched``, which makes it at the first such start), else here."""
    try:
        if len(fds) != FDS_PER_REQUEST:
            raise ValueError(f"a start carries {FDS_PER_REQUEST} descriptors, this one {len(fds)}")
        request = json.loads(data)
        if patched is not None and _runs_patched(request):
            sock = patched.socket(sockets + fds)
            reply = _forward(sock, data, fds) if sock is not None else None
            if reply is not None:
                return reply
        reply = {"pid": _start(request, fds, sockets)}
    except (OSError, ValueError, KeyError) as exc:
        reply = {"error": f"{type(exc).__name__}: {exc}"}
    finally:
        for fd in fds:
            os.close(fd)
    return json.dumps(reply).encode()


# ---------------------------------------------------------------- the patched server
#
# os-ken's manager monkey-patches the standard library with eventlet before it loads
# the apps, threads included, and patching threads walks every object reachable from
# the loaded modules to make their locks green: about a quarter of a second of CPU
# with os-ken's parsers loaded, in every start, cold or warm. A child of this server
# forked at the first plain start, the patched server, makes that same call, in the same order (importing
# os_ken.cmd.manager patches all but threads, then hub.patch(thread=True)), and forks
# the plain os-ken starts from there: their own call finds everything patched and
# returns at once; the rest of the start runs as before. Starts under coverage
# (covlaunch.py starts coverage before os-ken patches) and with --enable-debugger
# (the manager then patches no threads) are still forked from this unpatched server.
#
# The patched server never uses what eventlet patched: it blocks in recvmsg on a
# socket made before patching, forks, and replies; the hub that importing os-ken's
# hub module creates is dropped before the first fork, so every guard and controller
# makes its own (an epoll descriptor shared across processes would mix their events).


def _runs_patched(request):
    return request.get("script", "osken_main.py") == "osken_main.py" and "--enable-debugger" not in request["argv"]


def _forward(sock, data, fds):
    """Pass a start to the patched server: its reply; None when it is gone before taking the start (the
    start is made here); an error when it went with the start (then netsleuth starts the controller cold)."""
    try:
        sock.sendmsg([data], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))])
    except OSError:
        return None
    try:
        reply = sock.recv(MAX_REQUEST)
    except OSError:
        reply = b""
    return reply or json.dumps({"error": "the patched warm-start server ended during a start"}).encode()


_dropped_hubs: list = []   # kept alive: a collected hub would throw into its suspended greenlet


def _patch_as_the_manager_does():
    from os_ken.cmd.manager import main  # noqa: F401  (its import patches all but threads)
    from os_ken.lib import hub

    hub.patch(thread=True)
    _drop_hub()


def _drop_hub():
    """Forget this process's eventlet hub, if any, so that a child forked next makes its own."""
    made = getattr(eventlet.hubs._threadlocal, "hub", None)
    if made is not None:
        del eventlet.hubs._threadlocal.hub
        made.poll.close()
        _dropped_hubs.append(made)


class _Patched:
    """The patched server, made at the first start that may run there: a process that only ever
    starts controllers under coverage (fault localization) pays for no patching it never uses."""

    def __init__(self):
        self.sock = None
        self.tried = False

    def socket(self, others):
        """The socket to the patched server (made now, closing ``others`` in it), or None."""
        if not self.tried:
            self.tried = True
            made = _fork_patched(others)
            self.sock = made[1] if made else None
        return self.sock


def _fork_patched(others):
    """Fork the patched server, which closes ``others`` (sockets or descriptors of this server's);
    (its pid, the socket to it), or None when it could not be made."""
    try:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
    except OSError:
        return None
    if pid:
        theirs.close()
        return pid, ours
    code = 1
    try:
        ours.close()
        for other in others:
            if isinstance(other, int):
                os.close(other)
            else:
                other.close()
        _patch_as_the_manager_does()
        while True:
            data, fds = _receive(theirs)
            if not data:   # the server is gone
                code = 0
                break
            theirs.send(_answer(data, fds, [theirs]))
    except BaseException:
        traceback.print_exc()
    finally:
        os._exit(code)


def _serve_one(sock, sockets, patched=None):
    """Answer the request waiting on ``sock``; False when its connection has ended (end-of-file, or
    an error on it: a guest that died mid-request must not take the server down)."""
    try:
        data, fds = _receive(sock)
        if not data:
            return False
        sock.send(_answer(data, fds, sockets, patched))
    except OSError:
        return False
    return True


def serve(owner, listener):
    """Starts asked for on the owner's socket or a guest's, one at a time; the owner's end ends it."""
    guests = []
    patched = _Patched()
    while True:
        for sock in select.select([owner, listener, *guests], [], [])[0]:
            if sock is listener:
                _admit(listener, guests)
            elif not _serve_one(sock, [owner, listener, *guests] + ([patched.sock] if patched.sock else []),
                                patched):
                if sock is owner:
                    return
                guests.remove(sock)
                sock.close()


def main(argv):
    owner = socket.socket(fileno=int(argv[0]))
    if getattr(eventlet.hubs._threadlocal, "hub", None) is not None:
        owner.send(json.dumps({"error": "an import ahead made eventlet's hub; a fork would share it"}).encode())
        return 2
    signal.signal(signal.SIGCHLD, _reap)
    # setproctitle finds the command line's memory from the environment's: before a child changes that.
    setproctitle.setproctitle(setproctitle.getproctitle())
    # Guests reach the server at an abstract Unix address (no file to clean up; gone with the server).
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    address = f"netsleuth-warm-{os.getpid()}-{os.urandom(8).hex()}"
    listener.bind("\0" + address)
    listener.listen(16)
    owner.send(json.dumps({"ready": os.getpid(), "address": address}).encode())
    serve(owner, listener)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
