"""Runs a Python controller under coverage.py: ``python covlaunch.py OPTIONS -- SCRIPT ARGS | -m MODULE ARGS``.

Executed by the controller environment's Python (standard library and
coverage only, never netsleuth), in front of the program netsleuth would
have run: os-ken's launcher, Faucet's entry script, a ``cmd:`` Python program.
For os-ken apps and Faucet it may run in a process forked from the warm-start
server (warm_osken.py), which imported eventlet and os-ken's parsers ahead;
measuring starts after the handshakes either way, so it sees the same lines.

Only what the controller executes after the OpenFlow handshakes counts for
fault localization, so measuring starts only then: netsleuth sends SIGUSR2
once every switch has shaken hands, and the handler starts coverage (in the
context ``run``) and touches ``OUT.run`` so netsleuth knows before it injects
anything.  Starting late keeps the controller's start-up (os-ken imports
hundreds of modules) at full speed; the handlers that run later are fresh
calls, which the tracer sees.  A restarted controller (after an injected
crash) is measured from its start (``--run-now``).

netsleuth stops a controller with SIGTERM.  The handler writes the lines of
context ``run`` to ``OUT`` as JSON (which files are the controller's own and
which its framework's too) and then dies of SIGTERM as it would have.  A
normal exit writes the same at exit.  A SIGKILL (an injected crash) loses
that process's lines.  Writing JSON here keeps the coverage data format a
private matter of this environment's coverage release.

Windows: in an os-ken process (os-ken and Ryu apps, Faucet) and in POX every
call of an event handler after the handshakes runs in a coverage context of
its own (``w1``, ``w2``, ...), and every OpenFlow message the controller
sends is noted with the window that sent it (its switch and xid), as is
the exception that escaped a call (its type's name).  os-ken
hands events to the handlers ``OSKenApp.get_handlers`` returns and sends
with ``Datapath.send_msg``; POX's revent calls each handler through
``Event._invoke`` and its connections send with ``Connection.send``.  A replay's lines
can then be split per handler call, which is what separates the lines of a
handler that every replay runs: the call that sent the rule a violation
names is the failing one, the other calls pass.

Flows (``--flows``, with ``--windows``): a wrong value one handler call stores
in the app's state and another call reads (a learning switch learning a host
at the wrong port) leaves no trace in either call's lines: the storing line
runs in every call.  So the app's own dictionary attributes (those of the
app instances whose handlers run, in the app's own code) are replaced by a
dict that notes, for every key, the line and window that stored it last (a
dict another object also holds is left alone: a copy would part from it), and
for every read of a stored value (not of a nested dictionary) in another
window, the pair (storing line, reading line) under the reading window.  This
is the dynamic data dependence across calls that dynamic-slicing-aided
fault localization follows (localize/spectrum.py ranks the pairs).  The
dictionaries are replaced once, at the first call of the instance's
handlers; the app's code is not changed.  A test of a key (``key in d``)
followed in the same window by a read of that key is noted too, as the pair
(test line, read line): the condition that led to a read that raised
``KeyError`` (localize/crash.py follows it back from an exception).
"""

import argparse
import atexit
import functools
import json
import os
import runpy
import signal
import sys

# This folder holds netsleuth's modules (faucet.py, ...): none may shadow the controller's or coverage's.
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _HERE]

import threading  # noqa: E402
import traceback  # noqa: E402

import coverage  # noqa: E402
from coverage import sqldata  # noqa: E402

_os_ident = threading.get_ident   # bound before any monkey-patching


class _OsThreads:
    """``threading`` as coverage's data store sees it, with the OS thread's identity.

    The store keeps one database per thread, found by ``threading.get_ident()``.  Once eventlet has
    monkey-patched threading (os-ken does at start), that is the *greenlet's* identity: the lines
    each handler's greenlet records after a context switch land in a database of its own, which
    nobody reads back.  Greenlets share their OS thread's tracer, so they share its database too.

    POX calls its handlers in a thread of its own (the cooperative scheduler's), and a context switch
    there would write to that thread's database, while the lines are read back in the main thread:
    ``single`` makes every thread use one (the launching thread's).
    """

    single = None

    @staticmethod
    def get_ident():
        return _OsThreads.single or _os_ident()

    def __getattr__(self, name):
        return getattr(threading, name)


sqldata.threading = _OsThreads()

_state: dict = {"cov": None, "args": None, "done": False, "started": False, "window": 0, "windows": [],
          "sent": [], "raised": {}, "patched": False, "pox_patched": False, "flows": {}, "guards": {}, "frames": {},
          "tracked": set(),
          "own_roots": None}
