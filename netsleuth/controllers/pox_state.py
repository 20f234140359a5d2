"""The POX handler server's state machinery: the canonical freeze of POX's world, its pickling.

Beside ``pox_handler_server.py`` and, like it, importing only the standard
library and ``handler_protocol`` (the server runs it as the top-level module ``pox_state``).  The
server's docstring says what a state is and why it is pickled; this module
says how: infrastructure travels by name (persistent ids), recoco tasks
without their generators, functions and classes pickle cannot name by
number, and the key leaves out the counters POX hands ids out from.
"""

import logging
import pickle
import sys
import types

from handler_protocol import PROTOCOL  # beside this file

#: pox.lib.recoco.recoco once the server imported it (its BaseTask is what a task is).
RECOCO = None


def task_reduce(task):
    """A recoco task without its generator (which cannot be pickled): a new one is made on load."""
    return _task_load, (type(task), {k: v for k, v in vars(task).items() if k != "gen"})


def _task_load(cls, attrs):
    task = cls.__new__(cls)
    vars(task).update(attrs)
    task.gen = task.run()
    return task




# ---------------------------------------------------------------- canonical keys
_SKIP_ATTRS = frozenset({"_xid", "idle_time"})
_TASK_SKIP = _SKIP_ATTRS | {"gen", "id"}  # a recoco task's generator and its number (a counter's)
_NOT_ATOM = object()


class Freezer:
    """A hashable, canonical form of the POX world (see the module docstring).

    Objects are frozen once and referred to by number afterwards (the world
    has cycles: a connection's listeners are methods of objects that hold
    the connection); dicts and sets are sorted; infrastructure is named.
    """

    def __init__(self, names):
        self.names = names
        self.seen = {}

    def __call__(self, v, depth=0):
        atom = self.atom(v)
        if atom is not _NOT_ATOM:
            return atom
        t = type(v)
        if depth > 200:
            return ("deep", t.__qualname__)
        d = depth + 1
        if t is types.MethodType:
            return ("method", v.__func__.__qualname__, self(v.__self__, d))
        if isinstance(v, (list, tuple)):
            return tuple(self(x, d) for x in v)
        if isinstance(v, (bytearray, memoryview)):
            return bytes(v)
        ref = self.seen.get(id(v))
        if ref is not None:
            return ("ref", ref)
        self.seen[id(v)] = len(self.seen)
        if isinstance(v, dict):
            items = [(self(k, d), self(x, d)) for k, x in v.items()]
            items.sort(key=_sort_key)
            return ("d", t.__qualname__, tuple(items))
        if isinstance(v, (set, frozenset)):
            items = sorted((self(x, d) for x in v), key=_sort_key)
            return ("s", tuple(items))
        return self.object(v, d)

    def atom(self, v):
        """What is frozen without looking inside: plain values, infrastructure, code, addresses."""
        t = type(v)
        if v is None or t in (bool, int, float, str, bytes):
            return v
        name = self.names.get(id(v))
        if name is not None:
            return ("infra", name)
        if t in (types.FunctionType, types.BuiltinFunctionType) or isinstance(v, type):
            return ("fn", getattr(v, "__module__", "?"), getattr(v, "__qualname__", repr(v)))
        if isinstance(v, types.ModuleType):
            return ("module", v.__name__)
        if isinstance(v, logging.Logger):
            return ("logger", v.name)
        if t.__name__ in ("EthAddr", "IPAddr"):
            return (t.__qualname__, str(v))
        return _NOT_ATOM

    def object(self, v, d):
        """An object by its class and attributes (``__dict__`` or slots), listeners without their ids."""
        t = type(v)
        attrs = getattr(v, "__dict__", None)
        if attrs is None:
            slots = [s for c in t.__mro__ for s in getattr(c, "__slots__", ())]
            attrs = {s: getattr(v, s) for s in slots if hasattr(v, s)}
            if not attrs:
                return (t.__module__ + "." + t.__qualname__, repr(v))
        fields = []
        skip = _TASK_SKIP if RECOCO is not None and isinstance(v, RECOCO.BaseTask) else _SKIP_ATTRS
        for k in sorted(attrs):
            if k in skip:
                continue
            x = attrs[k]
            fields.append((k, self.handlers(x, d) if k == "_eventMixin_handlers" else self(x, d)))
        return (t.__module__ + "." + t.__qualname__, tuple(fields))

    def handlers(self, table, depth=0):
        """An EventMixin's listeners, {event: [(priority, handler, once, eid)]}, without the eids (a counter's)."""
        items = [(self(e, depth), tuple((p, self(h, depth), once) for p, h, once, _ in hs))
                 for e, hs in table.items()]
        items.sort(key=_sort_key)
        return ("handlers", tuple(items))


def _sort_key(x):
    return (type(x).__name__, repr(x))


# ---------------------------------------------------------------- pickling with infrastructure by name
class StatePickler(pickle.Pickler):
    def __init__(self, f, names, functions):
        super().__init__(f, protocol=PROTOCOL)
        self.names = names
        self.functions = functions

    def reducer_override(self, obj):
        if RECOCO is not None and isinstance(obj, RECOCO.BaseTask):
            return task_reduce(obj)
        return NotImplemented

    def persistent_id(self, obj):
        name = self.names.get(id(obj))
        if name is not None:
            return ("infra", name)
        if isinstance(obj, types.ModuleType):
            return ("module", obj.__name__)
        if type(obj) is types.FunctionType and "<" in obj.__qualname__ and obj.__closure__ is None:
            # A lambda or a nested function (l2_multi's defaultdict factories), which pickle cannot name:
            # kept alive in the server and named by number.  Without a closure it holds no state.
            return ("function", self.functions.add(obj))
        if isinstance(obj, type) and not _findable(obj):
            # A class stored under another name (discovery's namedtuple LLDPSenderItem): the same, by number.
            return ("function", self.functions.add(obj))
        return None


def _findable(cls):
    """Can pickle name this class (its module holds it under its qualified name)?"""
    target = sys.modules.get(cls.__module__)
    for part in cls.__qualname__.split("."):
        target = getattr(target, part, None)
    return target is cls


class FunctionTable:
    """Functions and classes pickle cannot name, by number; each stays alive (its number valid) for the server."""

    def __init__(self):
        self.by_id = {}
        self.by_name = {}

    def add(self, fn):
        name = self.by_id.get(id(fn))
        if name is None:
            name = self.by_id[id(fn)] = len(self.by_name)
            self.by_name[name] = fn
        return name


class StateUnpickler(pickle.Unpickler):
    def __init__(self, f, objects, functions):
        super().__init__(f)
        self.objects = objects
        self.functions = functions

    def persistent_load(self, pid):
        kind, name = pid
        if kind == "module":
            return sys.modules[name]
        if kind == "function":
            return self.functions.by_name[name]
        return self.objects[name]
