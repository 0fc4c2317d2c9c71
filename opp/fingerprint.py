"""farmhash's Fingerprint64 (the `na` variant's Hash64, seed 81), which TF's
StringToHashBucketFast and StaticVocabularyTable's out-of-vocabulary buckets use: 64-bit
arithmetic on little-endian words, modulo 2**64."""

from __future__ import annotations

MASK = (1 << 64) - 1
K0, K1, K2 = 0xC3A5C85C97CB3127, 0xB492B66FBE98F273, 0x9AE16A3B2F90404F


def _word(data: bytes, at: int) -> int:
    return int.from_bytes(data[at:at + 8], "little")


def _half(data: bytes, at: int) -> int:
    return int.from_bytes(data[at:at + 4], "little")


def _rotate(value: int, shift: int) -> int:
    return value if shift == 0 else ((value >> shift) | (value << (64 - shift))) & MASK


def _shift_mix(value: int) -> int:
    return value ^ (value >> 47)


def _mix16(u: int, v: int, mul: int) -> int:
    a = ((u ^ v) * mul) & MASK
    a ^= a >> 47
    b = ((v ^ a) * mul) & MASK
    b ^= b >> 47
    return (b * mul) & MASK


def _upto16(data: bytes) -> int:
    n = len(data)
    if n >= 8:
        mul = K2 + n * 2
        a = (_word(data, 0) + K2) & MASK
        b = _word(data, n - 8)
        c = (_rotate(b, 37) * mul + a) & MASK
        d = ((_rotate(a, 25) + b) * mul) & MASK
        return _mix16(c, d, mul)
    if n >= 4:
        mul = K2 + n * 2
        return _mix16(n + (_half(data, 0) << 3), _half(data, n - 4), mul)
    if n > 0:
        y = (data[0] + (data[n >> 1] << 8)) & 0xFFFFFFFF
        z = (n + (data[n - 1] << 2)) & 0xFFFFFFFF
        return (_shift_mix(((y * K2) ^ (z * K0)) & MASK) * K2) & MASK
    return K2


def _upto32(data: bytes) -> int:
    n = len(data)
    mul = K2 + n * 2
    a = (_word(data, 0) * K1) & MASK
    b = _word(data, 8)
    c = (_word(data, n - 8) * mul) & MASK
    d = (_word(data, n - 16) * K2) & MASK
    return _mix16((_rotate((a + b) & MASK, 43) + _rotate(c, 30) + d) & MASK,
                  (a + _rotate((b + K2) & MASK, 18) + c) & MASK, mul)


def _upto64(data: bytes) -> int:
    n = len(data)
    mul = K2 + n * 2
    a = (_word(data, 0) * K2) & MASK
    b = _word(data, 8)
    c = (_word(data, n - 8) * mul) & MASK
    d = (_word(data, n - 16) * K2) & MASK
    y = (_rotate((a + b) & MASK, 43) + _rotate(c, 30) + d) & MASK
    z = _mix16(y, (a + _rotate((b + K2) & MASK, 18) + c) & MASK, mul)
    e = (_word(data, 16) * mul) & MASK
    f = _word(data, 24)
    g = ((y + _word(data, n - 32)) * mul) & MASK
    h = ((z + _word(data, n - 24)) * mul) & MASK
    return _mix16((_rotate((e + f) & MASK, 43) + _rotate(g, 30) + h) & MASK,
                  (e + _rotate((f + a) & MASK, 18) + g) & MASK, mul)


def _weak32(data: bytes, at: int, a: int, b: int):
    w, x, y, z = (_word(data, at + 8 * i) for i in range(4))
    a = (a + w) & MASK
    b = _rotate((b + a + z) & MASK, 21)
    c = a
    a = (a + x + y) & MASK
    b = (b + _rotate(a, 44)) & MASK
    return (a + z) & MASK, (b + c) & MASK


def fingerprint64(data: bytes) -> int:
    """Fingerprint64 of `data`, an unsigned 64-bit int."""
    n = len(data)
    if n <= 16:
        return _upto16(data)
    if n <= 32:
        return _upto32(data)
    if n <= 64:
        return _upto64(data)
    seed = 81
    x = seed
    y = (seed * K1 + 113) & MASK
    z = (_shift_mix((y * K2 + 113) & MASK) * K2) & MASK
    v, w = (0, 0), (0, 0)
    x = (x * K2 + _word(data, 0)) & MASK
    end = ((n - 1) // 64) * 64
    last = end + ((n - 1) & 63) - 63
    at = 0
    while True:
        x = (_rotate((x + y + v[0] + _word(data, at + 8)) & MASK, 37) * K1) & MASK
        y = (_rotate((y + v[1] + _word(data, at + 48)) & MASK, 42) * K1) & MASK
        x ^= w[1]
        y = (y + v[0] + _word(data, at + 40)) & MASK
        z = (_rotate((z + w[0]) & MASK, 33) * K1) & MASK
        v = _weak32(data, at, (v[1] * K1) & MASK, (x + w[0]) & MASK)
        w = _weak32(data, at + 32, (z + w[1]) & MASK, (y + _word(data, at + 16)) & MASK)
        z, x = x, z
        at += 64
        if at == end:
            break
    mul = K1 + ((z & 0xFF) << 1)
    at = last
    w = ((w[0] + ((n - 1) & 63)) & MASK, w[1])
    v = ((v[0] + w[0]) & MASK, v[1])
    w = ((w[0] + v[0]) & MASK, w[1])
    x = (_rotate((x + y + v[0] + _word(data, at + 8)) & MASK, 37) * mul) & MASK
    y = (_rotate((y + v[1] + _word(data, at + 48)) & MASK, 42) * mul) & MASK
    x ^= (w[1] * 9) & MASK
    y = (y + v[0] * 9 + _word(data, at + 40)) & MASK
    z = (_rotate((z + w[0]) & MASK, 33) * mul) & MASK
    v = _weak32(data, at, (v[1] * mul) & MASK, (x + w[0]) & MASK)
    w = _weak32(data, at + 32, (z + w[1]) & MASK, (y + _word(data, at + 16)) & MASK)
    z, x = x, z
    return _mix16((_mix16(v[0], w[0], mul) + _shift_mix(y) * K0 + z) & MASK,
                  (_mix16(v[1], w[1], mul) + x) & MASK, mul)
