"""Loading users' app files in the controller environment: ``.py`` paths, the Ryu name, missing modules.

Run inside ``.venv-controller`` (imported by ``osken_main.py`` and
``osken_handler_server.py``, which sit beside it), so it imports only the
stdlib and os_ken, never netsleuth.

Three jobs, all done before os-ken's AppManager sees an app:

* **App files.**  ``/home/me/ctl/switch.py`` becomes the module ``switch``
  with ``/home/me/ctl`` at the front of ``sys.path`` for the whole run, as
  ``python switch.py`` would have it: apps import their helper modules
  (``from ofctl_utils import OfCtl``) long after os-ken's own file loader
  has put ``sys.path`` back.
* **Ryu's name.**  Ryu 4.34, its last release, no longer installs or runs on
  a current Python; os-ken is its maintained fork with the same modules
  under ``os_ken``.  An import hook serves every ``ryu.X`` as the very
  module object ``os_ken.X`` (so classes, events and the app registry are
  shared, not copied), and the handful of names os-ken renamed
  (``RyuApp`` -> ``OSKenApp``, ...) are added back as aliases.
* **Missing modules.**  An app that imports a part of Ryu that os-ken does
  not have (or any module the controller environment lacks) is found here,
  at start: one line starting with :data:`MISSING_MARK` names the module
  and the app, and the process exits with :data:`MISSING_EXIT`.  netsleuth
  turns that line into its own one-line error instead of pointing at a
  traceback in the controller's log.
"""

import importlib
import importlib.abc
import importlib.util
import os
import sys

MISSING_MARK = "netsleuth-app-import-error:"
MISSING_EXIT = 2

#: Names os-ken renamed from Ryu's, per module: the Ryu name -> the os-ken name.
RENAMED = {
    "os_ken.base.app_manager": {"RyuApp": "OSKenApp"},
    "os_ken.exception": {"RyuException": "OSKenException"},
    "os_ken.lib.ofctl_utils": {"ofp_ofctl_field_name_to_ryu": "ofp_ofctl_field_name_to_os_ken",
                               "nxm_field_name_to_ryu": "nxm_field_name_to_os_ken"},
    "os_ken.services.protocols.bgp.application": {"RyuBGPSpeaker": "OSKenBGPSpeaker"},
}


def osken_name(name):
    """``ryu.X`` -> ``os_ken.X`` (other names unchanged)."""
    if name == "ryu" or name.startswith("ryu."):
        return "os_ken" + name[3:]
    return name


def _add_renamed(module):
    for ryu_name, osken_attr in RENAMED.get(module.__name__, {}).items():
        if hasattr(module, osken_attr) and not hasattr(module, ryu_name):
            setattr(module, ryu_name, getattr(module, osken_attr))


class RyuAlias(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Serves ``ryu`` and ``ryu.*`` as the os-ken modules of the same path."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname != "ryu" and not fullname.startswith("ryu."):
            return None
        real = osken_name(fullname)
        try:
            module = importlib.import_module(real)
        except ModuleNotFoundError as exc:
            if exc.name == real:  # os-ken has no such module: let Python say "No module named 'ryu....'"
                return None
            raise
        spec = importlib.util.spec_from_loader(fullname, self, is_package=hasattr(module, "__path__"))
        spec.loader_state = module
        return spec

    def create_module(self, spec):
        return spec.loader_state  # the os-ken module itself: one object under both names

    def exec_module(self, module):
        _add_renamed(module)


_ALIAS = RyuAlias()


def install_ryu_alias():
    """Make ``import ryu...`` load os-ken (idempotent)."""
    if _ALIAS not in sys.meta_path:
        sys.meta_path.insert(0, _ALIAS)
    for name in list(RENAMED):
        mod = sys.modules.get(name)
        if mod is not None:
            _add_renamed(mod)
    # An app that declares ``require_app('ryu.topology.switches')`` must get the one os-ken
    # Switches app the manager loads for os_ken.topology, not a second instance under another name.
    from os_ken.base import app_manager

    if not getattr(app_manager.get_dependent_services, "_netsleuth_ryu", False):
        original = app_manager.get_dependent_services

        def get_dependent_services(cls):
            return [osken_name(s) for s in original(cls)]

        get_dependent_services._netsleuth_ryu = True
        app_manager.get_dependent_services = get_dependent_services
    _add_renamed(app_manager)


def module_names(apps, ryu=False):
    """App arguments (module names or ``.py`` paths) -> module names, with file apps' folders importable.

    Raises ValueError when two app files share a module name (Python can
    hold only one of them).
    """
    names = []
    folders = {}
    for app in apps:
        if app.endswith(".py") or os.sep in app:
            path = os.path.abspath(app)
            name = os.path.splitext(os.path.basename(path))[0]
            folder = os.path.dirname(path)
            if folders.get(name, folder) != folder:
                raise ValueError(f"two app files are both named {name}.py ({folders[name]} and {folder})")
            folders[name] = folder
            if folder not in sys.path:
                sys.path.insert(0, folder)
            names.append(name)
        else:
            names.append(osken_name(app) if ryu else app)
    return names


def find_import_error(names, label=None):
    """Import every app module now; the first one that cannot be imported -> (module, app, message).

    ``module`` is the module Python could not find (a part of Ryu os-ken
    lacks, a helper missing from the app's folder, the app itself) or, for
    ``from M import NAME`` of a name M lacks, M.  None when all import.
    """
    for name in names:
        try:
            importlib.import_module(name)
        except ImportError as exc:
            return exc.name or name, (label or {}).get(name, name), str(exc)
    return None


def marked_line(module, app, message):
    """The line netsleuth reads back from the controller's output (fields separated by tabs)."""
    flat = message.replace("\t", " ").replace("\n", " ")
    return f"{MISSING_MARK}\t{module}\t{app}\t{flat}"


def forget_launcher_dir(script):
    """Drop the launcher's own folder from ``sys.path``: netsleuth's files there are no app's modules."""
    here = os.path.dirname(os.path.abspath(script))
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != here]
