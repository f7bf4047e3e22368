"""Checks that run inside every rank of a multi-process mx.distributed job (started by
tests/test_distributed_mpi.py through `pycudamlx launch -n N`): each rank rebuilds every rank's
input from a seed, so it can compute what every collective must return with numpy. A failed
check raises, which ends the whole job (MPI_Abort) with a non-zero status; the last line of
each rank is "rank R of N: K checks passed".

Usage: distributed_cases.py [collectives|autodiff|nn|all]
"""

from __future__ import annotations

import sys
import zlib

import numpy as np

import pycudamlx.core as mx
import pycudamlx.nn as nn
import pycudamlx.optimizers as optim
from pycudamlx.utils import tree_flatten

WORLD = mx.distributed.init()
RANK, SIZE = WORLD.rank(), WORLD.size()
DTYPES = ("float32", "float16", "bfloat16", "float64", "int8", "int16", "int32", "int64",
          "uint8", "uint16", "uint32", "uint64", "bool", "complex64")
NATIVE_FLOAT = ("float32", "float64", "complex64")
SHAPES = ((5,), (3, 4), (), (0, 3), (2, 1, 3), (1031,))
checks = 0


def check(ok: bool, what: str) -> None:
    global checks
    if not ok:
        raise AssertionError(f"rank {RANK}: {what}")
    checks += 1


def host(dtype: str, shape: tuple, rank: int) -> np.ndarray:
    """Rank ``rank``'s input: the same on every rank that rebuilds it."""
    rng = np.random.default_rng(zlib.crc32(f"{dtype}{shape}{rank}".encode()))
    if dtype == "bool":
        return rng.random(shape) > 0.5
    if dtype == "complex64":
        return (rng.integers(-8, 8, shape) + 1j * rng.integers(-8, 8, shape)).astype(np.complex64)
    if dtype.startswith(("int", "uint")):
        return rng.integers(0, 120, shape).astype(dtype)
    return (rng.standard_normal(shape) * 4).astype(np.float32)


def ours(dtype: str, shape: tuple, rank: int) -> mx.array:
    return mx.array(host(dtype, shape, rank)).astype(getattr(mx, dtype if dtype != "bool"
                                                            else "bool_"))


def as_np(a: mx.array) -> np.ndarray:
    return np.array(a.astype(mx.float32)) if a.dtype == mx.bfloat16 else np.array(a)


def fold(parts: list, op) -> np.ndarray:
    acc = parts[0]
    for p in parts[1:]:
        acc = op(acc, p)
    return acc


def expected(name: str, dtype: str, shape: tuple) -> np.ndarray:
    """What MLX returns: the reduction folded in rank order, each step rounded to the dtype."""
    parts = [as_np(ours(dtype, shape, r)) if dtype in ("float16", "bfloat16")
             else np.array(ours(dtype, shape, r)) for r in range(SIZE)]
    if dtype == "bfloat16":  # each partial sum rounded to bfloat16, as MLX's reduction does
        parts = [np.array(mx.array(p).astype(mx.bfloat16)) for p in parts]
    if name == "all_gather":
        return np.stack(parts) if not shape else np.concatenate(parts, 0)
    if name in ("all_sum", "sum_scatter"):
        if dtype == "bfloat16":
            acc = mx.array(parts[0]).astype(mx.bfloat16)
            for p in parts[1:]:
                acc = acc + mx.array(p).astype(mx.bfloat16)
            total = as_np(acc)
        elif dtype == "bool":
            total = fold(parts, np.logical_or)
        else:
            total = fold(parts, np.add)
        if name == "sum_scatter":
            n = shape[0] // SIZE
            return total[RANK * n:(RANK + 1) * n]
        return total
    return fold(parts, np.maximum if name == "all_max" else np.minimum)


