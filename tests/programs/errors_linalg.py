"""Mistakes scientific users make with mx.linalg: wrong shapes, dtypes, ord/axis combinations,
non-square or singular inputs, and what happens when the stream is left out (MLX's CPU build
runs linalg on its default CPU device; a GPU stream is refused)."""
# compare: text
# gpu-differs: default no_stream_inv no_stream_qr no_stream_svd no_stream_eigh no_stream_cholesky no_stream_solve no_stream_lu no_stream_eig no_stream_norm2 gpu_inv gpu_norm_fro
import mlx.core as mx


def check(label, fn):
    try:
        out = fn()
        outs = out if isinstance(out, (tuple, list)) else [out]
        mx.eval(*[o for o in outs if isinstance(o, mx.array)])
        desc = ", ".join(f"{o.shape} {o.dtype}" for o in outs if isinstance(o, mx.array))
        print(f"{label}: ok {desc}")
    except Exception as e:  # noqa: BLE001 - the point is to print what MLX raises
        print(f"{label}: {type(e).__name__}: {e}")


A = mx.array([[4.0, 1.0], [1.0, 3.0]])
R = mx.ones((2, 3))
v = mx.array([1.0, 2.0, 3.0])
T3 = mx.ones((2, 3, 4))

def inv_in_cpu_context(m):
    with mx.stream(mx.cpu):
        return mx.linalg.inv(m)


