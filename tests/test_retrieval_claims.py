"""Claim-1 verdict functions: synthetic results that must pass, and perturbed ones that must fail."""
import numpy as np
import pandas as pd
import pytest

from attncap.claims import INCONCLUSIVE, NOT_REPRODUCED, REPRODUCED
from attncap.claims import retrieval_capacity as rc


def e1_table(noise=0.0, capacity_shift=0):
    rows = []
    for d in (16, 32, 64, 128):
        for n in (1, 2, 8, 32, 4 * d):
            theory = (n - 1) / d
            rows.append({"kind": "grid", "d": d, "n": n, "queries": 5000, "mean_error2": theory * (1 + noise),
                         "theory_error2": theory})
        for eps in (0.5, 1.0):
            cap = int(np.floor(eps**2 * d)) + 1
            rows.append({"kind": "capacity", "d": d, "n": cap + capacity_shift, "epsilon": eps, "theory_capacity": cap})
    return pd.DataFrame(rows)


def e3_table(growth=0.5, bound_factor=0.5, larger_beta_better=False):
    rows = []
    for d in (4, 8, 12, 16, 20):
        for name, beta in (("sqrt_d", d**0.5), ("d", float(d)), ("two_d", 2.0 * d)):
            n_star = int(np.exp(growth * d)) + 1 if name == "d" else int(np.exp(0.2 * d)) + 1
            if name == "two_d" and larger_beta_better:
                n_star = int(np.exp(growth * d)) * 3 + 1
            rows.append({"kind": "capacity", "d": d, "beta_name": name, "beta": beta, "epsilon": 0.1, "n_star": n_star,
                         "censored": False, "bound_gaussian": n_star * bound_factor, "bound_exact": n_star * bound_factor})
    rows.append({"kind": "validation", "d": 4, "z_score": 0.5})
    return pd.DataFrame(rows)


def e5_table(linear_at_hard=0.2, softmax_min=0.99):
    rows = []
    for d in (16, 32, 64):
        for kv in (4, 8, 16):
            rows.append({"mixer": "softmax", "d_model": d, "kv_pairs": kv, "accuracy": softmax_min if d >= 32 else 0.97})
            lin = min(1.0, 0.9 * d / 64 - 0.02 * kv + 0.3)
            if d == 16 and kv == 16:
                lin = linear_at_hard
            rows.append({"mixer": "linear_elu", "d_model": d, "kv_pairs": kv, "accuracy": lin})
    return pd.DataFrame(rows)


def test_linear_law_passes_on_exact_and_fails_when_biased():
    assert rc.linear_error_law(e1_table()).verdict == REPRODUCED
    assert rc.linear_error_law(e1_table(noise=0.05)).verdict == NOT_REPRODUCED
    assert rc.linear_capacity_law(e1_table()).verdict == REPRODUCED
    assert rc.linear_capacity_law(e1_table(capacity_shift=2)).verdict == NOT_REPRODUCED


def test_softmax_bound_check_fails_when_bound_exceeds_measurement():
    assert rc.softmax_bound_valid(e3_table(), "gaussian").verdict == REPRODUCED
    assert rc.softmax_bound_valid(e3_table(bound_factor=3.0), "gaussian").verdict == NOT_REPRODUCED


def test_exponential_growth_check():
    assert rc.exponential_vs_linear(e3_table(), e1_table()).verdict == REPRODUCED
    flat = e3_table()
    flat.loc[flat["beta_name"] == "d", "n_star"] = [5, 3, 6, 2, 5]  # no growth with d
    assert rc.exponential_vs_linear(flat, e1_table()).verdict != REPRODUCED


def test_temperature_verdict_says_which():
    assert rc.temperature_optimum(e3_table()).verdict == REPRODUCED
    grows = rc.temperature_optimum(e3_table(larger_beta_better=True))
    assert grows.verdict == NOT_REPRODUCED and grows.measured["conclusion"] == "keeps growing with β"
    no_larger = e3_table()
    assert rc.temperature_optimum(no_larger[no_larger["beta_name"] != "two_d"]).verdict == INCONCLUSIVE


def test_log_squared_law():
    n = np.array([1e2, 1e3, 1e4, 1e5, 1e6])
    good = pd.DataFrame({"ln_n_squared": np.log(n) ** 2, "d_min": np.round(0.3 * np.log(n) ** 2 + 5), "censored": False})
    assert rc.log_squared_law(good).verdict == REPRODUCED
    bad = good.assign(d_min=[40, 5, 60, 3, 50])
    assert rc.log_squared_law(bad).verdict == NOT_REPRODUCED


def test_trained_checks():
    solve, trend, gap = rc.trained_recall(e5_table())
    assert (solve.verdict, trend.verdict, gap.verdict) == (REPRODUCED, REPRODUCED, REPRODUCED)
    solve, _, gap = rc.trained_recall(e5_table(linear_at_hard=0.9, softmax_min=0.5))
    assert solve.verdict == NOT_REPRODUCED and gap.verdict == NOT_REPRODUCED


@pytest.mark.parametrize("missing", ["E1", "E3", "E4", "E5"])
def test_missing_inputs_are_never_reproduced(missing):
    tables = {"E1": e1_table(), "E3": e3_table(), "E5": e5_table(),
              "E4": pd.DataFrame({"ln_n_squared": [1.0, 4, 9], "d_min": [1, 4, 9], "censored": False})}
    del tables[missing]
    checks = rc.checks(tables)
    affected = {"E1": {"linear_error_law", "linear_capacity", "exponential_vs_linear"},
                "E3": {"beta_shortcut", "softmax_bound_gaussian", "softmax_bound_exact", "exponential_vs_linear",
                       "temperature_optimum"},
                "E4": {"log_squared_law"}, "E5": {"mqar_softmax_solves", "mqar_linear_trends", "mqar_gap"}}[missing]
    for check in checks:
        if check.id in affected:
            assert check.verdict == INCONCLUSIVE, check.id


def test_smoke_tier_training_is_never_conclusive():
    checks = rc.trained_recall(e5_table().assign(tier="smoke"))
    assert all(c.verdict == INCONCLUSIVE for c in checks)