# A context switch (a handler's start or end in POX's scheduler thread) and the dump (in the main
# thread, on SIGTERM) both flush the tracers into the one database: never at the same time.
_flush = threading.RLock()


def _parse(argv):
    cut = argv.index("--") if "--" in argv else len(argv)
    p = argparse.ArgumentParser(prog="covlaunch.py")
    p.add_argument("--out", required=True)
    p.add_argument("--source", action="append", default=[])
    p.add_argument("--source-pkg", action="append", default=[])
    p.add_argument("--own-module", action="append", default=[])
    p.add_argument("--own-path", action="append", default=[])
    p.add_argument("--framework-pkg", action="append", default=[])
    p.add_argument("--early", action="store_true", help="measure from launch, the boot in a context of its own")
    p.add_argument("--concurrency", default="thread")
    p.add_argument("--run-now", action="store_true")
    p.add_argument("--faucet", action="store_true")
    p.add_argument("--windows", action="store_true", help="a coverage context per os-ken or POX handler call")
    p.add_argument("--flows", action="store_true", help="note which window stored the app state each window reads")
    return p.parse_args(argv[:cut]), argv[cut + 1:]


def _module_root(name):
    """The file of module ``name`` as the run loaded it (a package: its folder), or None."""
    mod = sys.modules.get(name)
    if mod is None and (name == "ryu" or name.startswith("ryu.")):
        mod = sys.modules.get("os_ken" + name[3:])
    path = getattr(mod, "__file__", None)
    if not path:
        return None
    path = os.path.realpath(path)
    return os.path.dirname(path) if os.path.basename(path) == "__init__.py" else path


def _dump():
    """Write the ``run`` context's lines to OUT (once), atomically."""
    cov, args = _state["cov"], _state["args"]
    if cov is None or _state["done"] or not _state["started"]:
        return
    _state["done"] = True
    with _flush:
        try:
            cov.stop()
        except Exception:  # stopped from another greenlet or thread: the data is there all the same
            pass
        data = cov.get_data()
        lines, windows = _lines_by_context(data)
    own = _own_paths(args)
    framework = [r for r in (_module_root(m) for m in args.framework_pkg) if r]
    record = {"pid": os.getpid(), "own": sorted(set(own)), "framework": sorted(set(framework)),
              "lines": lines, "switched": os.path.exists(args.out + ".run"),
              "windows": windows, "sent": _state["sent"]}
    tmp = args.out + ".tmp"
    with open(tmp, "w") as f:
        json.dump(record, f, sort_keys=True)
    os.replace(tmp, args.out)


def _lines_by_context(data):
    """The lines of the run (every context but ``boot``) and those of each handler window ``wN``."""
    lines, per = {}, {}
    for f in sorted(data.measured_files()):
        real = os.path.realpath(f)
        for lineno, contexts in data.contexts_by_lineno(f).items():
            names = [c for c in contexts if c != "boot"]
            if names:
                lines.setdefault(real, set()).add(lineno)
            for c in names:
                if c.startswith("w") and c[1:].isdigit():
                    per.setdefault(int(c[1:]), {}).setdefault(real, set()).add(lineno)
    windows = []
    for n, event in _state["windows"]:
        got = per.get(n, {})
        windows.append({"id": n, "event": event, "lines": {f: sorted(v) for f, v in sorted(got.items())}})
        if n in _state["raised"]:
            windows[-1]["raised"] = _state["raised"][n]
            windows[-1]["frames"] = _state["frames"].get(n, [])
        for kind in ("flows", "guards"):
            if n in _state[kind]:
                windows[-1][kind] = sorted(list(f) for f in _state[kind][n])
    return {f: sorted(v) for f, v in sorted(lines.items())}, windows


def _in_window(event, call):
    """``call()`` run in a new coverage context ``wN``, the window its sent messages are noted under."""
    cov = _state["cov"]
    if _state["done"]:   # the lines are written: the process is on its way out
        return call()
    with _flush:
        _state["window"] += 1
        n = _state["window"]
        _state["windows"].append((n, event))
        previous = _state.get("current", 0)
        _state["current"] = n
        cov.switch_context(f"w{n}")
    try:
        return call()
    except Exception as exc:   # the call an exception escaped: the failing one of an exception violation
        _state["raised"][n] = type(exc).__name__
        # where it was raised, outermost first, as this process saw its files (the trace may name other paths)
        _state["frames"][n] = [[_real(f.f_code.co_filename), line] for f, line in traceback.walk_tb(exc.__traceback__)]
        raise
    finally:
        with _flush:
            _state["current"] = previous
            if not _state["done"]:
                cov.switch_context(f"w{previous}" if previous else "run")