print("default:", mx.default_device(), mx.default_stream(mx.default_device()))
CASES = {
    # stream left out: the CPU build's default device is the CPU
    "no_stream_inv": lambda: mx.linalg.inv(A),
    "no_stream_qr": lambda: mx.linalg.qr(A),
    "no_stream_svd": lambda: mx.linalg.svd(A),
    "no_stream_eigh": lambda: mx.linalg.eigh(A),
    "no_stream_cholesky": lambda: mx.linalg.cholesky(A),
    "no_stream_solve": lambda: mx.linalg.solve(A, mx.ones((2,))),
    "no_stream_lu": lambda: mx.linalg.lu(A),
    "no_stream_eig": lambda: mx.linalg.eig(A),
    "no_stream_norm2": lambda: mx.linalg.norm(A, ord=2),
    "cpu_device": lambda: mx.linalg.inv(A, stream=mx.Device(mx.cpu)),
    "cpu_stream_obj": lambda: mx.linalg.pinv(A, stream=mx.default_stream(mx.cpu)),
    "with_cpu_ctx": lambda: inv_in_cpu_context(A),
    "stream_str": lambda: mx.linalg.inv(A, stream="cpu"),
    "stream_int": lambda: mx.linalg.qr(A, stream=0),
    "stream_str_norm": lambda: mx.linalg.norm(A, stream="cpu"),
    # norms
    "norm_str_vec": lambda: mx.linalg.norm(v, ord="fro"),
    "norm_nuc_vec": lambda: mx.linalg.norm(v, "nuc"),
    "norm_bad_str": lambda: mx.linalg.norm(A, ord="max"),
    "norm_3axes": lambda: mx.linalg.norm(T3, axis=(0, 1, 2)),
    "norm_3axes_ord": lambda: mx.linalg.norm(T3, ord=2, axis=(0, 1, 2)),
    "norm_3d_ord_noaxis": lambda: mx.linalg.norm(T3, ord=1),
    "norm_3d_fro_noaxis": lambda: mx.linalg.norm(T3, ord="fro"),
    "norm_axis_oob": lambda: mx.linalg.norm(A, axis=2),
    "norm_axis_oob_ord": lambda: mx.linalg.norm(A, ord=1, axis=-3),
    "norm_matrix_ord3": lambda: mx.linalg.norm(A, ord=3),
    "norm_matrix_ord0": lambda: mx.linalg.norm(A, ord=0),
    "norm_dup_axes": lambda: mx.linalg.norm(A, ord=1, axis=(0, 0)),
    "norm_dup_axes_fro": lambda: mx.linalg.norm(A, ord="fro", axis=(1, -1)),
    "norm_axis_list": lambda: mx.linalg.norm(T3, axis=[1, 2]),
    "norm_ord_neg_vec": lambda: mx.linalg.norm(v, ord=-1),
    "norm_complex": lambda: mx.linalg.norm(mx.array([3 + 4j, 1j])),
    "norm_bool": lambda: mx.linalg.norm(mx.array([True, False, True])),
    "norm_scalar": lambda: mx.linalg.norm(mx.array(-2.0)),
    "norm_scalar_ord": lambda: mx.linalg.norm(mx.array(-2.0), ord=1),
    # shapes
    "inv_nonsquare": lambda: mx.linalg.inv(R, stream=mx.cpu),
    "inv_1d": lambda: mx.linalg.inv(v, stream=mx.cpu),
    "inv_singular": lambda: mx.linalg.inv(mx.zeros((2, 2)), stream=mx.cpu),
    "inv_int": lambda: mx.linalg.inv(mx.eye(2, dtype=mx.int32), stream=mx.cpu),
    "inv_f16": lambda: mx.linalg.inv(A.astype(mx.float16), stream=mx.cpu),
    "inv_f64": lambda: mx.linalg.inv(A.astype(mx.float64), stream=mx.cpu),
    "tri_inv_nonsquare": lambda: mx.linalg.tri_inv(R, stream=mx.cpu),
    "qr_1d": lambda: mx.linalg.qr(v, stream=mx.cpu),
    "qr_int": lambda: mx.linalg.qr(mx.ones((2, 2), dtype=mx.int32), stream=mx.cpu),
    "qr_f64": lambda: mx.linalg.qr(A.astype(mx.float64), stream=mx.cpu),
    "svd_1d": lambda: mx.linalg.svd(v, stream=mx.cpu),
    "svd_int": lambda: mx.linalg.svd(mx.ones((2, 2), dtype=mx.int32), stream=mx.cpu),
    "svd_f16": lambda: mx.linalg.svd(A.astype(mx.float16), compute_uv=False, stream=mx.cpu),
    "svd_complex": lambda: mx.linalg.svd(A.astype(mx.complex64), stream=mx.cpu),
    "cholesky_nonsquare": lambda: mx.linalg.cholesky(R, stream=mx.cpu),
    "cholesky_1d": lambda: mx.linalg.cholesky(v, stream=mx.cpu),
    "cholesky_int": lambda: mx.linalg.cholesky(mx.eye(2, dtype=mx.int32), stream=mx.cpu),
    "cholesky_inv_nonsquare": lambda: mx.linalg.cholesky_inv(R, stream=mx.cpu),
    "cholesky_inv_1d": lambda: mx.linalg.cholesky_inv(v, stream=mx.cpu),
    "pinv_int": lambda: mx.linalg.pinv(mx.eye(2, dtype=mx.int32), stream=mx.cpu),
    "eigh_nonsquare": lambda: mx.linalg.eigh(R, stream=mx.cpu),
    "eigh_1d": lambda: mx.linalg.eigh(v, stream=mx.cpu),
    "eigh_int": lambda: mx.linalg.eigh(mx.eye(2, dtype=mx.int32), stream=mx.cpu),
    "eigvalsh_uplo": lambda: mx.linalg.eigvalsh(A, UPLO="upper", stream=mx.cpu),
    "eig_nonsquare": lambda: mx.linalg.eig(R, stream=mx.cpu),
    "eig_1d": lambda: mx.linalg.eigvals(v, stream=mx.cpu),
    "eig_f16": lambda: mx.linalg.eigvals(A.astype(mx.float16), stream=mx.cpu),
    "lu_nonsquare": lambda: mx.linalg.lu(R, stream=mx.cpu),
    "lu_factor_1d": lambda: mx.linalg.lu_factor(v, stream=mx.cpu),
    "lu_int": lambda: mx.linalg.lu_factor(mx.eye(2, dtype=mx.int32), stream=mx.cpu),
    "solve_nonsquare": lambda: mx.linalg.solve(R, v, stream=mx.cpu),
    "solve_mismatch": lambda: mx.linalg.solve(A, v, stream=mx.cpu),
    "solve_batched_vec": lambda: mx.linalg.solve(mx.stack([A, A]), mx.ones((2, 2)), stream=mx.cpu),
    "solve_int": lambda: mx.linalg.solve(mx.eye(2, dtype=mx.int32), mx.ones((2,), dtype=mx.int32), stream=mx.cpu),
    "solve_b_scalar": lambda: mx.linalg.solve(A, mx.array(1.0), stream=mx.cpu),
    "solve_singular": lambda: mx.linalg.solve(mx.zeros((2, 2)), mx.ones((2,)), stream=mx.cpu),
    "solve_tri_nonsquare": lambda: mx.linalg.solve_triangular(R, v, stream=mx.cpu),
    "solve_tri_1d": lambda: mx.linalg.solve_triangular(v, v, stream=mx.cpu),
    "solve_tri_int": lambda: mx.linalg.solve_triangular(mx.eye(2, dtype=mx.int32), mx.ones((2,), dtype=mx.int32), stream=mx.cpu),
    "cross_2": lambda: mx.linalg.cross(mx.ones((2,)), mx.ones((2,))),
    "cross_mismatch": lambda: mx.linalg.cross(mx.ones((3,)), mx.ones((4,))),
    "cross_axis": lambda: mx.linalg.cross(mx.ones((3, 2)), mx.ones((3, 2)), axis=-1),
    "cross_axis_oob": lambda: mx.linalg.cross(mx.ones((3,)), mx.ones((3,)), axis=1),
    "cross_bool": lambda: mx.linalg.cross(mx.array([True, False, True]), mx.array([False, True, True])),
    # empty and non-finite inputs
    "svd_nan": lambda: mx.linalg.svd(mx.array([[float("nan"), 1.0], [0.0, 1.0]]), stream=mx.cpu),
    "norm2_nan": lambda: mx.linalg.norm(mx.array([[float("nan"), 1.0], [0.0, 1.0]]), 2, stream=mx.cpu),
    "svd_inf": lambda: mx.linalg.svd(mx.array([[float("inf"), 1.0], [0.0, 1.0]]), compute_uv=False, stream=mx.cpu),
    "pinv_empty": lambda: mx.linalg.pinv(mx.zeros((2, 3, 0)), stream=mx.cpu),
    "det_empty": lambda: mx.linalg.det(mx.zeros((0, 0)), stream=mx.cpu),
    "slogdet_empty": lambda: mx.linalg.slogdet(mx.zeros((2, 0, 0)), stream=mx.cpu),
    "cholesky_empty": lambda: mx.linalg.cholesky(mx.zeros((0, 0)), stream=mx.cpu),
    "qr_empty": lambda: mx.linalg.qr(mx.zeros((0, 3)), stream=mx.cpu),
    "eigh_empty": lambda: mx.linalg.eigh(mx.zeros((0, 0)), stream=mx.cpu),
    "inv_empty_batch": lambda: mx.linalg.inv(mx.zeros((0, 2, 2)), stream=mx.cpu),
    "solve_singular_batch": lambda: mx.linalg.inv(mx.stack([mx.eye(2), mx.zeros((2, 2))]), stream=mx.cpu),
    # wrong argument kinds
    "inv_list": lambda: mx.linalg.inv([[1.0, 0.0], [0.0, 1.0]], stream=mx.cpu),
    "norm_list": lambda: mx.linalg.norm([3.0, 4.0]),
    "qr_positional_stream": lambda: mx.linalg.qr(A, mx.cpu),
    "svd_uv_kw": lambda: mx.linalg.svd(A, compute_uv=0, stream=mx.cpu),
    "cholesky_upper_kw": lambda: mx.linalg.cholesky(A, True, stream=mx.cpu),
    "cholesky_upper_int": lambda: mx.linalg.cholesky(A, upper=1, stream=mx.cpu),
    "tri_inv_upper_none": lambda: mx.linalg.tri_inv(A, None, stream=mx.cpu),
    "solve_tri_upper_int": lambda: mx.linalg.solve_triangular(A, A, upper=0, stream=mx.cpu),
    "norm_keepdims_int": lambda: mx.linalg.norm(A, keepdims=1),
    "norm_ord_bool": lambda: mx.linalg.norm(A, ord=True),
    "norm_axis_np": lambda: mx.linalg.norm(A, ord=2.0, axis=(0, 1), stream=mx.cpu),
    "cross_axis_float": lambda: mx.linalg.cross(v, v, axis=0.0),
    "eigh_positional_stream": lambda: mx.linalg.eigh(A, "U", mx.cpu),
    "svd_positional_stream": lambda: mx.linalg.svd(A, True, mx.cpu),
    "inv_numpy": lambda: mx.linalg.inv(__import__("numpy").eye(2), stream=mx.cpu),
    "solve_tri_upper_pos": lambda: mx.linalg.solve_triangular(A, v[:2], True, stream=mx.cpu),
}
for label, fn in CASES.items():
    check(label, fn)

