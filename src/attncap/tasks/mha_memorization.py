"""Data for the multi-head attention memorization claim: query tokens over contexts with labels,
the rank laws of the frozen-attention feature matrix, digits as patch tokens, and Kruskal-rank tools.

Every generator takes its own `torch.Generator`, so a model's dataset depends on its seed only.
"""
from __future__ import annotations

import itertools
import math

import numpy as np
import torch

CONTEXTS = ("shared", "nonshared", "lowrank", "affine")
"""shared: one E for all examples; nonshared: E_t per example; lowrank: one generic rank-r E
(rows span an r-dim subspace through 0); affine: one E = 1·μᵀ + rank-r centred part (rows on an
r-dim affine subspace that misses 0)."""


def capacity_bound(heads: int, n: int) -> int:
    """b = H(n−1)+1: examples one H-head layer memorizes with a shared full-rank n-token context."""
    return heads * (n - 1) + 1


def context_ranks(kind: str, n: int, d: int, rank: int | None = None) -> tuple[int, int]:
    """(ρ, α): linear rank of E and dimension of the affine hull of its rows, for generic data."""
    if kind in ("shared", "nonshared"):
        return n, n - 1
    if kind == "lowrank":
        return rank, min(rank, n - 1)
    if kind == "affine":
        return min(rank + 1, n), min(rank, n - 1)
    raise ValueError(f"unknown context kind {kind!r}; known: {CONTEXTS}")


def rank_law(kind: str, T: int, heads: int, n: int, d: int, rank: int | None = None) -> int:
    """rank Φ for generic frozen attention.

    A row of Φ is (Eᵀa_1, …, Eᵀa_H) with every a_h on the simplex. For one shared E those rows lie
    in the span of ⊕_h Eᵀ(1^⊥) (dimension H·α) plus the one direction (Eᵀ1, …, Eᵀ1), which is new
    exactly when ρ = α + 1 (the rows' affine hull misses the origin). So rank ≤ H·α + [ρ > α]:
    H(n−1)+1 for a full-rank E, H·r for a generic rank-r E, H·r+1 for an affine rank-r E. With a
    different E per example nothing ties the rows together beyond their length H·d.
    """
    if kind == "nonshared":
        return min(T, heads * d)
    rho, alpha = context_ranks(kind, n, d, rank)
    return min(T, heads * alpha + int(rho > alpha))


