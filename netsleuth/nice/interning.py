"""The model checker's identity caches and state-hash terms (see state.py's docstring).

The same few packets, messages and queues sit in the queues of thousands of states, so their
hashes, the queues made by popping and pushing them, and the hash terms of those queues are
kept by object identity and found again by it; every cache is bounded (:func:`remember`) and a
miss only costs recomputation, so no result depends on what is cached.  :func:`mix` is the
finalizer every term of the incremental state hash goes through.
"""

from __future__ import annotations

from typing import Any

# Hashes of queued packets, messages and whole queues, cached by object identity.  A
# frozen dataclass (Packet, FlowMod, PacketIn) rehashes all of its nested fields on every
# call, and the same few objects sit in the queues of thousands of states.  An entry keeps
# its object alive, so an id is never reused while it is cached; the caches are emptied
# when they grow large, which only costs recomputation (a hash never depends on them).
_CACHE_LIMIT = 1 << 16


def remember(cache: dict, key: Any, entry: Any) -> None:
    """Store ``entry`` under ``key`` in one of the search's caches, emptying the cache first
    when it has grown large (which only costs recomputation).  The identity-keyed caches store
    an entry holding every object whose id is in the key, so none of those ids can be reused
    while it is cached: a key found again names the same objects."""
    if len(cache) >= _CACHE_LIMIT:
        cache.clear()
    cache[key] = entry
_OBJ_HASH: dict[int, tuple[Any, int]] = {}
_QUEUE_TERM: dict[int, tuple[tuple, str, Any, int]] = {}


def obj_hash(obj: Any) -> int:
    """``hash(obj)``, cached by identity (for the frozen messages and packets queued everywhere)."""
    e = _OBJ_HASH.get(id(obj))
    if e is not None and e[0] is obj:
        return e[1]
    h = hash(obj)
    remember(_OBJ_HASH, id(obj), (obj, h))
    return h


def queue_term(kind: str, slot: Any, q: tuple) -> int:
    """The state-hash term of queue ``q`` at ``(kind, slot)``: 0 when empty, cached by identity.

    ``kind`` "q" is a wire queue ``((packet, tag), ...)`` at ``slot`` = (node, port); "c" and
    "w" are the control channel queues ``(message, ...)`` to and from switch number ``slot``.
    """
    if not q:
        return 0
    e = _QUEUE_TERM.get(id(q))
    if e is not None and e[0] is q and e[1] == kind and e[2] == slot:
        return e[3]
    if kind == "q":
        content = tuple([hash((obj_hash(frame), tag)) for frame, tag in q])
    else:
        content = tuple([obj_hash(msg) for msg in q])
    t = mix(hash((kind, slot, content)))
    remember(_QUEUE_TERM, id(q), (q, kind, slot, t))
    return t


# Queues are immutable tuples, so popping a head or pushing a tail makes a new one.  Made
# afresh every time, a queue would be a new object in every state, its term (above) missed
# by identity and recomputed from its contents.  The same few queues recur in thousands of
# states, so a pop or push of the same queue and item returns the same object every time:
# its term is then computed once.  Entries keep their objects alive (ids are not reused
# while cached) and are checked by identity; a miss only builds the tuple afresh, so the
# result never depends on what is cached.
_TAIL: dict[int, tuple[tuple, tuple]] = {}
_PUSHED: dict[tuple[int, int, int], tuple[tuple, Any, Any, tuple]] = {}


def tail(q: tuple) -> tuple:
    """``q[1:]``, the same object for the same ``q`` (see above)."""
    e = _TAIL.get(id(q))
    if e is not None and e[0] is q:
        return e[1]
    t = q[1:]
    remember(_TAIL, id(q), (q, t))
    return t


def pushed(q: tuple, item: Any, slot: Any) -> tuple:
    """``q + (item,)`` for the queue at ``slot``, the same object for the same ``q``, item and slot.

    ``item`` and ``slot`` are matched by identity (the messages and packets queued are shared
    objects; slots are the model's own port tuples and indices): a queue object then sits in
    one slot, where its cached term is.
    """
    k = (id(q), id(item), id(slot))
    e = _PUSHED.get(k)
    if e is not None and e[0] is q and e[1] is item and e[2] is slot:
        return e[3]
    n = q + (item,)
    remember(_PUSHED, k, (q, item, slot, n))
    return n


