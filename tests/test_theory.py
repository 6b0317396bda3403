"""Closed forms of claim 1 against brute force in float64."""
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from scipy import integrate, special, stats

from attncap import theory
from attncap.experiments.retrieval_capacity import first_failure, largest_n, linear_error2, snr_inverse_samples, softmax_error2_explicit
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