_real_paths: dict = {}


def _real(path):
    got = _real_paths.get(path)
    if got is None:
        got = _real_paths[path] = os.path.realpath(path)
    return got


def _caller(depth):
    frame = sys._getframe(depth + 1)
    return _real(frame.f_code.co_filename), frame.f_lineno


class _Tracked(dict):
    """A dict that notes who stored each key and which other window read it (see the module's docstring)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._stored = {}
        self._tested = {}

    def _wrote(self, key, depth):
        try:
            self._stored[key] = (*_caller(depth + 1), _state.get("current", 0))
        except TypeError:   # an unhashable key cannot be stored either: the dict will say so
            pass

    def _guarded(self, key, depth):
        """A read of ``key`` after a test of it in the same window: note (test line, read line)."""
        window = _state.get("current", 0)
        try:
            tested = self._tested.get(key)
        except TypeError:
            return
        if window and tested is not None and tested[2] == window:
            _state["guards"].setdefault(window, set()).add((tested[0], tested[1], *_caller(depth + 1)))

    def __contains__(self, key):
        window = _state.get("current", 0)
        if window:
            try:
                self._tested[key] = (*_caller(1), window)
            except TypeError:
                pass
        return dict.__contains__(self, key)

    def _read(self, key, value, depth):
        window = _state.get("current", 0)
        if not window or isinstance(value, dict):
            return
        stored = self._stored.get(key)
        if stored is not None and stored[2] != window:
            _state["flows"].setdefault(window, set()).add((stored[0], stored[1], stored[2], *_caller(depth + 1)))

    def __setitem__(self, key, value):
        self._wrote(key, 1)
        dict.__setitem__(self, key, value)

    def __getitem__(self, key):
        self._guarded(key, 1)
        value = dict.__getitem__(self, key)
        self._read(key, value, 1)
        return value

    def get(self, key, default=None):
        self._guarded(key, 1)
        if not dict.__contains__(self, key):
            return default
        value = dict.__getitem__(self, key)
        self._read(key, value, 1)
        return value

    def setdefault(self, key, default=None):
        if not dict.__contains__(self, key):
            self._wrote(key, 1)
            dict.__setitem__(self, key, _Tracked(default) if type(default) is dict else default)
        return dict.__getitem__(self, key)

    def __reduce__(self):   # pickled or deep-copied as the plain dict the app made
        return (dict, (dict(self),))


def _own_paths(args):
    """The controller's own code: the files or folders of its modules as loaded, and its own paths."""
    return [r for r in (_module_root(m) for m in args.own_module) if r] + [os.path.realpath(p) for p in args.own_path]


def _own_roots():
    if _state["own_roots"] is None:
        _state["own_roots"] = tuple(_own_paths(_state["args"]))
    return _state["own_roots"]


def _track(app):
    """Replace the dict attributes of ``app`` (an instance of the app's own code) by :class:`_Tracked` ones, once."""
    if not _state["args"].flows or app is None or id(app) in _state["tracked"]:
        return
    _state["tracked"].add(id(app))
    try:
        path = _real(sys.modules[type(app).__module__].__file__)
        attrs = vars(app)
    except (AttributeError, KeyError, TypeError):
        return
    if not any(path == r or path.startswith(r.rstrip("/") + "/") for r in _own_roots()):
        return
    for name in list(attrs):
        value = attrs[name]
        # only a dict nothing else holds (the attribute, ``value`` and the count's argument): a copy of one
        # another object shares would part from it.  Nested dicts made later by setdefault are tracked too.
        if type(value) is dict and sys.getrefcount(value) <= 3:
            attrs[name] = _Tracked(value)


def _windowed(handler, event):
    """``handler`` run in a window of its own (:func:`_in_window`).

    The wrapper carries the handler's attributes: os-ken reads ``callers`` (its dispatchers) and
    ``__name__`` off the handlers it gets."""
    @functools.wraps(handler)
    def call(ev):
        return _in_window(event, lambda: handler(ev))
    return call


