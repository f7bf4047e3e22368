"""The devices and streams API against MLX 0.32.4 (reprs, equality, errors, contexts), and the
mx.cuda / mx.metal namespaces. These run on the CPU; the GPU cases skip without a device."""

from __future__ import annotations

import threading
import warnings

import pytest

import pycudamlx.core as mx
from pycudamlx.backend.cuda import driver

HAS_GPU = driver.unavailable_reason() is None


@pytest.fixture(scope="module")
def mlx():
    return pytest.importorskip("mlx.core")


def test_reprs_match_mlx(mlx):
    for expr in ["m.cpu", "m.gpu", "m.Device(m.cpu)", "m.Device(m.cpu, 1)", "m.Device(m.gpu, 0)",
                 "m.Device(0)", "m.default_stream(m.cpu)", "m.DeviceType.cpu",
                 "m.Device(m.cpu).type", "m.default_stream(m.cpu).device",
                 "list(m.DeviceType)", "m.DeviceType(1)", "m.cpu.name", "m.cpu.value"]:
        ours, theirs = eval(expr, {"m": mx}), eval(expr, {"m": mlx})
        assert repr(ours) == repr(theirs), expr
        assert str(ours) == str(theirs), expr


_NUMBERING = ("import sys; m = __import__(sys.argv[1], fromlist=['x']); "
              "print(m.new_stream(m.cpu), m.default_stream(m.cpu), m.new_stream(m.cpu))")


def test_streams_are_numbered_as_mlx_numbers_them(mlx):
    """MLX numbers streams with one counter, a device's default stream when it is first asked
    for (in a fresh process: a new stream made before any op is the first)."""
    import subprocess
    import sys

    def numbering(module: str) -> str:
        return subprocess.run([sys.executable, "-c", _NUMBERING, module], capture_output=True,
                              text=True, check=True, timeout=120).stdout
    assert numbering("pycudamlx.core") == numbering("mlx.core")


def test_equality_matches_mlx(mlx):
    for expr in ["m.Device(m.cpu) == m.cpu", "m.cpu == m.Device(m.cpu)",
                 "m.Device(m.cpu) == m.Device(m.cpu, 0)", "m.Device(m.cpu) == 0",
                 "m.Device(m.cpu) == 'cpu'", "m.Device(m.cpu) != m.cpu",
                 "m.Device(m.cpu, 1) == m.cpu", "m.Device(m.gpu) == m.cpu",
                 "m.default_stream(m.cpu) == m.default_stream(m.cpu)",
                 "m.default_stream(m.cpu) == m.cpu", "m.new_stream(m.cpu) == m.new_stream(m.cpu)"]:
        assert eval(expr, {"m": mx}) == eval(expr, {"m": mlx}), expr


def test_devices_hash_by_value():
    assert hash(mx.Device(mx.cpu)) == hash(mx.Device(mx.cpu, 0))
    assert len({mx.Device(mx.cpu), mx.Device(mx.cpu, 0)}) == 1


def test_bad_arguments_raise_type_errors(mlx):
    for expr in ["m.Device('cpu')", "m.default_stream('cpu')", "m.new_stream('cpu')",
                 "m.is_available('cpu')", "m.stream('cpu')", "m.stream(None)",
                 "m.device_count(m.Device(m.cpu))", "m.set_default_stream(m.cpu)"]:
        for m in (mx, mlx):
            with pytest.raises(TypeError, match="incompatible function arguments"):
                eval(expr, {"m": m})


_STREAM_MISTAKES = [
    lambda m, a: m.sum(a, stream="cpu"),
    lambda m, a: m.matmul(a, a, stream="cpu"),
    lambda m, a: m.sort(a, stream="cpu"),
    lambda m, a: m.exp(a, stream=1.5),
    lambda m, a: m.add(a, a, stream=5),
    lambda m, a: a.sum(stream="cpu"),
    lambda m, a: m.zeros((2,), stream="cpu"),
    lambda m, a: m.random.normal((2,), stream="cpu"),
    lambda m, a: m.random.split(m.random.key(0), stream="cpu"),
    lambda m, a: m.fft.fft(a, stream="cpu"),
    lambda m, a: m.linalg.inv(a, stream="cpu"),
]


@pytest.mark.parametrize("i", range(len(_STREAM_MISTAKES)))
def test_stream_of_the_wrong_type_gets_nanobinds_text(mlx, i):
    call = _STREAM_MISTAKES[i]
    with pytest.raises(TypeError) as theirs:
        call(mlx, mlx.ones((2, 2)))
    with pytest.raises(TypeError) as ours:
        call(mx, mx.ones((2, 2)))
    assert str(ours.value) == str(theirs.value)


