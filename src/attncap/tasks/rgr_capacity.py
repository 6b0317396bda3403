"""Relational Graph Recognition (RGR) data: item embeddings, directed graphs, contexts, and edge F1.

Everything is drawn from one `numpy.random.Generator` per (cell, seed), so a seed fixes the
embeddings, the graph and the evaluation contexts independently of which other models share a batch.
"""
from __future__ import annotations

import math

import numpy as np

from attncap.seeding import numpy_rng

GRAPHS = ("permutation", "out_degree")


def task_rng(seed: int, m: int, d_model: int, graph: str, k: int, salt: int = 0) -> np.random.Generator:
    """The generator of one (cell, seed): different cells and seeds never share a stream."""
    return numpy_rng(seed, m, d_model, graph, k, salt, "task")


def embeddings(m: int, d_model: int, rng: np.random.Generator) -> np.ndarray:
    """Item embeddings (m, d_model): one-hot when m == d_model, else i.i.d. Gaussian rows of unit norm."""
    if m < d_model:
        raise ValueError(f"m={m} < d_model={d_model}: the compressed setting needs m >= d_model")
    if m == d_model:
        return np.eye(m)
    x = rng.standard_normal((m, d_model))
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def permutation_graph(m: int, rng: np.random.Generator) -> np.ndarray:
    """Adjacency (m, m) of a uniformly random derangement: each item has exactly one target ≠ itself.

    Fixed points are excluded because self-pairs (i, i) are not scored; rejection sampling keeps
    the derangement uniform (acceptance probability → 1/e).
    """
    if m < 2:
        raise ValueError("a derangement needs m >= 2")
    while True:
        perm = rng.permutation(m)
        if not np.any(perm == np.arange(m)):
            break
    adj = np.zeros((m, m), dtype=bool)
    adj[np.arange(m), perm] = True
    return adj


def out_degree_graph(m: int, k: int, rng: np.random.Generator) -> np.ndarray:
    """Adjacency of a random out-degree-k graph: each item points to k distinct others, uniformly."""
    if not 1 <= k < m:
        raise ValueError(f"out-degree k={k} must satisfy 1 <= k < m={m}")
    adj = np.zeros((m, m), dtype=bool)
    for i in range(m):
        others = np.delete(np.arange(m), i)
        adj[i, rng.choice(others, size=k, replace=False)] = True
    return adj


def make_graph(graph: str, m: int, k: int, rng: np.random.Generator) -> np.ndarray:
    if graph == "permutation":
        return permutation_graph(m, rng)
    if graph == "out_degree":
        return out_degree_graph(m, k, rng)
    raise ValueError(f"unknown graph family {graph!r}; choose one of {GRAPHS}")


def n_edges(graph: str, m: int, k: int) -> int:
    """m' of the family: m for a permutation, k·m for out-degree k."""
    return m if graph == "permutation" else k * m


def law_x(m_edges: int, d_model: int) -> float:
    """The law's abscissa m'·ln m' / d_model (natural log; the base only shifts the intercept)."""
    return m_edges * math.log(m_edges) / d_model


def sample_contexts(adj: np.ndarray, size: int, n_contexts: int, rng: np.random.Generator,
                    p_target: float = 0.5) -> np.ndarray:
    """Contexts (n_contexts, size) of distinct items in which sources' targets appear about half the time.

    Half of the slots are sources drawn uniformly; each out-neighbour of each source is added with
    probability `p_target` (while slots remain); the rest are uniform distractors. Without this,
    a 16-item context of 256 items would almost never contain a true edge.
    """
    m = adj.shape[0]
    size = min(size, m)
    out = np.empty((n_contexts, size), dtype=np.int64)
    for c in range(n_contexts):
        sources = rng.choice(m, size=max(1, size // 2), replace=False)
        chosen = list(sources)
        taken = np.zeros(m, dtype=bool)
        taken[sources] = True
        for i in sources:
            for j in np.flatnonzero(adj[i]):
                if len(chosen) < size and not taken[j] and rng.random() < p_target:
                    chosen.append(j)
                    taken[j] = True
        rest = np.flatnonzero(~taken)
        chosen += list(rng.choice(rest, size=size - len(chosen), replace=False))
        out[c] = rng.permutation(np.asarray(chosen))
    return out


def f1_counts(pred: np.ndarray, true: np.ndarray) -> tuple[int, int, int]:
    """(TP, FP, FN) of boolean predicted vs true edge sets (same shape)."""
    pred = np.asarray(pred, dtype=bool)
    true = np.asarray(true, dtype=bool)
    return int(np.sum(pred & true)), int(np.sum(pred & ~true)), int(np.sum(~pred & true))


def f1_score(tp: int, fp: int, fn: int) -> float:
    """F1 = 2TP / (2TP + FP + FN); 1 when there is nothing to find and nothing predicted."""
    denominator = 2 * tp + fp + fn
    return 1.0 if denominator == 0 else 2 * tp / denominator


def offdiagonal(m: int) -> np.ndarray:
    return ~np.eye(m, dtype=bool)


def all_pairs_f1(scores: np.ndarray, tau: float, adj: np.ndarray) -> float:
    """F1 over all m(m-1) ordered pairs i ≠ j of the rule S_ij > τ."""
    mask = offdiagonal(adj.shape[0])
    return f1_score(*f1_counts((scores > tau)[mask], adj[mask]))


def context_f1(scores: np.ndarray, tau: float, adj: np.ndarray, contexts: np.ndarray) -> float:
    """Micro-averaged F1 over contexts: inside each context C, pairs (i, j) ∈ C×C with i ≠ j."""
    tp = fp = fn = 0
    size = contexts.shape[1]
    mask = offdiagonal(size)
    for ctx in contexts:
        sub = np.ix_(ctx, ctx)
        a, b, c = f1_counts((scores[sub] > tau)[mask], adj[sub][mask])
        tp, fp, fn = tp + a, fp + b, fn + c
    return f1_score(tp, fp, fn)


def best_threshold(scores: np.ndarray, adj: np.ndarray) -> tuple[float, float]:
    """The global τ maximising all-pairs F1 of S > τ, and that F1 (one scalar fitted by sorting)."""
    mask = offdiagonal(adj.shape[0])
    s = scores[mask].astype(np.float64)
    y = adj[mask]
    order = np.argsort(-s, kind="stable")
    s, y = s[order], y[order]
    tp = np.cumsum(y)
    fp = np.cumsum(~y)
    fn = y.sum() - tp
    # Only cut between distinct scores: predicting the first n items needs s[n-1] > τ >= s[n].
    distinct = np.append(s[:-1] > s[1:], True)
    f1 = np.where(distinct, 2 * tp / np.maximum(2 * tp + fp + fn, 1), -1.0)
    n = int(np.argmax(f1))
    tau = 0.5 * (s[n] + s[n + 1]) if n + 1 < len(s) else s[n] - 1.0
    return float(tau), float(f1[n])