_PUSHED_FRAME: dict[tuple[int, int, int], tuple[tuple, Any, Any, Any, tuple]] = {}


def pushed_frame(q: tuple, frame: Any, tag: Any, where: Any) -> tuple:
    """``q + ((frame, tag),)`` for the wire queue at ``where``, shared as :func:`pushed` does.

    ``q``, ``frame`` and ``where`` are matched by identity and ``tag`` (a packet's lineage,
    rebuilt by every switch step but equal from one search branch to the next) by value: the
    pushed queue is then one object however often the same push recurs, so its hash term is
    found by identity too.  A different tag at the same key only replaces the entry.
    """
    k = (id(q), id(frame), id(where))
    e = _PUSHED_FRAME.get(k)
    if e is not None and e[0] is q and e[1] is frame and e[2] is where and (e[3] is tag or e[3] == tag):
        return e[4]
    n = q + ((frame, tag),)
    remember(_PUSHED_FRAME, k, (q, frame, where, tag, n))
    return n


_QUEUE_DELTA: dict[tuple[int, int], tuple[tuple, tuple, str, Any, int]] = {}


def queue_delta(kind: str, slot: Any, q: tuple, r: tuple) -> int:
    """``queue_term(kind, slot, q) - queue_term(kind, slot, r)``: a queue ``r`` replaced by ``q``,
    cached by the identity of both (interned queues make the same replacements recur)."""
    k = (id(q), id(r))
    e = _QUEUE_DELTA.get(k)
    if e is not None and e[0] is q and e[1] is r and e[2] == kind and e[3] == slot:
        return e[4]
    d = queue_term(kind, slot, q) - queue_term(kind, slot, r)
    remember(_QUEUE_DELTA, k, (q, r, kind, slot, d))
    return d


_MASK = (1 << 64) - 1


def mix(x: int) -> int:
    """``x`` through SplitMix64's finalizer: every term of the state hash goes through it.

    A sum of raw tuple hashes is not enough: CPython's tuple hash ends in a
    multiplication, which is linear modulo 2^64, so the sums of two states that swap
    component values between slots collided (seen: packets on two wires); the
    finalizer's shifts break that structure.
    """
    z = x & _MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
    return z ^ (z >> 31)


_APP_TERM: dict[int, int] = {}


def app_term(app_hash: int) -> int:
    """The app's term of the state hash, from the hash of its key (cached: a few hundred app
    states recur in every search)."""
    t = _APP_TERM.get(app_hash)
    if t is None:
        t = mix(hash(("a", app_hash)))
        remember(_APP_TERM, app_hash, t)
    return t


_SMALL_TERM: dict[int, tuple[Any, str, int]] = {}
_MIXED: dict[int, int] = {}


def small_term(kind: str, value: tuple) -> int:
    """``mix(hash((kind, value)))``: the term of a state's property states (``"p"``), timers
    (``"t"``) or strategy state (``"x"``), cached by the identity of ``value`` (a state's
    children share its tuple, so each parent's term is computed once).  A new tuple is
    mostly an old value (the property states recur from path to path), so the mixed term
    is also kept by the hash, which spares :func:`mix` its integer arithmetic."""
    e = _SMALL_TERM.get(id(value))
    if e is not None and e[0] is value and e[1] == kind:
        return e[2]
    h = hash((kind, value))
    t = _MIXED.get(h)
    if t is None:
        t = mix(h)
        remember(_MIXED, h, t)
    remember(_SMALL_TERM, id(value), (value, kind, t))
    return t


def forget() -> None:
    """Empty every cache above.  A finished search calls it: the caches keep the packets, queues
    and states of the search alive, and a process that goes on to other work (a test session,
    a campaign worker) would carry them, and scan them at every full garbage collection."""
    for cache in (_OBJ_HASH, _QUEUE_TERM, _TAIL, _PUSHED, _PUSHED_FRAME, _QUEUE_DELTA, _APP_TERM, _SMALL_TERM,
                  _MIXED):
        cache.clear()