def test_stream_int_names_a_device_type(mlx):
    # nanobind converts 0/1 (and bools) to DeviceType; other ints are refused
    assert mx.add(mx.ones(2), 1, stream=0).tolist() == [2.0, 2.0]
    assert mx.add(mx.ones(2), 1, stream=False).tolist() == [2.0, 2.0]
    with pytest.raises(TypeError, match="kwargs = { stream: int }"):
        mx.add(mx.ones(2), 1, stream=-1)


def test_availability(mlx):
    assert mx.is_available(mx.cpu) and mx.is_available(mx.Device(mx.cpu))
    assert not mx.is_available(mx.Device(mx.cpu, 1))
    assert mx.device_count(mx.cpu) == 1
    assert mx.is_available(mx.gpu) == HAS_GPU == mx.cuda.is_available()
    assert mx.device_count(mx.gpu) == (driver.device_count() if HAS_GPU else 0)
    assert not mx.is_available(mx.Device(mx.gpu, 99))
    assert mx.metal.is_available() is False is mlx.metal.is_available()


def test_default_device_follows_the_hardware():
    assert mx.default_device() == (mx.Device(mx.gpu) if HAS_GPU else mx.Device(mx.cpu))


@pytest.mark.skipif(HAS_GPU, reason="checks the errors of a machine without a GPU")
def test_gpu_errors_without_a_gpu(mlx):
    for expr, msg in [("m.new_stream(m.gpu)", "Cannot make gpu stream without gpu backend"),
                      ("m.default_stream(m.gpu)", "Cannot get gpu stream without gpu backend"),
                      ("m.set_default_device(m.gpu)", "Cannot set gpu device without gpu "
                                                      "backend"),
                      ("m.add(1, 2, stream=m.gpu)", "Cannot get gpu stream without gpu "
                                                    "backend"),
                      ("exec('with m.stream(m.gpu): pass')", "Cannot get gpu stream without "
                                                             "gpu backend")]:
        for m in (mx, mlx):
            with pytest.raises(ValueError, match=msg):
                eval(expr, {"m": m})
    assert mx.device_info(mx.gpu) == {} == mlx.device_info(mlx.gpu)


def test_unavailable_device_is_refused():
    # MLX accepts set_default_device(Device(cpu, 1)) and then fails every op with an
    # IndexError from its stream table; we refuse the device up front.
    with pytest.raises(ValueError, match="not available"):
        mx.set_default_device(mx.Device(mx.cpu, 1))
    with pytest.raises(ValueError, match="not available"):
        mx.add(1, 2, stream=mx.Device(mx.cpu, 3))


def test_stream_context_sets_default_stream_and_device(mlx):
    s = mx.new_stream(mx.cpu)
    before = mx.default_stream(mx.cpu)
    with mx.stream(s) as ctx:
        assert ctx is None
        assert mx.default_stream(mx.cpu) == s
        assert mx.default_device() == mx.Device(mx.cpu)
        assert mx.add(1, 2).item() == 3
        with mx.stream(mx.new_stream(mx.cpu)) as inner:
            assert mx.default_stream(mx.cpu) != s
        with mx.stream(mx.cpu):  # the device's default stream is s here (as in MLX)
            assert mx.default_stream(mx.cpu) == s
        assert mx.default_stream(mx.cpu) == s
    assert mx.default_stream(mx.cpu) == before
    # the same object can be entered again and nested
    ctx = mx.stream(s)
    with ctx:
        with ctx:
            assert mx.default_stream(mx.cpu) == s
    assert mx.default_stream(mx.cpu) == before
    s2 = mlx.new_stream(mlx.cpu)
    with mlx.stream(s2) as theirs:
        assert theirs is None and mlx.default_stream(mlx.cpu) == s2


def test_stream_argument_accepts_streams_devices_and_types():
    s = mx.new_stream(mx.cpu)
    for arg in (None, s, mx.cpu, mx.Device(mx.cpu), mx.default_stream(mx.cpu),
                mx.new_thread_local_stream(mx.cpu)):
        assert mx.add(mx.array([1]), 2, stream=arg).tolist() == [3]
    with pytest.raises(TypeError):
        mx.add(1, 2, stream="cpu")


def test_set_default_stream():
    old = mx.default_stream(mx.cpu)
    s = mx.new_stream(mx.cpu)
    try:
        mx.set_default_stream(s)
        assert mx.default_stream(mx.cpu) == s
    finally:
        mx.set_default_stream(old)


