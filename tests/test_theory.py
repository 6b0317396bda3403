"""Closed forms of claim 1 against brute force in float64."""
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from scipy import integrate, special, stats

from attncap import theory
from attncap.experiments.retrieval_capacity import (first_failure, largest_n, linear_error2, median_interval,
                                                    snr_inverse_samples, softmax_error2_explicit)
from attncap.tasks.retrieval_capacity import DotStream, sample_unit_dots, unit_vectors


@pytest.mark.parametrize("d,n", [(8, 5), (32, 20), (64, 100)])
def test_linear_crosstalk_mean_is_n_minus_one_over_d(d, n):
    rng = np.random.default_rng(0)
    err = linear_error2(rng, n, d, 20000)
    se = err.std(ddof=1) / math.sqrt(len(err))
    assert abs(err.mean() - (n - 1) / d) < 4 * se


def test_squared_dot_of_unit_vectors_has_mean_one_over_d():
    rng = np.random.default_rng(1)
    a, b = unit_vectors(rng, (200000,), 10), unit_vectors(rng, (200000,), 10)
    t2 = (a * b).sum(-1) ** 2
    assert abs(t2.mean() - 0.1) < 4 * t2.std() / math.sqrt(len(t2))


@pytest.mark.parametrize("d", [3, 4, 8, 24])
def test_dot_product_follows_the_beta_law(d):
    rng = np.random.default_rng(2)
    a, b = unit_vectors(rng, (5000,), d), unit_vectors(rng, (5000,), d)
    half = (1 + (a * b).sum(-1)) / 2
    shape = theory.unit_dot_beta_shape(d)
    assert stats.kstest(half, stats.beta(shape, shape).cdf).pvalue > 1e-3


@pytest.mark.parametrize("d,s", [(3, 0.7), (4, 2.0), (8, 8.0), (24, 24.0), (24, 48.0), (64, 64.0)])
def test_exact_mgf_matches_numerical_integration(d, s):
    a = (d - 1) / 2
    density = lambda t: (1 - t * t) ** ((d - 3) / 2) / (special.beta(a, a) * 2 ** (d - 2))  # noqa: E731
    value, _ = integrate.quad(lambda t: np.exp(s * (t - 1)) * density(t), -1, 1, epsabs=0, epsrel=1e-11, limit=200)
    assert theory.log_mgf_unit_dot(s, d) - s == pytest.approx(math.log(value), abs=1e-8)


def test_mgf_at_zero_and_gaussian_limit():
    assert theory.log_mgf_unit_dot(0.0, 16) == 0.0
    # for s = O(1) and large d the Gaussian approximation is accurate
    assert theory.log_mgf_unit_dot(1.0, 4096) == pytest.approx(theory.log_mgf_gaussian(1.0, 4096), rel=1e-3)
    # for s = d it is not: the exact MGF is far smaller (bounded support)
    assert theory.log_mgf_unit_dot(24.0, 24) < theory.log_mgf_gaussian(24.0, 24) - 2


def test_blog_table_is_recomputed():
    d = np.array([64, 128, 256, 512, 1024])
    assert list(theory.linear_capacity(0.1, d)) == [1, 2, 3, 6, 11]
    published = np.array([2e11, 2e25, 1e53, 4e108, 6e219])
    assert np.allclose(np.log10(theory.blog_softmax_capacity(0.1, d)), np.log10(published), atol=0.15)


@pytest.mark.parametrize("d,n", [(4, 4), (8, 16), (12, 64)])
def test_beta_shortcut_matches_explicit_softmax(d, n):
    rng = np.random.default_rng(3)
    explicit = softmax_error2_explicit(rng, n, d, float(d), 8000)
    shortcut = theory.softmax_error2_given_dots(sample_unit_dots(rng, (8000, n - 1), d), float(d))
    se = math.hypot(explicit.std(ddof=1) / math.sqrt(len(explicit)), shortcut.std(ddof=1) / math.sqrt(len(shortcut)))
    assert abs(explicit.mean() - shortcut.mean()) < 4 * se


