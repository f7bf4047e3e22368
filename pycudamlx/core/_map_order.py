"""The key order of MLX's file dictionaries.

MLX 0.32.4 passes the arrays of ``savez``/``save_safetensors``/``save_gguf`` and the results of
``load`` through a C++ ``std::unordered_map<std::string, ...>``, so the order in which it
writes members and returns keys is that map's iteration order (GCC's libstdc++: the 64-bit
``std::hash<std::string>``, prime bucket counts, nodes in one list grouped by bucket, a new
bucket's first node pushed to the front). Programs that print ``mx.load(path)`` or iterate over
it see that order; ``map_order`` reproduces it from the order the keys were inserted in.
"""

from __future__ import annotations

from collections.abc import Iterable

_MASK = (1 << 64) - 1
_MUL = 0xC6A4A7935BD1E995
_SEED = 0xC70F6907
#: Bucket counts for small requests, then the primes the table grows through (each rehash asks
#: for at least twice the buckets and takes the next one here).
_FAST_BUCKETS = (2, 2, 2, 3, 5, 5, 7, 7, 11, 11, 11, 11, 13, 13)
_PRIMES = (13, 17, 19, 23, 29, 31, 37, 41, 43, 47, 53, 59, 61, 67, 71, 73, 79, 83, 89, 97, 103,
           109, 113, 127, 137, 139, 149, 157, 167, 179, 193, 199, 211, 227, 241, 257, 277, 293,
           313, 337, 359, 383, 409, 439, 467, 503, 541, 577, 619, 661, 709, 761, 823, 887, 953,
           1031, 1109, 1193, 1289, 1381, 1493, 1613, 1741, 1879, 2029, 2179, 2357, 2549, 2753,
           2971, 3209, 3469, 3739, 4027, 4349, 4703, 5087, 5503, 5953, 6427, 6949, 7517, 8123,
           8783, 9497, 10273, 11113, 12011, 12983, 14033, 15173, 16411, 17749, 19183, 20753,
           22447, 24281, 26267, 28411, 30727, 33223, 35933, 38873, 42043, 45481, 49201, 53201,
           57557, 62233, 67307, 72817, 78779, 85229, 92203, 99733)


def _shift_mix(v: int) -> int:
    return v ^ (v >> 47)


def string_hash(key: str) -> int:
    """libstdc++'s ``std::hash<std::string>`` on 64-bit Linux (``_Hash_bytes``, a MurmurHash2
    variant) of the UTF-8 bytes (a key that is no string, which the caller rejects later, by
    its ``str``)."""
    data = (key if isinstance(key, str) else str(key)).encode("utf-8", "surrogatepass")
    n = len(data)
    whole = n & ~7
    h = (_SEED ^ (n * _MUL)) & _MASK
    for i in range(0, whole, 8):
        word = (_shift_mix((int.from_bytes(data[i:i + 8], "little") * _MUL) & _MASK) * _MUL) & _MASK
        h = ((h ^ word) * _MUL) & _MASK
    if n & 7:
        h = ((h ^ int.from_bytes(data[whole:], "little")) * _MUL) & _MASK
    return _shift_mix((_shift_mix(h) * _MUL) & _MASK)


def _bucket_count(request: int) -> int:
    if request < len(_FAST_BUCKETS):
        return _FAST_BUCKETS[request]
    for p in _PRIMES:
        if p >= request:
            return p
    return request | 1   # beyond what any checkpoint holds; the order is then approximate


def map_order(keys: Iterable[str]) -> list[str]:
    """The iteration order of a default-constructed ``std::unordered_map`` after inserting
    ``keys`` in this order (a repeated key keeps its first place)."""
    head = object()                       # the list's before-begin node
    nxt: dict[object, object] = {head: None}
    before: dict[int, object] = {}        # bucket -> the node before its first node
    hashes: dict[object, int] = {}
    n_buckets, next_resize = 1, 0
    for key in keys:
        if key in hashes:
            continue
        h = hashes[key] = string_hash(key)
        count = len(hashes) - 1
        if count + 1 > next_resize:
            wanted = max(count + 1, 0 if next_resize else 11)
            if wanted >= n_buckets:
                n_buckets = _bucket_count(max(wanted + 1, 2 * n_buckets))
                next_resize = n_buckets
                node, nxt[head], before, first_bucket = nxt[head], None, {}, 0
                while node is not None:
                    following = nxt[node]
                    b = hashes[node] % n_buckets
                    if b in before:
                        prev = before[b]
                        nxt[node], nxt[prev] = nxt[prev], node
                    else:
                        nxt[node], nxt[head] = nxt[head], node
                        before[b] = head
                        if nxt[node] is not None:
                            before[first_bucket] = node
                        first_bucket = b
                    node = following
            else:
                next_resize = n_buckets
        b = h % n_buckets
        if b in before:
            prev = before[b]
            nxt[key], nxt[prev] = nxt[prev], key
        else:
            nxt[key], nxt[head] = nxt[head], key
            if nxt[key] is not None:
                before[hashes[nxt[key]] % n_buckets] = key
            before[b] = head
    out: list[str] = []
    node = nxt[head]
    while node is not None:
        out.append(node)  # type: ignore[arg-type]
        node = nxt[node]
    return out
