"""FieldLayout finds the fields a mask has bits in from its top bit down: the same fields, in the same
order, as a shift of the mask per field of the layout, on both header layouts (1.0 and 1.3)."""

from __future__ import annotations

import random

import pytest

from netsleuth.invariants.headerspace.of13.space import HS13
from netsleuth.invariants.headerspace.space import FieldLayout, HeaderSpace


@pytest.mark.parametrize("hs", [HeaderSpace, HS13], ids=["1.0", "1.3"])
def test_fields_from_the_top_bit_are_the_fields_a_shift_per_field_finds(hs: type) -> None:
    layout = FieldLayout.of(hs.SHIFTS, hs.FULLS)
    assert layout is not None
    rng = random.Random(7)
    names = list(hs.SHIFTS)
    for _ in range(3000):
        if rng.random() < 0.5:   # a few whole or partial fields, bits beside their full masks too
            m = 0
            for name in rng.sample(names, rng.randint(0, 4)):
                full = hs.FULLS[name]
                m |= (full if rng.random() < 0.6 else rng.getrandbits(full.bit_length() + 2)) << hs.SHIFTS[name]
            m &= (1 << hs.WIDTH) - 1
        else:
            m = rng.getrandbits(hs.WIDTH)
        want = sorted(((sh, name) for name, sh in hs.SHIFTS.items() if (m >> sh) & hs.FULLS[name]), reverse=True)
        assert [(sh, name) for _k, name, sh, _full in layout.fields_in(m)] == want, hex(m)


def test_overlapping_fields_have_no_layout() -> None:
    assert FieldLayout.of({"a": 0, "b": 4}, {"a": 0xFF, "b": 0xF}) is None
    assert FieldLayout.of({"a": 0, "b": 8}, {"a": 0xFF, "b": 0xF}) is not None
