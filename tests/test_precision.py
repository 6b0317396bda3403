"""Monte Carlo capacities to a stated precision (issue 13): the sequential test, the crossing search,
and the capacity searches of claim 1 on cases whose answer is known."""
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from attncap import theory
from attncap.experiments import retrieval_capacity as rc
from attncap.precision import (ABOVE, BELOW, DECISION_Z, UNRESOLVED, Decision, find_crossing, sequential_test)
from attncap.tasks.retrieval_capacity import GrowingDotStream


def normal_sampler(mean, sd, seed):
    values = np.random.default_rng(seed).normal(mean, sd, 1 << 16)
    return lambda q: values[:q]


@pytest.mark.parametrize("mean,expected", [(0.8, BELOW), (1.2, ABOVE), (1.0, UNRESOLVED)])
def test_sequential_test_decides_at_the_stated_precision(mean, expected):
    decision = sequential_test(normal_sampler(mean, 1.0, 0), 1.0, 64, 1 << 14)
    assert decision.side == expected
    if expected != UNRESOLVED:
        assert abs(decision.mean - 1.0) >= DECISION_Z * decision.se
        assert decision.queries < 1 << 14  # stopped early: more queries only where needed
    else:
        assert decision.queries == 1 << 14


def test_a_skewed_sample_that_misses_its_tail_is_not_trusted():
    """Rare large values carry the mean: a small sample without them has a tiny mean and a tiny SE."""
    rng = np.random.default_rng(1)
    values = np.where(rng.random(1 << 16) < 0.01, 1.0, 1e-4)  # mean ≈ 0.0101, skewness ≈ 10
    values[:64] = 1e-4  # the first look sees no tail
    decision = sequential_test(lambda q: values[:q], 0.0095, 64, 1 << 16)
    assert decision.side != BELOW


def test_find_crossing_reports_the_unresolved_band():
    band = range(40, 46)  # the decision is unresolved on 40..45, below before, above after

    def decide(x):
        side = BELOW if x < band.start else (ABOVE if x >= band.stop else UNRESOLVED)
        return Decision(x, side, x / 100, 0.01, 1)
    crossing = find_crossing(decide, 0.425, 2, 1000)
    assert (crossing.first_not_below, crossing.first_above) == (40, 46) and not crossing.resolved
    assert 40 <= crossing.estimate <= 46
    censored = find_crossing(lambda x: Decision(x, BELOW, 0.0, 0.0, 1), 0.5, 2, 1000)
    assert censored.first_not_below is None


LINEAR_SPEC = {"min_queries": 512, "max_queries": 1 << 15, "sample_budget": 1 << 21}


@pytest.mark.parametrize("d,eps", [(18, 0.5), (40, 0.3), (24, 0.6), (10, 0.5)])
def test_linear_capacity_is_resolved_to_its_closed_form(d, eps):
    """Linear attention: mean error² = (N−1)/d exactly, so N* = ⌊ε²d⌋ + 1; away from a tie the search
    resolves it (decision at N* and N* + 1 at ≥ DECISION_Z standard errors)."""
    crossing = rc.linear_capacity_search(rc.LinearSamples(d, seed=0), eps, LINEAR_SPEC, 4 * d)
    row = rc.capacity_columns(crossing, eps**2, 4 * d)
    truth = int(theory.linear_capacity(eps, d))
    assert row["status"] == "resolved" and row["n_star"] == row["n_lo"] == row["n_hi"] == truth
    assert row["z_at_lo"] >= DECISION_Z and row["z_at_hi_next"] <= -DECISION_Z


def test_linear_capacity_at_a_tie_is_an_interval_holding_the_truth():
    """ε²d integer: the mean at N = ε²d + 1 equals ε² exactly, which no sample resolves."""
    d, eps = 16, 0.5
    crossing = rc.linear_capacity_search(rc.LinearSamples(d, seed=0), eps, LINEAR_SPEC, 4 * d)
    row = rc.capacity_columns(crossing, eps**2, 4 * d)
    assert row["status"] == "unresolved" and row["n_lo"] <= 5 <= row["n_hi"] and row["n_hi"] - row["n_lo"] <= 2


SOFTMAX_SPEC = {"min_queries": 32, "max_queries": 1 << 14, "sample_budget": 1 << 20}


def softmax_capacities(dims, eps, seed):
    rows = {}
    for d in dims:
        stream = GrowingDotStream(d, [float(d)], seed=seed, first=SOFTMAX_SPEC["min_queries"])
        crossing = rc.softmax_capacity_search(stream, 0, eps, SOFTMAX_SPEC, 1 << 14)
        rows[d] = rc.capacity_columns(crossing, eps**2, 1 << 14)
    return rows


@settings(max_examples=3, deadline=None)
@given(seed=st.integers(0, 10_000))
def test_softmax_capacity_is_monotone_in_d_within_its_intervals(seed):
    """At β = d and fixed ε the true N* is non-decreasing in d; the measured capacities must admit a
    non-decreasing sequence inside their intervals (no d resolved below a smaller d)."""
    for eps in (0.1, 0.3):
        rows = softmax_capacities([4, 6, 8, 10], eps, seed)
        dims = sorted(rows)
        for i, small in enumerate(dims):
            for large in dims[i + 1:]:
                assert rows[small]["n_lo"] <= rows[large]["n_hi"], (eps, small, large, rows[small], rows[large])


def test_softmax_capacities_match_the_independent_check():
    """Issue 13's independent Monte Carlo (20 000 queries per N): N* = 2 at d = 6 and 8 or 9 at d = 8
    (β = d, ε = 0.1); the old 16-query search reported 5 and 2."""
    rows = softmax_capacities([6, 8], 0.1, 0)
    assert rows[6]["n_lo"] <= 2 <= rows[6]["n_hi"] and rows[6]["n_hi"] <= 3
    assert rows[8]["n_lo"] >= 8 and rows[8]["n_hi"] <= 9


def test_growing_stream_extends_queries_without_changing_the_first_ones():
    stream = GrowingDotStream(8, [4.0, 8.0], seed=3, first=4, max_block=8)
    small = stream.error2(20, 4)
    large = stream.error2(20, 30)
    assert small.shape[1] == 4 and large.shape[1] >= 30
    np.testing.assert_array_equal(large[:, :4], small)
    again = GrowingDotStream(8, [4.0, 8.0], seed=3, first=4, max_block=8).error2(20, 30)
    np.testing.assert_array_equal(again, large)
    assert math.isclose(float(np.mean(large[1] >= 0)), 1.0)
