"""MLX's CPU partition order: libstdc++'s ``std::nth_element`` (introselect), step for step.

MLX documents the order of ``partition``/``argpartition``/``topk`` results as unspecified, but
its CPU build always produces the same one: ``std::nth_element`` over the row with a NaN-aware
less-than (argpartition breaks ties by index). Programs do depend on it (top-k sampling draws
from the candidates in that order), so the CPU backend reproduces it. The elements are ranks
(integers that order as MLX's comparator does), so every comparison is an integer ``<``.
"""

from __future__ import annotations

import numpy as np


def row_ranks(keys: np.ndarray, unique: bool, complex_keys: bool = False) -> list[int]:
    """Integer ranks of a 1-D row of sort keys (numpy orders them as MLX, NaN last).

    ``unique``: ties broken by position (argpartition's comparator); otherwise equal values
    share a rank. NaNs always share the top rank: MLX's comparator says neither of two NaNs is
    smaller. ``complex_keys``: ``keys`` are sort_keys' uint64 keys of complex values."""
    n = keys.shape[0]
    order = np.argsort(keys, kind="stable")
    ranks = np.empty(n, np.int64)
    if complex_keys:
        nan = keys == np.uint64(2**64 - 1)  # sort_keys gives a complex NaN the largest key
    elif keys.dtype.kind == "f":
        nan = keys != keys
    else:
        nan = None
    if unique:
        ranks[order] = np.arange(n)
    else:
        s = keys[order]
        new = np.ones(n, dtype=bool)
        if n > 1:
            with np.errstate(invalid="ignore"):
                new[1:] = s[1:] != s[:-1]
        ranks[order] = np.cumsum(new)
    if nan is not None and nan.any():
        ranks[nan] = n + 1
    return ranks.tolist()


def nth_element(rk: list[int], nth: int) -> list[int]:
    """The positions of the row rearranged by ``std::nth_element(first, first + nth, last)``
    under ``rk[a] < rk[b]``."""
    it = list(range(len(rk)))
    first, last = 0, len(it)
    if first == last or nth == last:
        return it
    depth = 2 * ((last - first).bit_length() - 1)
    while last - first > 3:
        if depth == 0:
            _heap_select(it, rk, first, nth + 1, last)
            it[first], it[nth] = it[nth], it[first]
            return it
        depth -= 1
        # __unguarded_partition_pivot: the median of (first + 1, mid, last - 1) moves to first
        a, b, c = first + 1, first + (last - first) // 2, last - 1
        ra, rb, rc = rk[it[a]], rk[it[b]], rk[it[c]]
        if ra < rb:
            m = b if rb < rc else (c if ra < rc else a)
        else:
            m = a if ra < rc else (c if rb < rc else b)
        it[first], it[m] = it[m], it[first]
        pivot = rk[it[first]]
        lo, hi = first + 1, last
        while True:
            while rk[it[lo]] < pivot:
                lo += 1
            hi -= 1
            while pivot < rk[it[hi]]:
                hi -= 1
            if not lo < hi:
                break
            it[lo], it[hi] = it[hi], it[lo]
            lo += 1
        if lo <= nth:
            first = lo
        else:
            last = lo
    _insertion_sort(it, rk, first, last)
    return it


def _insertion_sort(it: list[int], rk: list[int], first: int, last: int) -> None:
    for i in range(first + 1, last):
        val = it[i]
        r = rk[val]
        if r < rk[it[first]]:
            it[first + 1:i + 1] = it[first:i]
            it[first] = val
        else:
            j = i
            while r < rk[it[j - 1]]:
                it[j] = it[j - 1]
                j -= 1
            it[j] = val


def _adjust_heap(it: list[int], rk: list[int], first: int, hole: int, length: int,
                 value: int) -> None:
    top = child = hole
    while child < (length - 1) // 2:
        child = 2 * (child + 1)
        if rk[it[first + child]] < rk[it[first + child - 1]]:
            child -= 1
        it[first + hole] = it[first + child]
        hole = child
    if length % 2 == 0 and child == (length - 2) // 2:
        child = 2 * (child + 1)
        it[first + hole] = it[first + child - 1]
        hole = child - 1
    parent = (hole - 1) // 2
    while hole > top and rk[it[first + parent]] < rk[value]:
        it[first + hole] = it[first + parent]
        hole = parent
        parent = (hole - 1) // 2
    it[first + hole] = value


def _heap_select(it: list[int], rk: list[int], first: int, middle: int, last: int) -> None:
    """The depth-limit fallback: a max-heap of the first ``middle - first`` elements."""
    length = middle - first
    if length >= 2:
        parent = (length - 2) // 2
        while True:
            _adjust_heap(it, rk, first, parent, length, it[first + parent])
            if parent == 0:
                break
            parent -= 1
    for i in range(middle, last):
        if rk[it[i]] < rk[it[first]]:
            value = it[i]
            it[i] = it[first]
            _adjust_heap(it, rk, first, 0, length, value)
