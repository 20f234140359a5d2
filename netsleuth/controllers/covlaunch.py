"""Runs a Python controller under coverage.py: ``python covlaunch.py OPTIONS -- SCRIPT ARGS | -m MODULE ARGS``.

Executed by the controller environment's Python (standard library and
coverage only, never netsleuth), in front of the program netsleuth would
have run: os-ken's launcher, Faucet's entry script, a ``cmd:`` Python program.

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
"""

import argparse
import atexit
import json
import os
import runpy
import signal
import sys

# This folder holds netsleuth's modules (faucet.py, ...): none may shadow the controller's or coverage's.
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _HERE]

import coverage  # noqa: E402

_state = {"cov": None, "args": None, "done": False, "started": False}


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
    try:
        cov.stop()
    except Exception:  # stopped from another greenlet or thread: the data is there all the same
        pass
    data = cov.get_data()
    data.set_query_contexts(["^run$"])
    lines = {}
    for f in sorted(data.measured_files()):
        got = data.lines(f)
        if got:
            lines[os.path.realpath(f)] = sorted(got)
    own = [r for r in (_module_root(m) for m in args.own_module) if r]
    own += [os.path.realpath(p) for p in args.own_path]
    framework = [r for r in (_module_root(m) for m in args.framework_pkg) if r]
    record = {"pid": os.getpid(), "own": sorted(set(own)), "framework": sorted(set(framework)),
              "lines": lines, "switched": os.path.exists(args.out + ".run")}
    tmp = args.out + ".tmp"
    with open(tmp, "w") as f:
        json.dump(record, f, sort_keys=True)
    os.replace(tmp, args.out)


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