def test_dot_stream_sums_are_nested_and_chunk_invariant():
    small = DotStream(6, [3.0, 6.0], queries=5, seed=7, chunk=16)
    for n in (1, 2, 17, 40, 33):
        s1, s2 = small.sums(n - 1)
        dots = np.concatenate([small._chunk_dots(c) for c in range(math.ceil(max(n - 1, 1) / 16))], axis=1)[:, : n - 1]
        for b, beta in enumerate([3.0, 6.0]):
            x = np.exp(beta * (dots - 1))
            np.testing.assert_allclose(s1[b], x.sum(-1), rtol=1e-12)
            np.testing.assert_allclose(s2[b], (x * x).sum(-1), rtol=1e-12)
            np.testing.assert_allclose(small.error2(n)[b], theory.softmax_error2_given_dots(dots, beta), rtol=1e-12)


def test_snr_closed_forms_match_monte_carlo():
    rng = np.random.default_rng(4)
    samples = snr_inverse_samples(rng, 256, 16, 6000, [0.5])
    linear, exp = theory.snr_inv_linear(256, 16), theory.snr_inv_exp(256, 16, 0.5)
    for values, closed in ((samples["linear"], linear), (samples["exp_0.5"], exp)):
        se = values.std(ddof=1) / math.sqrt(len(values))
        assert abs(values.mean() - closed["mean"]) < 5 * se


@settings(max_examples=60, deadline=None)
@given(threshold=st.integers(1, 500), n_max=st.integers(1, 600))
def test_largest_n_finds_the_threshold(threshold, n_max):
    assert largest_n(lambda n: n <= threshold, n_max) == min(threshold, n_max)


def test_linear_capacity_formula_matches_definition():
    for d in (16, 64, 100):
        for eps in (0.25, 0.5, 1.0):
            expected = max(n for n in range(1, 4 * d + 2) if (n - 1) / d <= eps**2 + 1e-12)
            assert theory.linear_capacity(eps, d) == expected


def test_exp_kernel_min_dim_is_smallest_solution():
    for n in (100, 10_000, 1_000_000):
        d = int(theory.exp_kernel_min_dim(n))
        assert (n - 1) * math.exp(2 - 2 * math.sqrt(d)) <= 1 < (n - 1) * math.exp(2 - 2 * math.sqrt(d - 1))


@settings(max_examples=60, deadline=None)
@given(threshold=st.integers(3, 400), limit=st.integers(3, 400))
def test_first_failure_finds_the_flip_and_evaluates_each_point_once(threshold, limit):
    seen = []

    def still_failing(d):
        assert d not in seen, f"{d} evaluated twice"
        seen.append(d)
        return d < threshold

    expected = threshold if threshold <= limit else None
    assert first_failure(still_failing, 3, limit) == expected


# ---------------------------------------------------------------- ReLU feature map (issue 23 §2) ---
def test_rectified_gaussian_moments_match_integration():
    density = stats.norm.pdf
    mean, _ = integrate.quad(lambda x: x * density(x), 0, np.inf, epsabs=0, epsrel=1e-12)
    second, _ = integrate.quad(lambda x: x * x * density(x), 0, np.inf, epsabs=0, epsrel=1e-12)
    assert theory.RELU_MEAN == pytest.approx(mean, rel=1e-10)
    assert theory.RELU_SECOND == pytest.approx(second, rel=1e-10)
    assert theory.RELU_VARIANCE == pytest.approx(second - mean**2, rel=1e-10)


@pytest.mark.parametrize("rho", [-0.95, -0.4, 0.0, 0.3, 0.8, 0.99])
def test_arccos_kernel_matches_double_integral(rho):
    # E[max(x,0)·max(y,0)] = ∫∫_{x,y>0} x·y·φ₂(x, y; ρ): y = ρx + √(1−ρ²)z, integrate z over y > 0 in closed
    # form per x (E[max(a + b z, 0)] = a·Φ(a/b) + b·φ(a/b)), then x numerically
    b = math.sqrt(1 - rho * rho)
    inner = lambda x: x * stats.norm.pdf(x) * (rho * x * stats.norm.cdf(rho * x / b) + b * stats.norm.pdf(rho * x / b))  # noqa: E731
    value, _ = integrate.quad(inner, 0, np.inf, epsabs=0, epsrel=1e-11)
    assert float(theory.relu_arccos_kernel(rho)) == pytest.approx(value, rel=1e-8)