def sinusoidal_encoding(length: int, d: int, dtype=torch.float32) -> torch.Tensor:
    """Vaswani et al.'s table: even columns sin(p·ω_i), odd columns cos(p·ω_i), ω_i = 10000^(−2i/d)."""
    position = torch.arange(length, dtype=torch.float64)[:, None]
    freq = torch.exp(torch.arange(0, d, 2, dtype=torch.float64) * (-math.log(10000.0) / d))
    table = torch.zeros(length, d, dtype=torch.float64)
    table[:, 0::2] = torch.sin(position * freq)
    table[:, 1::2] = torch.cos(position * freq[: d // 2])
    return table.to(dtype)


def _draw(shape, generator, distribution: str, dtype):
    if distribution == "uniform":  # the reference code's inputs: i.i.d. U[0, 1]
        return torch.rand(shape, generator=generator, dtype=torch.float64).to(dtype)
    if distribution == "gaussian":
        return torch.randn(shape, generator=generator, dtype=torch.float64).to(dtype)
    raise ValueError(f"unknown distribution {distribution!r}")


def make_context(kind: str, T: int, n: int, d: int, generator: torch.Generator, *, rank: int | None = None,
                 distribution: str = "gaussian", dtype=torch.float64) -> torch.Tensor:
    """(n, d) for the shared kinds, (T, n, d) for nonshared."""
    if kind == "shared":
        return _draw((n, d), generator, distribution, dtype)
    if kind == "nonshared":
        return _draw((T, n, d), generator, distribution, dtype)
    if kind == "lowrank":
        return _draw((n, rank), generator, distribution, dtype) @ _draw((rank, d), generator, distribution, dtype)
    if kind == "affine":
        mean = _draw((1, d), generator, distribution, dtype)
        coef = _draw((n, rank), generator, distribution, dtype)
        coef = coef - coef.mean(0, keepdim=True)  # centred: the rows' affine hull is r-dimensional
        return mean + coef @ _draw((rank, d), generator, distribution, dtype)
    raise ValueError(f"unknown context kind {kind!r}; known: {CONTEXTS}")


def make_dataset(T: int, n: int, d: int, generator: torch.Generator, *, shared: bool = True,
                 labels: str = "classes", n_classes: int = 100, distribution: str = "uniform",
                 dtype=torch.float32) -> dict[str, torch.Tensor]:
    """One memorization dataset: queries (T, d), context (n, d) or (T, n, d), labels (T,).

    Classes are uniform over `n_classes` (long); real labels are U[0, 1] as in the reference code.
    """
    query = _draw((T, d), generator, distribution, dtype)
    context = make_context("shared" if shared else "nonshared", T, n, d, generator,
                           distribution=distribution, dtype=dtype)
    if labels == "classes":
        y = torch.randint(n_classes, (T,), generator=generator)
    elif labels == "real":
        y = torch.rand((T,), generator=generator, dtype=torch.float64).to(dtype)
    else:
        raise ValueError(f"unknown label kind {labels!r}")
    return {"query": query, "context": context, "labels": y}


def stack_datasets(datasets: list[dict[str, torch.Tensor]]) -> dict[str, torch.Tensor]:
    """Put a leading model axis on every field."""
    return {key: torch.stack([ds[key] for ds in datasets]) for key in datasets[0]}


# ---- real images: scikit-learn's bundled 8×8 digits as patch tokens ----------------------------

def digit_patches(patch: int) -> tuple[np.ndarray, np.ndarray]:
    """(N, n, patch²) non-overlapping patches of every bundled digit (pixels scaled to [0, 1]), labels."""
    from sklearn.datasets import load_digits

    digits = load_digits()
    images = digits.images / 16.0
    side = images.shape[1] // patch
    tokens = images.reshape(len(images), side, patch, side, patch).transpose(0, 1, 3, 2, 4)
    return tokens.reshape(len(images), side * side, patch * patch), digits.target


def embed_tokens(tokens: np.ndarray, d: int, rng: np.random.Generator, positional: bool) -> np.ndarray:
    """ViT-style linear patch embedding (random, as at initialisation) plus optional sinusoidal encodings."""
    weight = rng.standard_normal((tokens.shape[-1], d)) / math.sqrt(tokens.shape[-1])
    out = tokens @ weight
    if positional:
        out = out + sinusoidal_encoding(tokens.shape[-2], d, torch.float64).numpy()
    return out


# ---- ranks ------------------------------------------------------------------------------------

def numerical_rank(matrix, rtol: float | None = None) -> np.ndarray:
    """Rank of (..., r, c) matrices: singular values above max(σ)·max(r, c)·eps (NumPy's rule) or rtol·max(σ)."""
    s = np.linalg.svd(np.asarray(matrix, dtype=np.float64), compute_uv=False)
    scale = s[..., :1]
    rtol = max(matrix.shape[-2:]) * np.finfo(np.float64).eps if rtol is None else rtol
    return (s > rtol * scale).sum(-1)


def independent(vectors: np.ndarray, rtol: float) -> np.ndarray:
    """For (..., k, d) stacks of k vectors: are the k vectors linearly independent (σ_min > rtol·σ_max)?"""
    s = np.linalg.svd(vectors, compute_uv=False)
    return s[..., -1] > rtol * s[..., 0] if vectors.shape[-2] <= vectors.shape[-1] else np.zeros(s.shape[:-1], bool)


def kruskal_rank_brute(vectors: np.ndarray, rtol: float = 1e-9) -> int:
    """Exact Kruskal rank: the largest k such that every k of the (N, d) vectors are independent."""
    vectors = np.asarray(vectors, dtype=np.float64)
    N, d = vectors.shape
    best = 0
    for k in range(1, min(N, d) + 1):
        subsets = np.array(list(itertools.combinations(range(N), k)))
        if not independent(vectors[subsets], rtol).all():
            return best
        best = k
    return best


def kruskal_rank_sampled(vectors: np.ndarray, trials: int, rng: np.random.Generator,
                         rtol: float = 1e-9) -> dict:
    """Estimate the Kruskal rank from above by random k-subsets (k = 1, 2, …).

    A dependent sampled subset proves krank < k; when every sampled subset is independent the
    estimate is only an upper bound. If C(N, k) ≤ trials every k-subset is checked, and a clean
    exhaustive level proves krank ≥ k. `proven` says the estimate is exact: its upper side is
    proven by a dependent subset (or by k = min(N, d)) and its lower side by an exhaustive level.
    """
    vectors = np.asarray(vectors, dtype=np.float64)
    N, d = vectors.shape
    exhaustive_below = True  # level 0 holds trivially
    for k in range(1, min(N, d) + 1):
        exhaustive = math.comb(N, k) <= trials
        if exhaustive:
            subsets = np.array(list(itertools.combinations(range(N), k)))
        else:
            subsets = np.stack([rng.choice(N, size=k, replace=False) for _ in range(trials)])
        if not independent(vectors[subsets], rtol).all():
            return {"estimate": k - 1, "proven": exhaustive_below}
        exhaustive_below = exhaustive
    return {"estimate": min(N, d), "proven": exhaustive_below}


def coherence_lower_bound(vectors: np.ndarray) -> dict:
    """Mutual coherence μ of the normalised vectors and the bound krank ≥ ⌈1/μ⌉ (from spark ≥ 1 + 1/μ).

    Zero or repeated-direction vectors give μ = 1 and the trivial bound 1 (0 with a zero vector)."""
    vectors = np.asarray(vectors, dtype=np.float64)
    norms = np.linalg.norm(vectors, axis=1)
    if (norms == 0).any():
        return {"coherence": 1.0, "bound": 0}
    unit = vectors / norms[:, None]
    gram = np.abs(unit @ unit.T)
    np.fill_diagonal(gram, 0.0)
    mu = float(gram.max()) if len(vectors) > 1 else 0.0
    bound = len(vectors) if mu == 0 else math.ceil(1.0 / mu - 1e-12)
    return {"coherence": mu, "bound": int(min(bound, vectors.shape[1], len(vectors)))}


def planted_kruskal(N: int, d: int, krank: int, rng: np.random.Generator, kind: str = "single") -> np.ndarray:
    """N vectors in R^d with Kruskal rank exactly `krank` (1 ≤ krank ≤ min(N, d)).

    kind "subspace": all vectors generic inside a random krank-dim subspace, so every
    (krank+1)-subset is dependent (easy to detect by sampling). kind "single": generic vectors except
    that vector `krank` is a generic combination of the first krank ones, so exactly one
    (krank+1)-subset (and its supersets) is dependent (hard to find by sampling); every krank-subset
    stays independent because each coefficient of the combination is nonzero.
    """
    if kind == "subspace":
        return rng.standard_normal((N, krank)) @ rng.standard_normal((krank, d))
    if kind != "single":
        raise ValueError(f"unknown planted kind {kind!r}")
    vectors = rng.standard_normal((N, d))
    if krank < min(N, d):
        vectors[krank] = rng.standard_normal(krank) @ vectors[:krank]
    return vectors
