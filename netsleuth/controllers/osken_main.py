"""Entry point for os-ken apps, run by the controller environment's Python.

This file is executed as a script by ``.venv-controller/bin/python`` and must
not import netsleuth: the controller under test never shares netsleuth's
dependencies. os-ken 1.4.1 (the last release with the sample apps) imports
``eventlet.wsgi.ALREADY_HANDLED``, which newer eventlet removed; defining it
before ``os_ken.cmd.manager`` is imported is the whole compatibility shim.
"""

import sys

import eventlet.wsgi

if not hasattr(eventlet.wsgi, "ALREADY_HANDLED"):
    eventlet.wsgi.ALREADY_HANDLED = object()

from os_ken.cmd.manager import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
