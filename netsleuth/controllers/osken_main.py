"""Entry point for os-ken (and Ryu) apps, run by the controller environment's Python.

This file is executed as a script by ``.venv-controller/bin/python`` and must
not import netsleuth: the controller under test never shares netsleuth's
dependencies. os-ken 1.4.1 (the last release with the sample apps) imports
``eventlet.wsgi.ALREADY_HANDLED``, which newer eventlet removed; defining it
before ``os_ken.cmd.manager`` is imported is the whole compatibility shim.

Called as ``osken_main.py [--ryu] --apps APP[,APP...] -- OSKEN-MANAGER-ARGS``
it first makes the apps loadable (``.py`` paths, Ryu's module names; see
``osken_apps.py``) and imports them, so that an app importing a module the
environment lacks stops the start with one marked line instead of a
traceback deep in os-ken's loader.  Called with os-ken manager arguments
only, it is ``osken-manager`` itself.
"""

import sys

import eventlet.wsgi

if not hasattr(eventlet.wsgi, "ALREADY_HANDLED"):
    eventlet.wsgi.ALREADY_HANDLED = object()

import osken_apps  # noqa: E402  (beside this file)
from os_ken.cmd.manager import main  # noqa: E402
from os_ken.lib import hub  # noqa: E402

osken_apps.forget_launcher_dir(__file__)


def launch(argv):
    """Run os-ken's manager for ``argv`` (this script's arguments)."""
    if "--apps" not in argv[:3]:
        return main(argv)
    ryu = argv[0] == "--ryu"
    cut = argv.index("--") if "--" in argv else len(argv)
    head, manager_args = argv[:cut], argv[cut + 1:]
    apps = [a for a in head[head.index("--apps") + 1].split(",") if a]
    if "--enable-debugger" not in manager_args:
        hub.patch(thread=True)  # as the manager does before it loads apps; they import under the patch
    if ryu:
        osken_apps.install_ryu_alias()
    try:
        names = osken_apps.module_names(apps, ryu=ryu)
    except ValueError as exc:
        print(osken_apps.marked_line("", ",".join(apps), str(exc)), flush=True)
        return osken_apps.MISSING_EXIT
    failed = osken_apps.find_import_error(names, dict(zip(names, apps, strict=True)))
    if failed is not None:
        print(osken_apps.marked_line(*failed), flush=True)
        return osken_apps.MISSING_EXIT
    return main(manager_args + names)


if __name__ == "__main__":
    sys.exit(launch(sys.argv[1:]))