def test_arccos_kernel_ends_and_brute_force():
    assert float(theory.relu_arccos_kernel(1.0)) == pytest.approx(theory.RELU_SECOND, abs=1e-15)
    assert float(theory.relu_arccos_kernel(0.0)) == pytest.approx(theory.RELU_MEAN**2, abs=1e-15)
    assert float(theory.relu_arccos_kernel(-1.0)) == pytest.approx(0.0, abs=1e-15)
    rng = np.random.default_rng(11)
    x, z = rng.standard_normal((2, 400_000))
    y = 0.6 * x + 0.8 * z
    prod = np.maximum(x, 0) * np.maximum(y, 0)
    assert abs(prod.mean() - float(theory.relu_arccos_kernel(0.6))) < 5 * prod.std() / math.sqrt(len(prod))


@pytest.mark.parametrize("centred", [False, True])
def test_relu_crosstalk_second_moment_matches_brute_force(centred):
    rng = np.random.default_rng(12)
    d = 12
    shift = theory.RELU_MEAN if centred else 0.0
    a = np.maximum(rng.standard_normal(d), 0.0) - shift  # φ(k_i), fixed
    kappa = (np.maximum(rng.standard_normal((300_000, d)), 0.0) - shift) @ a  # κ_j over fresh k_j
    sq = kappa**2
    expected = (a @ a) * theory.RELU_VARIANCE if centred else theory.relu_crosstalk_second_moment(a.sum(), a @ a)
    assert abs(sq.mean() - expected) < 5 * sq.std() / math.sqrt(len(sq))


def test_relu_typical_snr_is_the_plug_in_ratio_and_floors_at_one_over_pi_squared():
    for d in (8, 64, 4096):
        s1, s2 = d * theory.RELU_MEAN, d * theory.RELU_SECOND
        plug_in = theory.relu_crosstalk_second_moment(s1, s2) / s2**2
        assert float(theory.snr_inv_relu(2, d)["typical"]) == pytest.approx(plug_in, rel=1e-12)
        assert float(theory.snr_inv_relu(2, d, centred=True)["typical"]) == pytest.approx(1 / d, rel=1e-12)
    assert float(theory.snr_inv_relu(2, 10**9)["typical"]) == pytest.approx(1 / math.pi**2, rel=1e-8)
    assert np.isinf(theory.snr_inv_relu(100, 64)["mean"])  # c = 0 with probability 2^−d: no finite mean


def test_relu_crosstalk_power_given_the_query_matches_explicit_memories():
    # E[||r||² | k_i] = (N−1)·d·E[κ_j²|k_i] with explicit keys and values (the E2 definition, uncentred)
    rng = np.random.default_rng(13)
    d, n, memories = 10, 40, 6000
    k_i = rng.standard_normal(d)
    a = np.maximum(k_i, 0.0)
    keys, values = rng.standard_normal((memories, n - 1, d)), rng.standard_normal((memories, n - 1, d))
    r = np.einsum("mj,mjd->md", np.maximum(keys, 0.0) @ a, values)
    power = (r**2).sum(-1)
    expected = (n - 1) * d * theory.relu_crosstalk_second_moment(a.sum(), a @ a)
    assert abs(power.mean() - expected) < 5 * power.std() / math.sqrt(memories)


def test_relu_snr_samples_follow_the_definition_query_by_query():
    rng = np.random.default_rng(14)
    n, d = 24, 6
    samples = snr_inverse_samples(np.random.default_rng(5), n, d, n, [1.0])
    keys, values = np.random.default_rng(5).standard_normal((2, n, d))  # the same draws, in the same order
    for name, shift in (("relu", 0.0), ("relu_centred", theory.RELU_MEAN)):
        phi = np.maximum(keys, 0.0) - shift
        for i in range(n):
            c = phi[i] @ phi[i]
            r = sum((phi[j] @ phi[i]) * values[j] for j in range(n) if j != i)
            expected = (r @ r) / (c * c * (values[i] @ values[i])) if c > 0 else np.inf
            assert samples[name][i] == pytest.approx(expected, rel=1e-9)
    # a key with no positive coordinate has no ReLU signal: SNR⁻¹ = +inf (d = 2: probability 1/4)
    zero = snr_inverse_samples(rng, 16, 2, 256, [1.0])["relu"]
    assert np.isinf(zero).sum() > 0 and np.isfinite(zero).sum() > 0


def test_median_interval_is_deterministic_and_brackets_the_median():
    rng = np.random.default_rng(15)
    values, units = rng.lognormal(size=512), np.repeat(np.arange(8), 64)
    lo, hi = median_interval(values, units, seed=3)
    assert (lo, hi) == median_interval(values, units, seed=3)
    assert lo <= np.median(values) <= hi
    assert all(np.isnan(median_interval(values, np.zeros(512, int), seed=3)))


