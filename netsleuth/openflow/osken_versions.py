"""os-ken's ``os_ken.ofproto`` package with only the OpenFlow versions a process uses.

Importing any module of ``os_ken.ofproto`` (``ofproto_v1_0_parser``, say) first runs the package's
``__init__``, and that imports ``ofproto_protocol``, which imports the constants and the parser of
every version os-ken has: 1.0, 1.2, 1.3, 1.4 and 1.5.  netsleuth speaks 1.0 and 1.3 and imports
those modules by name, so loading 1.2, 1.4 and 1.5 (about 30 ms of CPU) is pure cost, paid again by
every `netsleuth` process and every worker it starts.

:func:`defer_ofproto_init` makes the package's ``__init__`` run only when something asks for what it
defines (``get_ofp_modules``, ``get_ofp_module``): importing a version module by name then loads that
version alone, while anything that wants them all (os-ken's ``ofproto_protocol``, which the OVS
oracle imports) still gets them all by importing it.  The `netsleuth` command calls it before it
imports anything of os-ken; a library user's process is left as it is.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Sequence
from importlib.abc import Loader, MetaPathFinder
from importlib.machinery import ModuleSpec, PathFinder
from types import ModuleType
from typing import Any

PACKAGE = "os_ken.ofproto"


class _DeferredInit(Loader):
    """Creates the package module as its real loader would, but leaves its ``__init__`` to the
    first lookup of a name that is neither set on it nor one of its submodules."""

    def __init__(self, real: Loader) -> None:
        self.real = real

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)  # get_source, get_filename, is_package...: the real loader's

    def create_module(self, spec: ModuleSpec) -> ModuleType | None:
        return self.real.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        real = self.real

        def __getattr__(name: str) -> Any:  # noqa: N807 - a module's own attribute hook (PEP 562)
            if name.startswith("__") or importlib.util.find_spec(f"{PACKAGE}.{name}") is not None:
                # a submodule: the import system loads it by itself once this says it is not set yet
                raise AttributeError(name)
            del module.__dict__["__getattr__"]
            real.exec_module(module)  # the package's own __init__, at last
            return getattr(module, name)

        module.__dict__["__getattr__"] = __getattr__


class _Finder(MetaPathFinder):
    """Finds ``os_ken.ofproto`` where the path finder does, with :class:`_DeferredInit` as its loader."""

    def find_spec(self, fullname: str, path: Sequence[str] | None,
                  target: ModuleType | None = None) -> ModuleSpec | None:
        if fullname != PACKAGE:
            return None
        spec = PathFinder.find_spec(fullname, path)
        if spec is not None and spec.loader is not None:
            spec.loader = _DeferredInit(spec.loader)
        return spec


def defer_ofproto_init() -> None:
    """From now on, importing a module of ``os_ken.ofproto`` loads that module, not every version.

    Does nothing once ``os_ken.ofproto`` is imported (its ``__init__`` has run), or when called again."""
    if PACKAGE in sys.modules or any(isinstance(f, _Finder) for f in sys.meta_path):
        return
    sys.meta_path.insert(0, _Finder())