def collectives() -> None:
    for name in ("all_sum", "all_max", "all_min", "all_gather", "sum_scatter"):
        fn = getattr(mx.distributed, name)
        for dtype in DTYPES:
            for shape in SHAPES:
                if name == "sum_scatter":
                    shape = (SIZE * 3,) + shape[1:] if shape else (SIZE,)
                x = ours(dtype, shape, RANK)
                y = fn(x)
                mx.eval(y)
                want = expected(name, dtype, shape)
                got = as_np(y)
                check(y.dtype == x.dtype, f"{name} {dtype} {shape}: dtype {y.dtype}")
                check(got.shape == want.shape, f"{name} {dtype} {shape}: shape {got.shape}")
                if dtype in NATIVE_FLOAT and name in ("all_sum", "sum_scatter"):
                    # MPI adds in its own order (recursive doubling for 4 ranks)
                    same = np.allclose(got, want, rtol=1e-6, atol=1e-6)
                else:  # exact: integers, max/min, and the float16/bfloat16 rank-order fold
                    same = np.array_equal(got, want, equal_nan=True)
                check(same, f"{name} {dtype} {shape}: {got} != {want}")
    # Every rank gets the same bits from a float sum (MPI's order is the same everywhere).
    x = mx.array(np.random.default_rng(RANK).standard_normal(4097).astype(np.float32))
    total = mx.distributed.all_sum(x)
    gathered = np.array(mx.distributed.all_gather(total[None]))
    check(all(np.array_equal(gathered[0], g) for g in gathered), "all_sum bits differ by rank")
    # Non-contiguous and broadcast operands, Python scalars, a stream argument.
    t = mx.arange(12).reshape(3, 4).T * (RANK + 1)
    want = np.arange(12).reshape(3, 4).T * sum(range(1, SIZE + 1))
    check(np.array_equal(np.array(mx.distributed.all_sum(t)), want), "all_sum of a transpose")
    b = mx.broadcast_to(mx.array([RANK]), (3, 2))
    check(np.array_equal(np.array(mx.distributed.all_gather(b))[::3, 0], np.arange(SIZE)),
          "all_gather of a broadcast")
    s = mx.distributed.all_sum(RANK + 1, stream=mx.cpu)
    check(s.item() == SIZE * (SIZE + 1) // 2 and s.dtype == mx.int32, "all_sum of an int")
    # Errors MLX raises for a group of several.
    for bad in ((), (SIZE + 1,)):
        try:
            mx.distributed.sum_scatter(mx.zeros(bad))
        except ValueError as e:
            check(f"Invalid shape=({','.join(map(str, bad))}) for a group of size {SIZE}"
                  in str(e), str(e))
        else:
            check(False, f"sum_scatter of shape {bad} did not raise")
    for call, text in ((lambda: mx.distributed.send(mx.zeros(1), SIZE), "Invalid destination"),
                       (lambda: mx.distributed.recv((1,), mx.float32, -1), "Invalid source")):
        try:
            call()
        except ValueError as e:
            check(text in str(e) and f"group of size {SIZE}" in str(e), str(e))
        else:
            check(False, f"{text}: no error")
    point_to_point()
    groups()


def point_to_point() -> None:
    # A ring: every rank sends to the next and receives from the previous, evaluated in an
    # order that cannot deadlock (even ranks send first).
    nxt, prv = (RANK + 1) % SIZE, (RANK - 1) % SIZE
    for dtype, shape in (("float32", (3, 5)), ("bfloat16", (7,)), ("int64", ()),
                         ("bool", (2, 2)), ("complex64", (4,)), ("float32", (0,)),
                         ("float32", (300_000,))):
        x = ours(dtype, shape, RANK)
        sent = mx.distributed.send(x, nxt)
        got = mx.distributed.recv(shape, x.dtype, prv)
        if RANK % 2 == 0:
            mx.eval(sent)
            mx.eval(got)
        else:
            mx.eval(got)
            mx.eval(sent)
        check(np.array_equal(as_np(sent), as_np(x)), f"send returns its input ({dtype})")
        check(np.array_equal(as_np(got), as_np(ours(dtype, shape, prv))), f"recv {dtype} {shape}")
        like = mx.distributed.recv_like(x, prv)
        back = mx.distributed.send(x, nxt)
        mx.eval(*((back, like) if RANK % 2 == 0 else (like, back)))
        check(like.shape == x.shape and like.dtype == x.dtype, "recv_like's shape and dtype")
    # Received through a 1-D array shape, as MLX reads them.
    if SIZE >= 2 and RANK < 2:
        if RANK == 0:
            mx.eval(mx.distributed.send(mx.ones((2, 3)), 1))
        else:
            r = mx.distributed.recv(mx.array([2, 3]), mx.float32, 0)
            check(np.array_equal(np.array(r), np.ones((2, 3))), "recv with an array shape")


def groups() -> None:
    half = WORLD.split(RANK % 2)
    members = [r for r in range(SIZE) if r % 2 == RANK % 2]
    check(half.size() == len(members) and half.rank() == members.index(RANK), "split sizes")
    total = mx.distributed.all_sum(mx.array(RANK), group=half)
    check(total.item() == sum(members), f"all_sum over a split group: {total.item()}")
    reverse = WORLD.split(0, key=SIZE - RANK)
    check(reverse.rank() == SIZE - 1 - RANK, "split ordered by key")
    gathered = mx.distributed.all_gather(mx.array([RANK]), group=reverse)
    check(np.array(gathered).tolist() == list(range(SIZE))[::-1], "gather in key order")
    again = mx.distributed.init()
    check(again.size() == SIZE and again.rank() == RANK, "init() returns the same world")


def autodiff() -> None:
    w = mx.array([1.0, 2.0]) * (RANK + 1)
    g = mx.grad(lambda v: (mx.distributed.all_sum(v * v)).sum())(w)
    check(np.allclose(np.array(g), 2 * np.array(w)), "vjp of all_sum is the cotangent")
    g = mx.grad(lambda v: mx.distributed.all_max(v).sum())(w)
    check(np.array_equal(np.array(g), [1.0, 1.0]), "vjp of all_max is the cotangent")
    weights = mx.arange(2 * SIZE).astype(mx.float32)
    g = mx.grad(lambda v: (mx.distributed.all_gather(v) * weights).sum())(mx.array([1.0, 2.0]))
    check(np.array_equal(np.array(g), [2.0 * RANK, 2.0 * RANK + 1]), "vjp of all_gather")
    g = mx.grad(lambda v: (mx.distributed.all_gather(v) * weights[:SIZE]).sum())(mx.array(1.0))
    check(g.item() == RANK, "vjp of all_gather of a scalar")
    tangent = mx.array([RANK + 1.0])
    _, (t,) = mx.jvp(mx.distributed.all_sum, [mx.array([1.0])], [tangent])
    check(t.item() == SIZE * (SIZE + 1) / 2, "jvp of all_sum sums the tangents")
    _, (t,) = mx.jvp(mx.distributed.all_max, [mx.array([1.0 * RANK])], [tangent])
    check(t.item() == SIZE, "jvp of all_max reduces the tangents")
    _, (t,) = mx.jvp(mx.distributed.all_gather, [mx.array([1.0])], [tangent])
    check(np.array(t).tolist() == [r + 1.0 for r in range(SIZE)], "jvp of all_gather")
    for transform, text in ((lambda: mx.grad(lambda v: mx.distributed.sum_scatter(v).sum())(
                                 mx.ones(SIZE)), "vjp"),
                            (lambda: mx.vmap(mx.distributed.sum_scatter)(mx.ones((2, SIZE))),
                             "vmap")):
        try:
            mx.eval(transform())
        except ValueError as e:
            check(str(e) == f"[Primitive::{text}] Not implemented for Sum ReduceScatter.", str(e))
        else:
            check(False, f"sum_scatter {text} did not raise")
    v = mx.vmap(mx.distributed.all_sum)(mx.ones((3, 2)) * (RANK + 1))
    check(np.array_equal(np.array(v), np.full((3, 2), SIZE * (SIZE + 1) / 2)), "vmap all_sum")
    v = mx.vmap(mx.distributed.all_gather)(mx.arange(6).reshape(3, 2) + 10 * RANK)
    want = np.stack([np.concatenate([np.arange(6).reshape(3, 2)[b] + 10 * r
                                     for r in range(SIZE)]) for b in range(3)])
    check(np.array_equal(np.array(v), want), "vmap all_gather gathers each entry")
    f = mx.compile(lambda a: mx.distributed.all_sum(a * 2) + 1)
    for _ in range(3):
        check(np.array_equal(np.array(f(mx.ones(2) * RANK)), np.full(2, SIZE * (SIZE - 1) + 1.0)),
              "compiled all_sum")


class MLP(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.l1 = nn.Linear(6, 16)
        self.l2 = nn.Linear(16, 3)

    def __call__(self, x: mx.array) -> mx.array:
        return self.l2(nn.relu(self.l1(x)))


def train(model: MLP, batches: list, average: bool) -> list[float]:
    opt = optim.AdamW(learning_rate=1e-2)

    def loss_fn(m: MLP, x: mx.array, y: mx.array) -> mx.array:
        return nn.losses.cross_entropy(m(x), y, reduction="mean")

    step = nn.value_and_grad(model, loss_fn)
    losses = []
    for x, y in batches:
        loss, grads = step(model, x, y)
        if average:
            grads = nn.average_gradients(grads)
            loss = mx.distributed.all_sum(loss) / SIZE
        opt.update(model, grads)
        mx.eval(model.parameters(), opt.state, loss)
        losses.append(loss.item())
    return losses


def nn_patterns() -> None:
    # Data parallelism: each rank takes its slice of every global batch and averages the
    # gradients; one process on the whole batch must see the same losses and weights.
    rng = np.random.default_rng(0)
    global_batches = [(rng.standard_normal((4 * SIZE, 6)).astype(np.float32),
                       rng.integers(0, 3, 4 * SIZE)) for _ in range(5)]
    mx.random.seed(3)
    alone = MLP()
    mx.random.seed(3)
    parallel = MLP()
    ref = train(alone, [(mx.array(x), mx.array(y)) for x, y in global_batches], False)
    mine = [(mx.array(x[RANK * 4:(RANK + 1) * 4]), mx.array(y[RANK * 4:(RANK + 1) * 4]))
            for x, y in global_batches]
    got = train(parallel, mine, True)
    check(np.allclose(got, ref, rtol=1e-5, atol=1e-6), f"data-parallel losses {got} vs {ref}")
    for (k, a), (_, b) in zip(tree_flatten(parallel.parameters()),
                              tree_flatten(alone.parameters())):
        check(np.allclose(np.array(a), np.array(b), rtol=1e-4, atol=1e-5), f"weights {k}")
    # average_gradients: batched (mixed sizes), unbatched, and mixed dtypes give the mean.
    tree = {"a": mx.ones((3, 2)) * RANK, "b": [mx.arange(5).astype(mx.float32) * RANK],
            "c": mx.array(float(RANK))}
    mean = (SIZE - 1) / 2
    for size in (32 * 1024**2, 8, 0):
        avg = nn.average_gradients(tree, all_reduce_size=size)
        flat = dict(tree_flatten(avg))
        check(sorted(flat) == ["a", "b.0", "c"], f"average_gradients keys {sorted(flat)}")
        check(np.allclose(np.array(flat["b.0"]), np.arange(5) * mean), "average_gradients b")
        check(flat["a"].shape == (3, 2) and np.allclose(np.array(flat["a"]), mean), "avg a")
    mixed = nn.average_gradients({"x": mx.ones(2, mx.float16) * RANK, "y": mx.ones(2) * RANK})
    check(mixed["x"].dtype == mx.float16 and np.allclose(np.array(mixed["y"]), mean), "mixed")
    # Tensor parallelism: the sharded pair computes what the whole layers compute.
    mx.random.seed(7)
    first, second = nn.Linear(8, 4 * SIZE), nn.Linear(4 * SIZE, 5)
    x = mx.array(np.random.default_rng(1).standard_normal((3, 8)).astype(np.float32))
    whole = second(first(x))
    up = nn.AllToShardedLinear.from_linear(first)
    down = nn.ShardedToAllLinear.from_linear(second)
    check(up.weight.shape == (4, 8), f"sharded weight shape {up.weight.shape}")
    sharded = down(up(x))
    check(np.allclose(np.array(sharded), np.array(whole), rtol=1e-4, atol=1e-5),
          "sharded linear pair")

    def loss(params, x):
        up.update(params)
        return (down(up(x)) ** 2).sum()

    g_up = mx.grad(loss)(up.trainable_parameters(), x)

    def whole_loss(params, x):
        first.update(params)
        return (second(first(x)) ** 2).sum()

    g_whole = mx.grad(whole_loss)(first.trainable_parameters(), x)
    n = 4
    check(np.allclose(np.array(g_up["weight"]),
                      np.array(g_whole["weight"])[RANK * n:(RANK + 1) * n], rtol=1e-4,
                      atol=1e-5), "gradient of the sharded layer is its block")


if __name__ == "__main__":
    which = sys.argv[1] if len(sys.argv) > 1 else "all"
    if which in ("collectives", "all"):
        collectives()
    if which in ("autodiff", "all"):
        autodiff()
    if which in ("nn", "all"):
        nn_patterns()
    print(f"rank {RANK} of {SIZE}: {checks} checks passed", flush=True)
