import mlx.core as mx

mx.random.seed(42)

# a random sparse directed graph as an edge list
n, m = 30, 120
src = mx.random.randint(0, n, (m,))
dst = mx.random.randint(0, n, (m,))
w = mx.random.uniform(0.1, 1.0, (m,))
print("edges", src.shape, src.dtype, w.dtype)

# degrees by scatter-add
out_deg = mx.zeros((n,), dtype=mx.int32).at[src].add(1)
in_deg = mx.zeros((n,), dtype=mx.int32).at[dst].add(1)
print("degrees", out_deg.sum().item(), in_deg.max().item(), (out_deg == 0).sum().item())

# PageRank by power iteration with dangling nodes
A = mx.zeros((n, n)).at[dst, src].add(1.0)
col = A.sum(0)
P = A / mx.where(col == 0, 1.0, col)
dangling = (col == 0).astype(mx.float32)
r = mx.ones((n,)) / n
for it in range(30):
    r = 0.85 * (P @ r + (dangling @ r) / n) + 0.15 / n
print("pagerank", f"{r.sum().item():.5f}", mx.argmax(r).item(), f"{r.max().item():.5f}")
top = mx.argsort(-r)[:3]
print("top3", top.tolist())

# the same with a sparse scatter (message passing) formulation
r2 = mx.ones((n,)) / n
deg_f = out_deg.astype(mx.float32)
for it in range(30):
    msg = r2[src] / mx.maximum(deg_f[src], 1.0)
    agg = mx.zeros((n,)).at[dst].add(msg)
    r2 = 0.85 * (agg + (r2 * (out_deg == 0)).sum() / n) + 0.15 / n
print("sparse agrees", f"{mx.abs(r - r2).max().item() < 1e-5}")

# connected components (undirected) by min-label propagation
labels = mx.arange(n)
for it in range(n):
    nl = labels.at[dst].minimum(labels[src])
    nl = nl.at[src].minimum(nl[dst])
    if mx.array_equal(nl, labels).item():
        break
    labels = nl
uniq = mx.sort(labels)
ncomp = (uniq[1:] != uniq[:-1]).sum().item() + 1
print("components", ncomp, "iterations", it)

# single-source shortest paths (Bellman-Ford) with scatter-min relaxation
dist = mx.where(mx.arange(n) == 0, 0.0, mx.inf)
for it in range(n):
    cand = dist[src] + w
    nd = dist.at[dst].minimum(cand)
    if mx.array_equal(nd, dist).item():
        break
    dist = nd
reach = mx.isfinite(dist)
print("bellman-ford", reach.sum().item(), f"{mx.where(reach, dist, 0.0).sum().item():.4f}", f"{mx.where(reach, dist, 0.0).max().item():.4f}")

# BFS levels with a boolean frontier and integer arithmetic
level = mx.full((n,), -1, dtype=mx.int32)
level = mx.where(mx.arange(n) == 0, 0, level)
frontier = mx.arange(n) == 0
for d in range(1, n):
    hit = mx.zeros((n,), dtype=mx.int32).at[dst].add(frontier[src].astype(mx.int32)) > 0
    new = hit & (level < 0)
    if not new.any().item():
        break
    level = mx.where(new, d, level)
    frontier = new
print("bfs", level.max().item(), (level >= 0).sum().item(), level.dtype)
counts = mx.zeros((int(level.max().item()) + 2,), dtype=mx.int32).at[level + 1].add(1)
print("level histogram", counts.tolist())

# triangle count on the symmetrised adjacency
S = ((A + A.T) > 0).astype(mx.float32) * (1 - mx.eye(n))
tri = mx.trace(S @ S @ S) / 6
print("triangles", int(tri.item()), f"{S.sum().item():.0f}")
# Laplacian spectrum (eigvalsh on CPU): number of zero eigenvalues = components
L = mx.diag(S.sum(1)) - S
ev = mx.linalg.eigvalsh(L, stream=mx.cpu)
print("laplacian", (ev < 1e-4).sum().item(), f"{ev[-1].item():.4f}", f"{ev.sum().item():.3f}")
