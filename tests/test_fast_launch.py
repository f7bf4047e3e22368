"""The mx.fast GPU launchers' host side, without a GPU: kernel choice, grids, the packed
argument structs (their layout is sdpa.cu's SdpaArgs) and the 16-byte-load flags, against
recording fakes of the module loader and the kernels.
"""

from __future__ import annotations

import struct
from types import SimpleNamespace

import pytest

from pycudamlx import dtypes as dt
from pycudamlx.backend.cuda import array as gpu_array, compiler, fast, registry


class _Kernel:
    def __init__(self, name: str, max_threads: int = 1024) -> None:
        self.name = name
        self.calls: list[tuple] = []
        self.max_threads = max_threads  # CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK

    def __call__(self, grid, block, stream, *args, shared_bytes: int = 0) -> None:
        self.calls.append((grid, block, args))


class _Module:
    def __init__(self, spec: registry.ModuleSpec, origin: str) -> None:
        self.kernel_list = [_Kernel(k.expression) for k in spec.kernels]
        self.origin = origin


class _Buffer:
    def __init__(self, ptr: int) -> None:
        self.ptr = ptr
        self.last_write = None
        self.location = 0

    def set_location(self, index: int) -> None:
        self.location = index


@pytest.fixture
def fake(monkeypatch):
    device = SimpleNamespace(index=0, properties=SimpleNamespace(
        compute_capability=(9, 0), multiprocessors=132))
    stream = SimpleNamespace(device=device)
    modules: dict[tuple, _Module] = {}
    state = {"origin": "nvrtc", "next": 1 << 20, "unavailable": set()}

    def module_for(fn, args, dev):
        key = (fn.__name__, args)
        if fn.__name__ in state["unavailable"]:
            raise compiler.KernelUnavailableError(f"{key}: no NVRTC and not in the cache")
        if key not in modules:
            modules[key] = _Module(fn(*args), state["origin"])
        return modules[key]

    def empty(shape, dtype, st):
        n = 1
        for e in shape:
            n *= e
        ptr = state["next"]
        state["next"] += max(16, -(-n * dtype.size // 256) * 256)
        return gpu_array.GpuArray(_Buffer(ptr), 0, tuple(shape),
                                  gpu_array.contiguous_strides(tuple(shape)), dtype)

    monkeypatch.setattr(fast, "_module", module_for)
    monkeypatch.setattr(gpu_array, "empty", empty)
    monkeypatch.setattr(gpu_array, "device_scratch", empty)
    monkeypatch.setattr(fast, "_copy", lambda src, dst, st: None)
    monkeypatch.setattr(fast, "_fill", lambda dst, value, st: None)
    fast._plans.clear()
    return SimpleNamespace(stream=stream, modules=modules, state=state, empty=empty)


def _arr(fake, shape, dtype):
    return fake.empty(shape, dtype, fake.stream)


_ARGS = struct.Struct("<20qdf13i")


def _fields(blob: bytes) -> dict:
    v = _ARGS.unpack(blob)
    names = ["B", "Hq", "Hkv", "Tq", "Tk", "Dk", "Dv", "mask_kind", "causal", "has_sinks",
             "bh_base", "vec", "pad"]
    out = dict(zip(names, v[22:]))
    out.update(qs=v[0:4], ks=v[4:8], vs=v[8:12], os=v[12:16], ms=v[16:20], masked=v[20],
               scale=v[21])
    return out


def test_sdpa_args_layout_matches_the_kernel_struct():
    assert _ARGS.size == registry.SDPA_ARGS_BYTES == 224


def test_sdpa_mma_launch(fake):
    bf = dt.bfloat16
    q, k, v = (_arr(fake, s, bf) for s in ((2, 8, 100, 128), (2, 2, 300, 128), (2, 2, 300, 128)))
    out = fast.sdpa(q, k, v, None, 0, None, 0.088, True, -3.0e38, bf, fake.stream)
    assert out.shape == (2, 8, 100, 128)
    kernel = fake.modules[("sdpa_mma_module", ("bfloat16", 128))].kernel_list[0]
    (grid, block, args), = kernel.calls
    assert grid == (2, 16, 1) and block == 128
    f = _fields(args[-1])
    assert (f["B"], f["Hq"], f["Hkv"], f["Tq"], f["Tk"], f["Dk"], f["Dv"]) == (
        2, 8, 2, 100, 300, 128, 128)
    assert f["causal"] == 1 and f["mask_kind"] == 0 and f["vec"] == 7 and f["bh_base"] == 0
    assert f["qs"] == q.strides and f["os"] == out.strides
    assert abs(f["scale"] - 0.088) < 1e-7
    # a strided q loses its 16-byte loads; the plan is cached per layout
    qt = q.view(q.offset, (2, 8, 100, 128), (8 * 100 * 128, 100 * 128, 1, 100))  # D strided
    fast.sdpa(qt, k, v, None, 0, None, 0.088, True, -3.0e38, bf, fake.stream)
    assert _fields(kernel.calls[-1][2][-1])["vec"] == 6
    fast.sdpa(qt, k, v, None, 0, None, 0.088, True, -3.0e38, bf, fake.stream)
    assert len(kernel.calls) == 3 and len(fast._plans) == 2


def test_sdpa_kernel_choice_and_grid_split(fake, monkeypatch):
    f16 = dt.float16
    q, k, v = (_arr(fake, (1, 70000, 3, 64), f16) for _ in range(3))
    fast.sdpa(q, k, v, None, 0, None, 0.1, False, -65504.0, f16, fake.stream)
    calls = fake.modules[("sdpa_mma_module", ("float16", 64))].kernel_list[0].calls
    assert [c[0] for c in calls] == [(1, 65535, 1), (1, 70000 - 65535, 1)]
    assert [_fields(c[2][-1])["bh_base"] for c in calls] == [0, 65535]
    # float32: the SIMT tiled kernel; other head dims: the generic one, dims over grid.z
    q, k, v = (_arr(fake, (1, 4, 33, 96), dt.float32) for _ in range(3))
    fast.sdpa(q, k, v, None, 0, None, 0.1, False, -3.4e38, dt.float32, fake.stream)
    tiled = fake.modules[("sdpa_module", ("float32",))].kernel_list
    assert tiled[1 + registry.SDPA_TILED_DIMS.index(96)].calls[0][0] == (3, 4, 1)
    q, k = (_arr(fake, (1, 4, 33, 24), dt.float32) for _ in range(2))
    v = _arr(fake, (1, 4, 33, 300), dt.float32)
    fast.sdpa(q, k, v, None, 0, None, 0.1, False, -3.4e38, dt.float32, fake.stream)
    assert tiled[0].calls[0][0] == (9, 4, 3)
    # the tensor-core module is never shipped: without NVRTC or a cache entry, SIMT instead
    fake.state["unavailable"].add("sdpa_mma_module")
    q, k, v = (_arr(fake, (1, 2, 25, 80), dt.bfloat16) for _ in range(3))
    fast.sdpa(q, k, v, None, 0, None, 0.1, False, -3.0e38, dt.bfloat16, fake.stream)
    simt = fake.modules[("sdpa_module", ("bfloat16",))].kernel_list
    assert simt[1 + registry.SDPA_TILED_DIMS.index(80)].calls
    monkeypatch.setattr(fast, "USE_MMA", False)
    assert fast.sdpa_kernel_kind(64, 64, dt.float16, fake.stream.device) == "tiled"


def test_sdpa_decode_split_launch(fake, monkeypatch):
    """Few queries: flash-decoding, keys split so one sequence fills the 132 SMs twice, a GQA
    group of 4 heads in one block, then one combine block per query row."""
    bf = dt.bfloat16
    q = _arr(fake, (1, 32, 1, 64), bf)
    k, v = (_arr(fake, (1, 8, 1000, 64), bf) for _ in range(2))
    fast.sdpa(q, k, v, None, 0, None, 0.125, False, -3.0e38, bf, fake.stream)
    kernels = fake.modules[("sdpa_decode_module", ("bfloat16",))].kernel_list
    (grid, block, args), = kernels[0].calls       # head dim 64: 2 dims per lane, 8 rows
    splits = grid[0]
    assert grid[1:] == (8, 1) and block == 128 and 12 <= splits <= 1000 // 64
    chunk = args[-1]
    assert chunk % 16 == 0 and (splits - 1) * chunk < 1000 <= splits * chunk
    (cgrid, cblock, cargs), = kernels[-1].calls
    assert cgrid == 32 and cargs[-1] == splits
    # a short cache: one split, no partials, no combine
    k, v = (_arr(fake, (1, 8, 40, 128), bf) for _ in range(2))
    q = _arr(fake, (1, 32, 1, 128), bf)
    fast.sdpa(q, k, v, None, 0, None, 0.125, False, -3.0e38, bf, fake.stream)
    (grid, _, args), = kernels[1].calls
    assert grid == (1, 8, 1) and args[-2] == 0 and len(kernels[-1].calls) == 1
    # head dim 256 takes the 4-row variant: 8 queries x GQA 2 = 16 rows in 4 z-blocks
    q = _arr(fake, (2, 4, 8, 256), bf)
    k, v = (_arr(fake, (2, 2, 300, 256), bf) for _ in range(2))
    fast.sdpa(q, k, v, None, 0, None, 0.1, False, -3.0e38, bf, fake.stream)
    (grid, _, _), = kernels[2].calls
    assert grid[1:] == (4, 4)
    # nine queries, float64 and the switch keep the prefill kernels
    monkeypatch.setattr(fast, "USE_SPLIT", False)
    assert fast._split_variant(q, k, v, bf) is None
    monkeypatch.setattr(fast, "USE_SPLIT", True)
    assert fast._split_variant(_arr(fake, (1, 4, 9, 64), bf), k, v, bf) is None
    assert fast._split_variant(q, k, v, dt.float64) is None


def test_norm_launch(fake):
    bf = dt.bfloat16
    x = _arr(fake, (16384, 4096), bf)
    w = _arr(fake, (4096,), bf)
    fast.norm(x, w, None, 1e-5, False, bf, fake.stream)
    kernels = fake.modules[("fast_norm_module", ("bfloat16",))].kernel_list
    (grid, block, args), = kernels[0].calls                 # rms, 16-byte packs
    assert block == 128 and 1 <= grid <= 16384
    assert args[4:] == (16384, 4096, pytest.approx(1e-5), 1)
    xs = _arr(fake, (7, 4099), bf)                          # rows not a whole number of packs
    fast.norm(xs, None, None, 1e-5, True, bf, fake.stream)
    (grid, block, args), = kernels[3].calls                 # layer norm, scalar
    assert args[4:] == (7, 4099, pytest.approx(1e-5), 0) and block == 1024 and grid == 7
    # a kernel whose registers allow fewer threads launches no wider than that (on the H200
    # these variants failed with CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES at 1,024)
    kernels[1].max_threads = 640
    fast.norm(_arr(fake, (3, 40001), bf), None, None, 1e-5, False, bf, fake.stream)
    (grid, block, args), = kernels[1].calls
    assert block == 640 and args[4:6] == (3, 40001)


def test_rope_launch(fake):
    f32 = dt.float32
    x = _arr(fake, (2, 3, 5, 10), f32)
    off = _arr(fake, (2,), dt.int32)
    fast.rope(x, off, None, 6, True, 10000.0, 1.0, 0, fake.stream)
    (grid, block, args), = fake.modules[("fast_norm_module", ("float32",))].kernel_list[4].calls
    total, HT, T, D, dims, oc, ostride = args[4:11]
    assert (total, HT, T, D, dims, ostride) == (2 * 3 * 5 * (3 + 4), 15, 5, 10, 6, 1)
    assert args[2] == off.buffer.ptr and args[3] == 0 and args[-1] == 1


def test_gemv_splits_k_for_narrow_products():
    """A 2048-wide projection (1,024 warps of 2 columns) splits K 8 ways so ~8k warps stream
    the weight on 132 SMs; an lm head (16,000 warps) does not; every slice keeps a load per lane."""
    from pycudamlx.backend.cuda.launch import k_slices

    assert k_slices(1024, 256, 132) == 8
    assert k_slices(4096, 256, 132) == 2
    assert k_slices(16000, 256, 132) == 1
    assert k_slices(3, 40, 132) == 1 and k_slices(3, 64, 132) == 2