def test_thread_local_streams(mlx):
    tls = mx.new_thread_local_stream(mx.cpu)
    ref = mlx.new_thread_local_stream(mlx.cpu)
    assert repr(tls).startswith("ThreadLocalStream(Device(cpu, 0), ")
    assert repr(ref).startswith("ThreadLocalStream(Device(cpu, 0), ")
    assert tls == tls and tls.device == mx.Device(mx.cpu)
    seen = []

    def work():
        seen.append(mx.device.resolve_stream(tls))
        assert mx.add(mx.array([1]), 1, stream=tls).tolist() == [2]

    threads = [threading.Thread(target=work) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    mine = mx.device.resolve_stream(tls)
    assert mine is mx.device.resolve_stream(tls)
    assert len({id(s) for s in seen + [mine]}) == 4
    mx.clear_streams()
    assert mx.device.resolve_stream(tls) is not mine
    assert isinstance(mx.new_thread_unsafe_stream(mx.cpu), mx.Stream)


def test_synchronize_accepts_streams_and_devices(mlx):
    for arg in (None, mx.cpu, mx.Device(mx.cpu), mx.default_stream(mx.cpu),
                mx.new_stream(mx.cpu)):
        mx.synchronize(arg) if arg is not None else None
    mx.synchronize(mx.cpu)
    with pytest.raises(TypeError):
        mx.synchronize("cpu")


def test_device_info_cpu(mlx):
    assert set(mx.device_info(mx.cpu)) == set(mlx.device_info(mlx.cpu))
    assert mx.device_info(mx.cpu)["architecture"] == mlx.device_info(mlx.cpu)["architecture"]
    # MLX's brand string (/proc/cpuinfo's "model name" on Linux), not platform.processor()
    assert mx.device_info(mx.cpu)["device_name"] == mlx.device_info(mlx.cpu)["device_name"]


@pytest.mark.gpu
def test_device_info_gpu_keys():
    info = mx.device_info(mx.gpu)
    for key in ("device_name", "architecture", "uuid", "pci_bus_id", "compute_capability_major",
                "compute_capability_minor", "free_memory", "total_memory", "memory_size",
                "max_recommended_working_set_size"):
        assert key in info, key
    assert info["architecture"].startswith("sm_")
    assert info["uuid"].startswith("GPU-") and len(info["uuid"]) == 40
    assert 0 < info["free_memory"] <= info["total_memory"]


def test_namespaces_match_mlx(mlx):
    assert mx.cuda.is_available() == HAS_GPU
    assert [n for n in dir(mlx.cuda) if not n.startswith("_")] == \
        [n for n in dir(mx.cuda) if not n.startswith("_")]
    assert [n for n in dir(mlx.metal) if not n.startswith("_")] == \
        sorted(n for n in mx.metal.__all__)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert mx.metal.device_info() == {}
    assert any(issubclass(w.category, DeprecationWarning) for w in caught)
    assert mx.metal.start_capture("x.gputrace") is None and mx.metal.stop_capture() is None
    if getattr(mx, "get_active_memory", None) is not None:
        with pytest.warns(DeprecationWarning):
            assert isinstance(mx.metal.get_active_memory(), int)
    else:
        with pytest.warns(DeprecationWarning), pytest.raises(NotImplementedError):
            mx.metal.get_active_memory()


def test_every_device_name_exists(mlx):
    names = ["Device", "DeviceType", "Stream", "StreamContext", "ThreadLocalStream", "cpu", "gpu",
             "default_device", "set_default_device", "default_stream", "set_default_stream",
             "new_stream", "new_thread_local_stream", "new_thread_unsafe_stream", "stream",
             "synchronize", "is_available", "device_count", "device_info", "clear_streams",
             "metal", "cuda"]
    for n in names:
        assert hasattr(mlx, n) and hasattr(mx, n), n


@pytest.mark.parametrize("fn", ["is_available", "set_default_device", "default_stream",
                                "new_stream", "new_thread_local_stream",
                                "new_thread_unsafe_stream", "device_info"])
def test_device_functions_refuse_a_string_with_mlx_text(mlx, fn):
    """mx.set_default_device("cpu") is a common slip: nanobind's TypeError, signature and all."""
    msgs = []
    for m in (mlx, mx):
        with pytest.raises(TypeError) as info:
            getattr(m, fn)("cpu")
        msgs.append(str(info.value))
    assert msgs[0] == msgs[1]
