"""Python's cyclic garbage collector paused while a job builds big data that makes no cycles.

The header-space engines and the race detector make millions of small objects (lists, ints,
races) and no cycle among them, yet every full collection scans every tracked object made
so far: at FatTree K=16 that was a third of a cold check, and on the largest race traces a
quarter of the detection.  Acyclic data is freed by reference counting alone, so pausing the
collector loses nothing; a job that does make cycles must break them itself (or not pause).
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def gc_paused() -> Iterator[None]:
    """Python's cyclic collector off for a while; back on (if it was) afterwards, and running
    as usual then.

    What the pause made is mostly the job's results, kept a while: on the way out it joins
    the oldest generation at once (``gc.freeze`` then ``gc.unfreeze``, two list splices), as
    it would after surviving two collections, instead of being scanned by the first young
    collection after the pause (a tenth of a cold 1.3 check at FatTree K=8) and the next
    middle one.  Only a pause at the outermost level does so.  Nothing is kept alive that
    would be freed otherwise: reference counting frees what is dropped, and full collections
    still see the moved objects.  But moved objects do not count towards the next full
    collection, so a cycle among them that later becomes garbage waits for one that other
    objects bring about: what a paused job keeps must hold no cycle (an exploration hop
    lets go of its parent when it dies; the short road does not point back at its net)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.freeze()
            gc.unfreeze()
            gc.enable()