# factorizations without derivatives: MLX names its primitive
S2 = A @ A.T + mx.eye(2)
for name, fn in [("inv", lambda x: mx.linalg.inv(x, stream=mx.cpu)),
                 ("cholesky", lambda x: mx.linalg.cholesky(x, stream=mx.cpu)),
                 ("svd", lambda x: mx.linalg.svd(x, compute_uv=False, stream=mx.cpu)),
                 ("qr", lambda x: mx.linalg.qr(x, stream=mx.cpu)[0]),
                 ("eigvalsh", lambda x: mx.linalg.eigvalsh(x, stream=mx.cpu)),
                 ("eigvals", lambda x: mx.linalg.eigvals(x, stream=mx.cpu)),
                 ("lu_factor", lambda x: mx.linalg.lu_factor(x, stream=mx.cpu)[0]),
                 ("det", lambda x: mx.linalg.det(x, stream=mx.cpu)),
                 ("norm_nuc", lambda x: mx.linalg.norm(x, "nuc", stream=mx.cpu))]:
    check(f"grad_{name}", lambda: mx.grad(lambda x: mx.abs(fn(x)).sum())(S2))
    check(f"jvp_{name}", lambda: mx.jvp(fn, [S2], [mx.ones((2, 2))])[1])
check("vjp_solve", lambda: mx.vjp(lambda x: mx.linalg.solve(x, mx.ones(2), stream=mx.cpu), [S2], [mx.ones(2)])[1])
print("dir", dir(mx.linalg)[5:9], len(dir(mx.linalg)), len([n for n in dir(mx.random) if not n.startswith("__")]))

# a GPU stream on the CPU build is refused at the first op
for name, fn in [("gpu_inv", lambda: mx.linalg.inv(A, stream=mx.gpu)),
                 ("gpu_norm_fro", lambda: mx.linalg.norm(A, stream=mx.gpu))]:
    check(name, fn)