def test_linear_error_cells_take_their_standard_error_over_memories():
    """The N queries of one memory share its pairs, so the mean error of a cell varies more than independent
    queries would say: the spread of repeated cell means (float64 brute force) matches the standard error over
    memories that E1 records, and is clearly wider than the naive per-query one."""
    import math

    import numpy as np

    from attncap.experiments.retrieval_capacity import linear_error2

    n, d, queries = 8, 16, 4096
    means, naive, clustered = [], [], []
    for seed in range(60):
        err = linear_error2(np.random.default_rng(seed), n, d, queries)
        per_memory = err.reshape(-1, n).mean(1)
        means.append(err.mean())
        naive.append(err.std(ddof=1) / math.sqrt(len(err)))
        clustered.append(per_memory.std(ddof=1) / math.sqrt(len(per_memory)))
    spread = float(np.std(means, ddof=1))
    assert abs(spread / np.mean(clustered) - 1) < 0.25
    assert spread / np.mean(naive) > 1.15


# ------------------------------------------------------------- E4: P(SNR⁻¹ ≤ 1) per query ------
def test_exp_kernel_typical_dim_is_where_the_typical_snr_is_one():
    for n in (100, 10_000, 1_000_000):
        d = float(theory.exp_kernel_typical_dim(n))
        assert math.isclose((n - 1) * math.exp(2 - 2 * math.sqrt(d)), 1.0, rel_tol=1e-12)


@pytest.mark.parametrize("n,d", [(100, 3), (100, 12), (3162, 26), (100_000, 46)])
def test_conditional_probability_matches_adaptive_quadrature(n, d):
    """The midpoint rule over χ²_d quantiles and the spline in a give the integral over ρ to 1e-6."""
    from attncap.experiments.retrieval_capacity import SnrProbabilities

    probs = SnrProbabilities(n, seed=3, block=4)
    values = probs(d, 4)
    z = np.random.default_rng([3, 4, n, 0]).standard_normal((4, n - 1))  # block 0's stream
    for q in range(2):
        def integrand(rho):
            log_sum = special.logsumexp(2 * math.sqrt(rho / d) * z[q])
            return special.betainc(d / 2, d / 2, special.expit(2 * rho / math.sqrt(d) - log_sum)) * stats.chi2.pdf(rho, d)
        exact, _ = integrate.quad(integrand, 0, np.inf, limit=400, epsabs=1e-11)
        assert abs(values[q] - exact) < 1e-6


@pytest.mark.parametrize("n,d", [(64, 6), (200, 12)])
def test_conditional_probabilities_average_to_the_explicit_fraction(n, d):
    """Their mean is P(SNR⁻¹ ≤ 1) measured on explicit Gaussian keys and values (snr_inverse_samples, γ = 1)."""
    from attncap.experiments.retrieval_capacity import SnrProbabilities

    from attncap.experiments.retrieval_capacity import snr_memory_ids

    explicit = snr_inverse_samples(np.random.default_rng(11), n, d, 40 * n, [1.0])["exp_1.0"] <= 1.0
    memory = snr_memory_ids(n, 40 * n)  # queries of one memory share its keys: the memory is the unit
    fractions = np.array([explicit[memory == m].mean() for m in np.unique(memory)])
    conditional = SnrProbabilities(n, seed=5, block=64)(d, 2048)
    gap = fractions.mean() - conditional.mean()
    se = math.hypot(fractions.std(ddof=1) / math.sqrt(len(fractions)), conditional.std(ddof=1) / math.sqrt(len(conditional)))
    assert abs(gap) < 4 * se
    assert conditional.std() < 0.5 * explicit.std()  # what conditioning buys


def test_conditional_probabilities_are_nested_and_shared_across_d():
    from attncap.experiments.retrieval_capacity import SnrProbabilities

    probs = SnrProbabilities(1000, seed=2, block=8)
    first = probs(20, 8)
    assert np.array_equal(probs(20, 24)[:8], first)
    again = SnrProbabilities(1000, seed=2, block=8)
    again(40, 8)  # another d first: block 0's grid values come from the same stream
    assert np.array_equal(again(20, 8), first)
    assert np.all((first >= 0) & (first <= 1))
