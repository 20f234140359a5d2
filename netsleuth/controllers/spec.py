"""Check ``--controller`` specifications and the ones trace headers name, before anything runs them.

The spec itself, its grammar and its text are :mod:`netsleuth.trace.controller_spec`
(``ControllerSpec.parse`` reads, ``str(spec)`` writes). :func:`validate` is the
one check of a parsed spec: that what it names exists (app files, option
files, a Faucet YAML file, the POX checkout and its components), that a spec
the user chose is one a live session runs, and that a spec read from a trace
runs no code its reader did not choose. It returns the spec with every path
made absolute: the controller, a replay or the model checker may run from
another folder.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from netsleuth.controllers import pox
from netsleuth.controllers.faucet import check_yaml_file
from netsleuth.errors import ControllerError
from netsleuth.trace.controller_spec import (
    APP_KINDS,
    AUTO,
    FORMS,
    MODULE,
    PATH_OPTIONS,
    RUNNABLE,
    ControllerSpec,
    Kind,
    is_app_file,
    parse_all,
)

# ----------------------------------------------------------------------------- specs from traces
# A trace is a file people share.  Its header names the controller it was recorded
# with, and replaying it starts that controller: a ``cmd:`` spec there is a shell
# command chosen by whoever wrote the file.  So a spec read from a trace is run only
# when the user chose it: ``--controller`` (which replaces the header's) or
# ``--trust-trace-controller``.  ``osken:``/``ryu:`` specs name Python modules that
# os-ken imports, and they also take file paths and manager options (some load
# files of code), so a header's may name dotted module names and the flag
# options of :data:`_TRACE_SAFE_OPTIONS` only.  A ``pox:`` spec names components
# of the user's own POX checkout; a header's may give them options with plain
# values (addresses, numbers), never paths (controllers/pox.py).

# app:NAME or package.module:Class -- the in-process apps of the model checker
_APP = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]*(:[A-Za-z_][A-Za-z0-9_]*)?\Z")
_TRACE_SAFE_OPTIONS = frozenset({"--observe-links", "--verbose", "--explicit-drop", "--noexplicit-drop",
                                 "--install-lldp-flow", "--noinstall-lldp-flow"})


class UntrustedControllerError(ControllerError):
    """A trace's header asks to run a command the user did not choose."""


def validate(spec: ControllerSpec, *, source: str | None = None, trust: bool = False) -> ControllerSpec:
    """``spec`` checked and with its paths made absolute, or the :class:`ControllerError` that says why not.

    ``source`` None: the user chose the spec (``--controller``), so it must be
    one a live session runs.  Otherwise ``source`` names the trace it was read
    from, and unless ``trust`` (the user's ``--trust-trace-controller``) it may
    name module names, plain flags and POX options with plain values only,
    and no command.
    """
    if source is None:
        if spec.kind is Kind.APP and not spec.in_model and ":" in spec.name:  # nox:forwarding
            raise ControllerError(f"unknown controller kind '{spec.name.partition(':')[0]}'", f"use {FORMS}")
        if spec.kind not in RUNNABLE or spec.in_model:
            raise ControllerError(f"controller spec '{spec}' is not understood", f"use {FORMS}")
    elif not trust:
        _check_trusted(spec, source)
    if spec.kind in APP_KINDS:
        return replace(spec, apps=tuple(_app_path(a) for a in spec.apps),
                       options=tuple(_option_path(o) for o in spec.options))
    if spec.kind is Kind.FAUCET and spec.config != AUTO:
        path = Path(spec.config).expanduser().resolve()
        check_yaml_file(path)
        return replace(spec, config=str(path))
    if spec.kind is Kind.POX:
        pox.check_components(spec.command, pox.pox_home())
    return spec


def _check_trusted(spec: ControllerSpec, source: str) -> None:
    """Refuse what a spec from the trace ``source`` would run that its reader did not choose."""
    if spec.kind is Kind.CMD:
        raise UntrustedControllerError(
            f"{source} asks to run the command `{spec.to_text()[len('cmd:'):]}` as its controller; "
            "netsleuth does not run commands from a trace by itself",
            "pass --controller SPEC to choose the controller (e.g. the same command if you trust it), "
            "or --trust-trace-controller to run the trace's")
    if spec.kind in (Kind.APP, Kind.DEFINED) and not _APP.match(spec.name):
        raise UntrustedControllerError(f"{source} names the app '{spec.name}', which is not a module name",
                                       "use a trace recorded by netsleuth, or pass --controller")
    if spec.kind is Kind.POX:
        bad = pox.trace_safe(list(spec.command))
        if bad:
            raise UntrustedControllerError(
                f"{source} gives POX the option '{bad[0]}', which is not a plain flag or value",
                "pass --controller pox:... to choose the components yourself, or --trust-trace-controller "
                "if you trust the trace")
    if spec.kind in APP_KINDS:
        bad = [o for o in spec.options if o not in _TRACE_SAFE_OPTIONS]
        bad += [a for a in spec.apps if is_app_file(a) or not MODULE.match(a)]  # x.py is a file, not module x.py
        if bad:
            raise UntrustedControllerError(
                f"{source} names the {spec.kind} app or option '{bad[0]}', which is not a dotted module name "
                "or a plain flag", f"pass --controller {spec.kind}:APP to choose the app yourself, or "
                "--trust-trace-controller if you trust the trace")


def _app_path(app: str) -> str:
    if not is_app_file(app):
        return app
    path = Path(app).expanduser().resolve()
    if not path.is_file():
        raise ControllerError(f"app file {app} does not exist",
                              f"check the path (relative paths are from {Path.cwd()})")
    return str(path)


def _option_path(option: str) -> str:
    name, eq, value = option.partition("=")
    if name not in PATH_OPTIONS:
        return option
    path = Path(value).expanduser().resolve()
    if not path.exists():
        raise ControllerError(f"{name} {value}: no such file or folder",
                              f"check the path (relative paths are from {Path.cwd()})")
    return f"{name}{eq}{path}"


def parse_controller(text: str) -> ControllerSpec:
    """The user's ``--controller TEXT``, parsed and validated."""
    return validate(ControllerSpec.parse(text))


def check_trace_spec(text: str, source: str, *, trust: bool = False) -> ControllerSpec:
    """A spec read from ``source`` (a trace), parsed and validated under the trust rules above."""
    return validate(ControllerSpec.parse(text), source=source, trust=trust)


def as_spec(spec: str | ControllerSpec) -> ControllerSpec:
    """A spec given as text (the user's) or as a value already validated."""
    return spec if isinstance(spec, ControllerSpec) else parse_controller(spec)


def controllers_for_trace(header_controller: str, override: Sequence[str | ControllerSpec] | None, *,
                          trust: bool = False, source: str = "the trace") -> list[ControllerSpec]:
    """The controllers to run for a recorded trace; see the comment above.

    ``override`` (the user's ``--controller``) wins.  Otherwise every spec of
    the header is checked, and a ``cmd:`` one needs ``trust``.
    """
    if override:
        return [as_spec(s) for s in override]
    specs = [validate(s, source=source, trust=trust) for s in parse_all(header_controller)]
    if not specs:
        raise ControllerError(f"{source} names no controller", "pass --controller SPEC")
    return specs


__all__ = ["APP_KINDS", "FORMS", "ControllerSpec", "Kind", "UntrustedControllerError", "as_spec",
           "check_trace_spec", "controllers_for_trace", "parse_controller", "validate"]
