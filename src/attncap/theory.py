"""Closed forms for associative retrieval: linear crosstalk, the softmax error bound, the exact MGF of the
dot product of random unit vectors, retrieval-SNR formulas for Gaussian keys, and the accuracy that X memorised
associations guarantee on N² token pairs (claim 2).

Everything is float64 numpy/scipy and tested against brute force (tests/test_theory.py).
"""
from __future__ import annotations

import numpy as np
from scipy import special


# ---------------------------------------------------------------- random unit vectors ----------
def unit_dot_beta_shape(d: int) -> float:
    """(1 + k·k')/2 ~ Beta(a, a) with a = (d-1)/2 for independent uniform unit vectors in R^d."""
    return (d - 1) / 2.0


def log_mgf_unit_dot(s, d: int):
    """log E[exp(s·t)], t = k·k' for independent uniform unit vectors in R^d (exact).

    M_d(s) = Γ(d/2)·(2/s)^{d/2-1}·I_{d/2-1}(s); computed with the exponentially scaled Bessel
    function `ive` (I_v(s) = ive(v, s)·e^s) so it stays finite for s in the thousands.
    """
    s = np.abs(np.asarray(s, dtype=float))  # t is symmetric, so M(s) = M(-s)
    nu = d / 2.0 - 1.0
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        bessel = special.gammaln(d / 2.0) + nu * np.log(2.0 / s) + np.log(special.ive(nu, s)) + s
        # M_d(s) = 0F1(; d/2; s²/4): finite where ive underflows (large order, small argument)
        series = np.log(special.hyp0f1(d / 2.0, s * s / 4.0))
    value = np.where(np.isfinite(bessel), bessel, series)
    return np.where(s == 0, 0.0, value)


def log_mgf_gaussian(s, d: int):
    """The blog's approximation: t ≈ N(0, 1/d), so log M(s) ≈ s²/(2d)."""
    return np.asarray(s, dtype=float) ** 2 / (2.0 * d)


# ---------------------------------------------------------------- linear attention -------------
def linear_mean_error2(n, d):
    """E||ṽ_i − v_i||² = (N−1)/d for linear retrieval of N unit pairs (exact)."""
    return (np.asarray(n, dtype=float) - 1.0) / d


def linear_capacity(eps, d):
    """Largest N with (N−1)/d ≤ ε²: ⌊ε²d⌋ + 1."""
    return np.floor(np.asarray(eps, dtype=float) ** 2 * np.asarray(d) + 1e-12).astype(int) + 1


# ---------------------------------------------------------------- softmax attention ------------
def softmax_capacity_bound(eps, d: int, beta, mgf: str = "exact"):
    """N below which the bound guarantees mean error² ≤ ε²: 1 + ε²·e^β / (4·M_d(β)) (a lower bound on capacity)."""
    log_m = log_mgf_unit_dot(beta, d) if mgf == "exact" else log_mgf_gaussian(beta, d)
    return 1.0 + np.asarray(eps, dtype=float) ** 2 / 4.0 * np.exp(beta - log_m)


def blog_softmax_capacity(eps, d):
    """The blog's table formula at its optimum β = d with the Gaussian MGF: (ε²/4)·e^{d/2} + 1."""
    return np.asarray(eps, dtype=float) ** 2 / 4.0 * np.exp(np.asarray(d, dtype=float) / 2.0) + 1.0


def beta_value(name: str, d: int) -> float:
    """Inverse temperatures named in configs."""
    return {"sqrt_d": np.sqrt(d), "half_d": d / 2.0, "d": float(d), "two_d": 2.0 * d}[name]


def softmax_error2_given_dots(dots: np.ndarray, beta: float) -> np.ndarray:
    """Exact E_v||ṽ_i − v_i||² given the N−1 crosstalk dot products t_j (last axis), query q = k_i.

    Values are independent, zero-mean unit vectors, so with softmax weights w the error is
    (1 − w_i)² + Σ_{j≠i} w_j². Written with x_j = e^{β(t_j − 1)} ≤ 1 to avoid overflow.
    """
    x = np.exp(beta * (dots - 1.0))
    s1, s2 = x.sum(-1), (x * x).sum(-1)
    return (s1 * s1 + s2) / (1.0 + s1) ** 2


# ---------------------------------------------------------------- retrieval SNR ----------------
def snr_inv_linear(n, d):
    """Zhong et al.'s SNR⁻¹ for the linear kernel with Gaussian keys and values.

    mean: E[||r||²/(c²||v_i||²)] = (N−1)·d/(d−2)² exactly (E[1/χ²_d] = 1/(d−2) twice);
    typical: (N−1)/d (the paper's N/d_k).
    """
    n = np.asarray(n, dtype=float)
    return {"mean": (n - 1.0) * d / (d - 2.0) ** 2, "typical": (n - 1.0) / d}


def snr_inv_exp(n, d, scale: float = 1.0):
    """SNR⁻¹ for κ(q, k) = exp(γ·q·k/√d), Gaussian keys and values.

    Given ||k_i||² = ρ: E[Σκ_j²]/c² = (N−1)·exp(aρ), a = 2γ²/d − 2γ/√d.
    mean: d/(d−2)·(N−1)·(1−2a)^{−d/2} (χ² MGF); typical (ρ = d): (N−1)·exp(2γ² − 2γ√d).
    """
    n = np.asarray(n, dtype=float)
    a = 2.0 * scale**2 / d - 2.0 * scale / np.sqrt(d)
    mean = d / (d - 2.0) * (n - 1.0) * (1.0 - 2.0 * a) ** (-d / 2.0)
    typical = (n - 1.0) * np.exp(2.0 * scale**2 - 2.0 * scale * np.sqrt(d))
    return {"mean": mean, "typical": typical}


