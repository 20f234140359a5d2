"""From an ``app:`` spec and a :class:`Config` to a runnable model: app loading and system building.

Kept apart from ``app.py`` (the API every app imports) because loading has
to know every app the model checker ships -- pyswitch, the load balancer
and traffic-engineering variants, os-ken apps hosted in the controller
environment -- and those all import ``app.py``: the base class stays at the
bottom, the loader sits above the apps.

Spec forms (``app:`` prefix optional):

* a builtin name (``pyswitch``, ``loadbalancer-bug-iv``, ``energy-te``, ...: see :data:`BUILTIN_APPS`);
* ``package.module:Class`` naming an :class:`~netsleuth.nice.app.App` subclass;
* ``osken:MODULE[,MODULE]``: unmodified os-ken apps run by the handler server (``osken_host.py``);
* ``ryu:APP[,APP]``: unmodified Ryu apps (module names or ``.py`` files), hosted the same way;
* ``pox:COMPONENTS``: unmodified POX components on a real POX core (``pox_host.py``), the words
  being POX's command line (components, each followed by its ``--options``).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

from netsleuth.nice.app import App
from netsleuth.nice.apps import energy_te as te
from netsleuth.nice.apps import loadbalancer as lb
from netsleuth.nice.errors import AppSpecError
from netsleuth.nice.property_registry import resolve
from netsleuth.nice.scripted import attach as attach_scripts
from netsleuth.nice.system import Config, System
from netsleuth.trace.controller_spec import APP_KINDS, ControllerSpec, Kind

LB_MODULE = lb.__name__
TE_MODULE = te.__name__

#: ``netsleuth check NAME`` names of the load balancer and traffic engineering variants -> ``module:Class``
#: (the fixed variant goes by the app's plain name).
APP_SPECS: dict[str, str] = {
    **{("loadbalancer" if v == "fixed" else f"loadbalancer-{v}"): f"{LB_MODULE}:{c.__name__}"
       for v, c in lb.VARIANTS.items()},
    **{("energy-te" if v == "fixed" else f"energy-te-{v}"): f"{TE_MODULE}:{c.__name__}"
       for v, c in te.VARIANTS.items()},
}

#: Every builtin app name -> ``module:Class``.
BUILTIN_APPS: dict[str, str] = {
    "pyswitch": "netsleuth.nice.apps.pyswitch:PySwitch",
    "pyswitch-fixed": "netsleuth.nice.apps.pyswitch:PySwitchFixed",
    **APP_SPECS,
}


def model_spec(spec: str) -> ControllerSpec:
    """``pyswitch`` / ``app:pyswitch`` / ``pkg.mod:Class`` / ``osken:M`` -> the model checker's spec (``app:...``)."""
    parsed = ControllerSpec.parse(spec.strip())
    if parsed.kind in APP_KINDS:  # app files by absolute path: the counterexample replays elsewhere
        from netsleuth.nice.osken_host import parse_app_spec
        parsed = parse_app_spec(parsed)
    elif parsed.kind not in (Kind.APP, Kind.POX):
        raise AppSpecError(f"{spec!r} is a live controller, not an app the model checker runs",
                           "check an in-process app (pyswitch, package.module:Class) or a hosted one "
                           "(osken:MODULE, ryu:APP, pox:COMPONENTS)")
    return parsed.hosted()


def normalize_spec(spec: str) -> str:
    """The canonical ``app:...`` text of an app spec (see :func:`model_spec`)."""
    return str(model_spec(spec))


def load_app(spec: str) -> Callable[[], App]:
    """The app class an ``app:`` spec names (see the module docstring for the forms)."""
    parsed = model_spec(spec)
    if parsed.kind in APP_KINDS:  # an unmodified os-ken 1.4.1 (or Ryu) app, run by the handler server
        from netsleuth.nice.osken_host import load_osken_app  # starts a subprocess: only when asked for
        return load_osken_app(parsed)
    if parsed.kind is Kind.POX:  # unmodified POX components on a real POX core, run by its handler server
        from netsleuth.nice.pox_host import load_pox_app
        return load_pox_app(parsed)
    s = parsed.name
    target = BUILTIN_APPS.get(s, s)
    if ":" not in target:
        raise AppSpecError(f"unknown in-process app {spec!r}",
                           f"use one of {', '.join(sorted(BUILTIN_APPS))} or package.module:Class")
    mod_name, _, cls_name = target.partition(":")
    try:
        mod = importlib.import_module(mod_name)
    except ImportError as exc:
        raise AppSpecError(f"cannot import app module {mod_name!r}: {exc}",
                           "check the module path and that it is importable from this environment") from None
    cls = getattr(mod, cls_name, None)
    if not (isinstance(cls, type) and issubclass(cls, App)):
        raise AppSpecError(f"{target!r} is not a netsleuth.nice.app.App subclass",
                           "name a class that derives from netsleuth.nice.app.App")
    return cls


def make_system(config: Config) -> System:
    """The model a configuration describes: its app, properties, scripted sends and input discovery."""
    system = System(config, load_app(config.app_spec), resolve(config.properties))
    if config.scripts:
        attach_scripts(system, config.scripts)
    if config.discover or config.discover_stats:
        from netsleuth.nice import concolic  # z3: only when discovery is asked for
        if config.discover:  # one send per discovered packet, per host, memoized per controller state
            concolic.attach(system, config.discover)
        if config.discover_stats:
            system.generators.append(concolic.StatsDiscoverer())
    return system


__all__ = ["APP_SPECS", "BUILTIN_APPS", "LB_MODULE", "TE_MODULE", "load_app", "make_system", "model_spec",
           "normalize_spec"]