def _patch_osken():
    """Split an os-ken process's run into handler windows (see the module's docstring)."""
    if _state["patched"]:
        return
    app_manager = sys.modules.get("os_ken.base.app_manager")
    controller = sys.modules.get("os_ken.controller.controller")
    if app_manager is None or controller is None:
        return
    _state["patched"] = True
    get_handlers = app_manager.OSKenApp.get_handlers
    send_msg = controller.Datapath.send_msg

    def windowed_handlers(self, ev, state=None):
        _track(self)
        return [_windowed(h, type(ev).__name__) for h in get_handlers(self, ev, state)]

    def noted_send(self, msg, *args, **kwargs):
        done = send_msg(self, msg, *args, **kwargs)
        if _state.get("current"):
            _state["sent"].append([self.id, msg.xid, _state["current"]])
        return done

    app_manager.OSKenApp.get_handlers = windowed_handlers
    controller.Datapath.send_msg = noted_send


def _patch_pox():
    """Split a POX process's run into handler windows: revent hands every event to each of its handlers
    through ``Event._invoke``, and every message to a switch leaves through ``Connection.send``."""
    if _state["pox_patched"]:
        return
    revent = sys.modules.get("pox.lib.revent.revent")
    of_01 = sys.modules.get("pox.openflow.of_01")
    if revent is None or of_01 is None:
        return
    _state["pox_patched"] = True
    invoke = revent.Event._invoke
    send = of_01.Connection.send

    def windowed_invoke(self, handler, *args, **kw):
        _track(getattr(handler, "__self__", None))
        return _in_window(type(self).__name__, lambda: invoke(self, handler, *args, **kw))

    def noted_send(self, data):
        if not _state.get("current"):
            return send(self, data)
        if not isinstance(data, bytes):
            data = data.pack()   # as send would: the xid is known once packed
        window = _state["current"]
        done = send(self, data)
        if len(data) >= 8 and self.dpid is not None:
            _state["sent"].append([self.dpid, int.from_bytes(data[4:8], "big"), window])
        return done

    revent.Event._invoke = windowed_invoke
    of_01.Connection.send = noted_send


def _on_term(signum, frame):
    try:
        _dump()
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGTERM)


def _start():
    cov, args = _state["cov"], _state["args"]
    if not _state["started"]:
        _state["started"] = True
        cov.start()
        cov.switch_context("run")
    elif _state.get("early"):  # measuring since launch: what runs from now on is the run's
        _state["early"] = False
        cov.switch_context("run")
    if args.windows:
        _patch_osken()
        _patch_pox()
    with open(args.out + ".run", "w"):
        pass


def _on_mark(signum, frame):
    _start()


def _faucet(target):
    """Faucet's entry script turns its options into os-ken manager's and execs ``osken-manager``, which
    would leave coverage behind: do the same in this process instead."""
    from faucet.__main__ import build_ryu_args

    manager_args = build_ryu_args([target[0], *target[1:]])
    if not manager_args:  # --version: printed
        return 0
    sys.argv = manager_args
    from os_ken.cmd.manager import main as manager

    return manager()


def main(argv):
    args, target = _parse(argv)
    if not target:
        sys.stderr.write("usage: covlaunch.py --out FILE [OPTIONS] -- SCRIPT ARGS | -m MODULE ARGS\n")
        return 2
    concurrency = [c for c in args.concurrency.split(",") if c]
    cov = coverage.Coverage(data_file=None, source=args.source or None, source_pkgs=args.source_pkg or None,
                            concurrency=concurrency, config_file=False)
    cov.set_option("run:disable_warnings", ["module-not-imported", "no-data-collected", "module-not-measured"])
    _state["cov"], _state["args"] = cov, args
    if args.windows and args.early:   # POX: its handlers run in a thread of its own (see _OsThreads)
        _OsThreads.single = _os_ident()
    signal.signal(signal.SIGTERM, _on_term)
    signal.signal(signal.SIGUSR2, _on_mark)
    atexit.register(_dump)
    if args.run_now:
        _start()
    elif args.early:
        # A controller whose threads start at boot (POX's cooperative scheduler runs in one) is
        # measured from launch, for a thread is traced only if it starts after coverage does;
        # its boot is kept apart in a context of its own, which the dump leaves out.
        _state["started"], _state["early"] = True, True
        cov.start()
        cov.switch_context("boot")
    if args.faucet:
        return _faucet(target)
    if target[0] == "-m":
        sys.argv = [target[1], *target[2:]]
        sys.path.insert(0, os.getcwd())
        runpy.run_module(target[1], run_name="__main__", alter_sys=True)
    else:
        script = os.path.realpath(target[0])
        sys.argv = [target[0], *target[1:]]
        sys.path.insert(0, os.path.dirname(script))  # as `python SCRIPT` has it
        runpy.run_path(script, run_name="__main__")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