def exp_kernel_typical_dim(n) -> np.ndarray:
    """The d where the typical SNR⁻¹ (N−1)·exp(2 − 2√d) equals 1: (1 + ln(N−1)/2)² = O(log² N)."""
    return (1.0 + np.log(np.asarray(n, dtype=float) - 1.0) / 2.0) ** 2


def exp_kernel_min_dim(n) -> np.ndarray:
    """Smallest integer d with typical SNR⁻¹ (N−1)·exp(2 − 2√d) ≤ 1 (`exp_kernel_typical_dim`, rounded up)."""
    return np.ceil(exp_kernel_typical_dim(n) - 1e-9).astype(int)


# ---------------------------------------------------------------- ReLU feature map -------------
# φ(x) = max(x, 0) applied to every coordinate of keys and query, κ(q, k) = φ(q)·φ(k). Its features have
# a non-zero mean, which is what separates it from the linear kernel (see snr_inv_relu).
RELU_MEAN = 1.0 / np.sqrt(2.0 * np.pi)
"""E[max(x, 0)] for x ~ N(0, 1)."""
RELU_SECOND = 0.5
"""E[max(x, 0)²] for x ~ N(0, 1)."""
RELU_VARIANCE = RELU_SECOND - RELU_MEAN**2
"""Var[max(x, 0)] = 1/2 − 1/(2π)."""


def relu_arccos_kernel(rho):
    """E[max(x, 0)·max(y, 0)] for standard normals x, y with correlation ρ: the arc-cosine kernel of order 1
    (Cho & Saul 2009) at unit norms, (sin θ + (π − θ)·cos θ)/(2π) with θ = arccos ρ. ρ = 1 gives 1/2 (the
    second moment), ρ = 0 gives 1/(2π) (the squared mean)."""
    theta = np.arccos(np.clip(np.asarray(rho, dtype=float), -1.0, 1.0))
    return (np.sin(theta) + (np.pi - theta) * np.cos(theta)) / (2.0 * np.pi)


def relu_crosstalk_second_moment(s1, s2):
    """E[κ_j² | k_i] for κ_j = φ(k_i)·φ(k_j) with k_j ~ N(0, I) independent of k_i, where s1 = Σ_m φ(k_i)_m
    and s2 = Σ_m φ(k_i)_m² (= c, the signal): s2·E[φ²] + (s1² − s2)·E[φ]² = s2/2 + (s1² − s2)/(2π)."""
    s1, s2 = np.asarray(s1, dtype=float), np.asarray(s2, dtype=float)
    return s2 * RELU_SECOND + (s1 * s1 - s2) * RELU_MEAN**2


def snr_inv_relu(n, d, centred: bool = False):
    """SNR⁻¹ of the ReLU feature map with Gaussian keys and values (the E2 definition: q = k_i, c = φ(k_i)·φ(k_i),
    r = Σ_{j≠i} κ_j v_j, SNR⁻¹ = ||r||²/(c²||v_i||²); nothing is centred).

    typical (the key at its law of large numbers, s1 = d/√(2π), s2 = d/2, ||v||² = d, as snr_inv_exp's
    typical key): (N−1)·E[κ_j²|k_i]/c² = (N−1)·(1/π² + (1 − 1/π)/d). The 1/π² floor is the features'
    mean: every crosstalk term carries E[κ_j] = s1/√(2π) ≈ d/(2π), a constant share of c ≈ d/2 at any d,
    so the noise per stored pair does not fall below 1/π² as d grows (the linear kernel's falls as 1/d).
    centred (φ − E φ): E[κ_j²|k_i] = c·Var φ and c ≈ d·Var φ, so typical = (N−1)/d, as the linear kernel.
    mean: infinite for the uncentred map at every d (c = 0 with probability 2^{−d}, and E[1/c²] diverges
    where ≤ 4 coordinates of k_i are positive); no closed form is known for the centred map's mean (NaN).
    """
    n = np.asarray(n, dtype=float)
    if centred:
        return {"mean": np.full_like(n, np.nan), "typical": (n - 1.0) / d}
    typical = (n - 1.0) * (1.0 / np.pi**2 + (1.0 - 1.0 / np.pi) / d)
    return {"mean": np.full_like(n, np.inf), "typical": typical}


# ---------------------------------------------------------------- attention-only transformers (claim 2) --
def associations_from_accuracy(accuracy, n_tokens: int):
    """Invert acc = 1/N + (1 − 1/N)·X/N² (random guessing on the pairs not memorised): X associations."""
    return (accuracy - 1.0 / n_tokens) * n_tokens**2 / (1.0 - 1.0 / n_tokens)


def accuracy_bound(associations, n_tokens: int):
    """φ(X) = 1/N + (1 − 1/N)·min(X, N²)/N²: the accuracy X memorised associations guarantee."""
    x = np.minimum(np.asarray(associations, dtype=float), n_tokens**2)
    return 1.0 / n_tokens + (1.0 - 1.0 / n_tokens) * x / n_tokens**2
