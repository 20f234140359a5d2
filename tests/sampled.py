"""Strategies built once for composites that draw them many times: ``sample``, ``integers``, ``BOOLEANS``.

``sample(values)`` is ``st.sampled_from(values)``, one strategy object per distinct list of values.

Hypothesis does not cache ``st.sampled_from`` (its elements need not be hashable), so a
composite strategy that calls it on every draw builds, validates and labels a new strategy
each time -- most of the CPU of the property tests whose networks and frames make hundreds
of draws from the same few lists. Keyed by the values and their types (so ``1`` and ``True``
stay apart), the same strategy serves every draw: the choices and the values drawn are the
same as with a fresh ``st.sampled_from``.

Hypothesis does cache ``st.integers`` and ``st.booleans``, but each call still normalises its
arguments and looks them up in Hypothesis's own cache, which costs more than drawing a small
integer: ``integers(lo, hi)`` keeps Hypothesis's (same) object behind a plain ``lru_cache``, and
``BOOLEANS`` is the one ``st.booleans()``.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable

from hypothesis import strategies as st


def sample(values: Iterable) -> st.SearchStrategy:
    """``st.sampled_from(values)``, built once per distinct tuple of (hashable) values."""
    vals = tuple(values)
    return _sample((tuple(map(type, vals)), vals))


@functools.lru_cache(maxsize=4096)
def _sample(key: tuple) -> st.SearchStrategy:
    return st.sampled_from(key[1])


@functools.lru_cache(maxsize=4096)
def integers(min_value: int, max_value: int) -> st.SearchStrategy[int]:
    """``st.integers(min_value, max_value)``, looked up in a plain ``lru_cache``."""
    return st.integers(min_value, max_value)


BOOLEANS = st.booleans()
