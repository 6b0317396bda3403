"""Closed forms for associative retrieval: linear crosstalk, the softmax error bound, the exact MGF of the
dot product of random unit vectors, and retrieval-SNR formulas for Gaussian keys.

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


def exp_kernel_min_dim(n) -> np.ndarray:
    """Smallest integer d with typical SNR⁻¹ (N−1)·exp(2 − 2√d) ≤ 1: d ≥ (1 + ln(N−1)/2)² = O(log² N)."""
    return np.ceil((1.0 + np.log(np.asarray(n, dtype=float) - 1.0) / 2.0) ** 2 - 1e-9).astype(int)
