"""Linear-algebra primitives (QR, SVD, inverse, Cholesky, eigen, LU) on numpy's LAPACK.

MLX runs these factorizations only on a CPU stream (its linalg functions refuse a GPU stream
before building a node), so they have no GPU kernel: ``gpu_kernel = False``. Each computes in
the input's precision class (float32 inputs in float64, rounded back: at least as accurate as
MLX's float32 LAPACK) and returns MLX's output layouts.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ..primitive import OutSpec, Primitive


def _work(x: np.ndarray) -> np.ndarray:
    """The working copy: complex128 for complex input, float64 otherwise."""
    return x.astype(np.complex128 if np.iscomplexobj(x) else np.float64)


def _batched(fn, x: np.ndarray, n_out: int, specs: Sequence[OutSpec]) -> list[np.ndarray]:
    """Apply a numpy.linalg function that broadcasts over leading dims, tolerating empty batches."""
    if x.size == 0 or 0 in x.shape:
        return [np.zeros(shape, dtype=spec.np_dtype) for shape, spec in specs]
    r = fn(x)
    return list(r) if n_out > 1 else [r]


class QRF(Primitive):
    """Reduced QR: Q (..., m, k) and R (..., k, n), k = min(m, n) (LAPACK geqrf signs)."""

    __slots__ = ()
    name = "qr"
    mlx_name = "QRF"  # MLX has no vjp/jvp for it either: its error names this

    def eval_cpu(self, inputs: Sequence[np.ndarray], outs: Sequence[OutSpec]) -> list[np.ndarray]:
        return _batched(lambda a: np.linalg.qr(a, mode="reduced"), _work(inputs[0]), 2, outs)


class SVD(Primitive):
    """Full SVD: U (..., m, m), S (..., k), Vt (..., n, n); or S alone."""

    __slots__ = ("compute_uv",)
    name = "svd"
    mlx_name = "SVD"  # MLX has no vjp/jvp for it either: its error names this

    def __init__(self, compute_uv: bool) -> None:
        self.compute_uv = compute_uv

    def eval_cpu(self, inputs: Sequence[np.ndarray], outs: Sequence[OutSpec]) -> list[np.ndarray]:
        x = _work(inputs[0])
        if self.compute_uv:
            if x.size == 0:
                m, n = x.shape[-2:]
                lead = x.shape[:-2]
                u = np.broadcast_to(np.eye(m, dtype=x.dtype), lead + (m, m)).copy()
                v = np.broadcast_to(np.eye(n, dtype=x.dtype), lead + (n, n)).copy()
                return [u, np.zeros(outs[1][0]), v]
            # MLX's LAPACK call sees the transpose A^T = V S U^T: factor that, so the singular
            # vectors carry the signs MLX gets (numpy on A itself flips most of them)
            ut, sv, vt = _lapack_svd(np.swapaxes(x, -1, -2), True)
            return [np.swapaxes(vt, -1, -2), sv, np.swapaxes(ut, -1, -2)]
        if x.size == 0:
            return [np.zeros(outs[0][0])]
        return _lapack_svd(x, False)


def _lapack_svd(x: np.ndarray, compute_uv: bool) -> list[np.ndarray]:
    """numpy's SVD with MLX's (LAPACK gesdd's) answers for non-finite input: a NaN is refused
    with error code -4; an inf (no NaN) gives NaN factors."""
    if np.isnan(x).any():
        raise RuntimeError("[SVD::eval_cpu] SVD failed with error code -4")
    if not np.isfinite(x).all():
        m, n = x.shape[-2:]
        lead = x.shape[:-2]
        s = np.full(lead + (min(m, n),), np.nan, x.real.dtype)
        if not compute_uv:
            return [s]
        return [np.full(lead + (m, m), np.nan, x.dtype), s, np.full(lead + (n, n), np.nan, x.dtype)]
    try:
        if compute_uv:
            return list(np.linalg.svd(x, full_matrices=True, compute_uv=True))
        return [np.linalg.svd(x, compute_uv=False)]
    except np.linalg.LinAlgError:  # no convergence: gesdd's info > 0
        raise RuntimeError("[SVD::eval_cpu] SVD failed with error code 1") from None


class Inverse(Primitive):
    """Matrix inverse; ``tri``: of the upper/lower triangle, the other triangle exactly zero."""

    __slots__ = ("tri", "upper")
    name = "inverse"
    mlx_name = "Inverse"  # MLX has no vjp/jvp for it either: its error names this

    def __init__(self, tri: bool, upper: bool) -> None:
        self.tri = tri
        self.upper = upper

    def eval_cpu(self, inputs: Sequence[np.ndarray], outs: Sequence[OutSpec]) -> list[np.ndarray]:
        x = _work(inputs[0])
        if x.size == 0:
            return [np.zeros(outs[0][0])]
        if self.tri:
            x = np.triu(x) if self.upper else np.tril(x)
            diag = np.diagonal(x, axis1=-2, axis2=-1)
            if not np.all(diag != 0):
                # LAPACK trtri's info: the 1-based index of the first zero diagonal element.
                first = int(np.argmax((diag == 0).reshape(-1, diag.shape[-1]).any(0)))
                raise RuntimeError("[Inverse::eval_cpu] triangular inversion failed with error "
                                   f"code {first + 1}")
            r = _tri_inverse(x, self.upper)
            return [np.triu(r) if self.upper else np.tril(r)]
        try:
            return [np.linalg.inv(x)]
        except np.linalg.LinAlgError:
            # getrf's info: the 1-based index of the first exactly zero pivot.
            lu = lu_factor_numpy(x)[0]
            diag = np.diagonal(lu, axis1=-2, axis2=-1).reshape(-1, x.shape[-1])
            bad = diag[(diag == 0).any(-1)]
            code = int(np.argmax(bad[0] == 0)) + 1 if len(bad) else 1
            raise RuntimeError("[Inverse::eval_cpu] LU factorization failed with error code "
                               f"{code}") from None


def _tri_inverse(x: np.ndarray, upper: bool) -> np.ndarray:
    """Inverse of triangular matrices by substitution (a zero pivot gives inf/nan, as trtri)."""
    n = x.shape[-1]
    eye = np.broadcast_to(np.eye(n, dtype=x.dtype), x.shape)
    out = np.zeros_like(x)
    rows = range(n - 1, -1, -1) if upper else range(n)
    for i in rows:
        # Row i of X solves: x[i,i] X[i,:] = I[i,:] - sum_{j in strict tri} x[i,j] X[j,:]
        if upper:
            acc = eye[..., i, :] - np.einsum("...j,...jk->...k", x[..., i, i + 1:],
                                              out[..., i + 1:, :])
        else:
            acc = eye[..., i, :] - np.einsum("...j,...jk->...k", x[..., i, :i], out[..., :i, :])
        out[..., i, :] = acc / x[..., i, i][..., None]
    return out


class Cholesky(Primitive):
    """Cholesky factor, lower (L L^T = A) or upper (U^T U = A), of the lower triangle of A."""

    __slots__ = ("upper",)
    name = "cholesky"
    mlx_name = "Cholesky"  # MLX has no vjp/jvp for it either: its error names this

    def __init__(self, upper: bool) -> None:
        self.upper = upper

    def eval_cpu(self, inputs: Sequence[np.ndarray], outs: Sequence[OutSpec]) -> list[np.ndarray]:
        x = _work(inputs[0])
        if x.size == 0:
            return [np.zeros(outs[0][0])]
        # potrf reads one triangle: symmetrize from the lower one, as MLX's lower call does.
        low = np.tril(x)
        x = low + np.swapaxes(np.tril(x, -1), -1, -2).conj()
        try:
            L = np.linalg.cholesky(x)
        except np.linalg.LinAlgError:
            # Not positive definite: MLX does not check potrf's info and returns its partial
            # factor. Emulate unblocked potf2 per matrix: columns before the failing one
            # factored, the failing diagonal holds its non-positive pivot, the rest untouched.
            flat = x.reshape((-1,) + x.shape[-2:])
            L = np.stack([_potf2(m) for m in flat]).reshape(x.shape)
        return [np.swapaxes(L, -1, -2).conj() if self.upper else L]


def _potf2(a: np.ndarray) -> np.ndarray:
    """Lower Cholesky of one matrix, stopping (as LAPACK's potf2) at the first bad pivot."""
    a = np.tril(a).copy()
    n = a.shape[-1]
    for j in range(n):
        ajj = (a[j, j] - np.vdot(a[j, :j], a[j, :j])).real
        if not ajj > 0:
            a[j, j] = ajj
            break
        ajj = np.sqrt(ajj)
        a[j, j] = ajj
        a[j + 1:, j] = (a[j + 1:, j] - a[j + 1:, :j] @ a[j, :j].conj()) / ajj
    return a


class Eigh(Primitive):
    """Eigenvalues (ascending) and eigenvectors of symmetric/Hermitian matrices."""

    __slots__ = ("uplo", "vectors")
    name = "eigh"
    mlx_name = "Eigh"  # MLX has no vjp/jvp for it either: its error names this

    def __init__(self, uplo: str, vectors: bool) -> None:
        self.uplo = uplo
        self.vectors = vectors

    def eval_cpu(self, inputs: Sequence[np.ndarray], outs: Sequence[OutSpec]) -> list[np.ndarray]:
        x = _work(inputs[0])
        if x.size == 0:
            return [np.zeros(s) for s, _ in outs]
        # MLX hands its row-major matrix to LAPACK, which reads the (conjugate) transpose: the
        # same Hermitian matrix from the other triangle. Solving that one gives LAPACK's
        # eigenvector signs as MLX gets them (numpy on ``x`` itself flips ~90% of them).
        xt = np.swapaxes(x, -1, -2)
        if np.iscomplexobj(xt):
            xt = np.conj(xt)
        uplo = "U" if self.uplo == "L" else "L"
        if self.vectors:
            w, v = np.linalg.eigh(xt, UPLO=uplo)
            return [w, v]
        return [np.linalg.eigvalsh(xt, UPLO=uplo)]


class Eig(Primitive):
    """Eigenvalues and right eigenvectors (unit norm, LAPACK geev) as complex64."""

    __slots__ = ("vectors",)
    name = "eig"
    mlx_name = "Eig"  # MLX has no vjp/jvp for it either: its error names this

    def __init__(self, vectors: bool) -> None:
        self.vectors = vectors

    def eval_cpu(self, inputs: Sequence[np.ndarray], outs: Sequence[OutSpec]) -> list[np.ndarray]:
        x = _work(inputs[0])
        if x.size == 0:
            return [np.zeros(s, np.complex64) for s, _ in outs]
        if not np.isfinite(x).all():
            # numpy refuses; MLX's geev returns NaNs (or aborts the process): NaN outputs
            return [np.full(s, np.nan + 0j, np.complex128) for s, _ in outs]
        # MLX's LAPACK call sees the transpose: its eigenvalues come in geev's order for x^T
        order = np.linalg.eigvals(np.swapaxes(x, -1, -2))
        if not self.vectors:
            return [order.astype(np.complex128)]
        w, v = np.linalg.eig(x)
        perm = _match_order(w, order)
        w = np.take_along_axis(w, perm, -1)
        v = np.take_along_axis(v, perm[..., None, :], -1)
        return [w.astype(np.complex128), v.astype(np.complex128)]


def _match_order(w: np.ndarray, target: np.ndarray) -> np.ndarray:
    """Indices into ``w`` (..., n) putting its eigenvalues in ``target``'s order: each target
    value takes the nearest unused one (equal values are interchangeable)."""
    flat_w = w.reshape(-1, w.shape[-1])
    flat_t = target.reshape(-1, w.shape[-1])
    perm = np.empty(flat_w.shape, dtype=np.int64)
    for b in range(flat_w.shape[0]):
        free = list(range(flat_w.shape[1]))
        for j, t in enumerate(flat_t[b]):
            k = min(free, key=lambda i: abs(flat_w[b, i] - t))
            perm[b, j] = k
            free.remove(k)
    return perm.reshape(w.shape)


def lu_factor_numpy(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """LAPACK getrf with partial pivoting over leading dims: (LU, ipiv 0-based, row_idx).

    ``row_idx`` is the inverse of the row permutation, so ``A = L[row_idx] @ U`` (MLX's lu)."""
    m, n = x.shape[-2:]
    k = min(m, n)
    lead = x.shape[:-2]
    a = x.reshape((-1, m, n)).copy()
    b = a.shape[0]
    piv = np.zeros((b, k), dtype=np.int64)
    perm = np.broadcast_to(np.arange(m), (b, m)).copy()
    ar = np.arange(b)
    for j in range(k):
        p = j + np.argmax(np.abs(a[:, j:, j]), axis=1)
        piv[:, j] = p
        rows_j = a[ar, j, :].copy()
        a[ar, j, :] = a[ar, p, :]
        a[ar, p, :] = rows_j
        pj = perm[ar, j].copy()
        perm[ar, j] = perm[ar, p]
        perm[ar, p] = pj
        d = a[:, j, j]
        nz = d != 0
        with np.errstate(all="ignore"):
            l = np.where(nz[:, None], a[:, j + 1:, j] / np.where(nz, d, 1)[:, None], 0.0)
        a[:, j + 1:, j] = l
        a[:, j + 1:, j + 1:] -= l[:, :, None] * a[:, j, None, j + 1:]
    inv = np.empty_like(perm)
    np.put_along_axis(inv, perm, np.broadcast_to(np.arange(m), (b, m)), axis=1)
    return (a.reshape(lead + (m, n)), piv.reshape(lead + (k,)), inv.reshape(lead + (m,)))


class LUF(Primitive):
    """LU factorization: packed LU, uint32 pivots (LAPACK's, 0-based), uint32 row indices."""

    __slots__ = ()
    name = "lu_factor"
    mlx_name = "LUF"  # MLX has no vjp/jvp for it either: its error names this

    def eval_cpu(self, inputs: Sequence[np.ndarray], outs: Sequence[OutSpec]) -> list[np.ndarray]:
        lu, piv, rows = lu_factor_numpy(_work(inputs[0]))
        return [lu, piv.astype(np.uint32), rows.astype(np.uint32)]
