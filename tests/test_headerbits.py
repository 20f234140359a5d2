"""Interned keys read as numpy columns (``headerbits.key_field``) must equal the fields
taken from the Python ints, whatever the order of interning and reading, including keys
interned before a column was first read, columns outgrowing their room, and keys that
reached the interner without their packed words."""

from __future__ import annotations

import random

from netsleuth.model.headerbits import FIELD_MASK, SHIFT_BY_NAME, intern_new, interner, key_field, pack
from netsleuth.model.match import FIELDS, FULL_MASKS

NAMES = FIELDS[1:]


def _expected(mask: int, name: str) -> list[int]:
    off, full = SHIFT_BY_NAME[name], FULL_MASKS[FIELDS.index(name)]
    return [(k >> off) & full for k in interner(mask)[1]]


def _random_key(rng: random.Random, mask: int) -> int:
    return rng.getrandbits(248) & mask


def _check_all(mask: int) -> None:
    for name in NAMES:
        col = key_field(mask, name)
        assert col.tolist() == _expected(mask, name), name
        assert not col.flags.writeable


def test_every_field_of_every_key_equals_the_int_arithmetic():
    rng = random.Random(7)
    # every field fixed, values up to each field's full width (dl_dst straddles two words)
    mask = pack([0] + [FULL_MASKS[i] for i in range(1, 12)])
    assert mask == sum(FIELD_MASK.values())
    intern = interner(mask)[0]
    for _ in range(50):
        k = _random_key(rng, mask)
        if k not in intern:
            intern_new(mask, k)
    _check_all(mask)
    # grow past the first room (1024 rows) and past doubling, reading in between
    for n in (900, 300, 2500):
        for _ in range(n):
            k = _random_key(rng, mask)
            if k not in intern:
                intern_new(mask, k)
        _check_all(mask)
    # extreme values: all ones and all zeros in every field
    for k in (mask, 0):
        if k not in intern:
            intern_new(mask, k)
    _check_all(mask)


def test_keys_interned_without_their_words_are_caught_up():
    rng = random.Random(11)
    # a pattern of its own (dl_src, dl_dst and tp_dst), so that other tests' keys do not mix in
    mask = FIELD_MASK["dl_src"] | FIELD_MASK["dl_dst"] | FIELD_MASK["tp_dst"]
    intern, keys = interner(mask)
    for _ in range(10):
        intern_new(mask, _random_key(rng, mask))
    first = key_field(mask, "dl_dst")
    for _ in range(5):  # interned another way: ids and ints only
        k = _random_key(rng, mask)
        intern[k] = len(keys)
        keys.append(k)
    for _ in range(5):  # and the usual way again, while the words lag behind
        intern_new(mask, _random_key(rng, mask))
    _check_all(mask)
    # a column read before keeps its values (the room it shares is only appended to)
    assert first.tolist() == _expected(mask, "dl_dst")[:10]
