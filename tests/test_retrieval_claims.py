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
    """A learned E5 grid: every run finite, softmax with the short convolution solved (the positive
    control), linear runs on a plateau below it; the ablation without the convolution on the 1/kv plateau."""
    rows = []

    def run(mixer, conv, d, kv, accuracy, reason):
        rows.append({"mixer": mixer, "short_conv": conv, "d_model": d, "kv_pairs": kv, "accuracy": accuracy,
                     "train_accuracy": accuracy, "final_train_loss": 0.05 if accuracy > 0.9 else 2.0,
                     "stop_reason": reason, "status": "learned" if accuracy >= 0.9 else "under-trained"})

    for conv in (4, 0):
        for d in (16, 32, 64):
            for kv in (4, 8, 16):
                if conv == 0:  # the ablation: everything on the copy-a-value plateau
                    run("softmax", 0, d, kv, 1 / kv, "plateau")
                    run("linear_elu", 0, d, kv, 1 / kv, "plateau")
                    continue
                soft = softmax_min if d >= 32 else 0.97
                run("softmax", conv, d, kv, soft, "solved" if soft >= 0.99 else "plateau")
                lin = min(1.0, 0.9 * d / 64 - 0.02 * kv + 0.3)
                if d == 16 and kv == 16:
                    lin = linear_at_hard
                run("linear_elu", conv, d, kv, lin, "plateau")
    return pd.DataFrame(rows)


def _cell(table, mixer, d, kv, conv=4):
    return (table["mixer"] == mixer) & (table["d_model"] == d) & (table["kv_pairs"] == kv) & (table["short_conv"] == conv)


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
    assert all(c.precondition and not c.reason for c in (solve, trend, gap))
    # learned runs (the control ≥ 0.9 everywhere) still fail on the claim itself
    solve, _, gap = rc.trained_recall(e5_table(linear_at_hard=0.9, softmax_min=0.92))
    assert solve.verdict == NOT_REPRODUCED and gap.verdict == NOT_REPRODUCED


def test_low_linear_accuracy_on_a_plateau_is_the_claim_not_a_failure_to_learn():
    table = e5_table()
    table.loc[table["mixer"] == "linear_elu", ["accuracy", "train_accuracy"]] = 0.05  # far below 0.9, plateaued
    solve, trend, gap = rc.trained_recall(table)
    assert INCONCLUSIVE not in (solve.verdict, trend.verdict, gap.verdict)
    assert gap.verdict == REPRODUCED


def test_under_trained_positive_control_makes_every_trained_check_inconclusive():
    table = e5_table()
    table.loc[_cell(table, "softmax", 16, 16), ["accuracy", "train_accuracy"]] = 0.3  # softmax + conv did not learn
    checks = rc.trained_recall(table)
    assert [c.verdict for c in checks] == [INCONCLUSIVE] * 3
    assert all("under-trained" in c.reason and "d_model=16 kv_pairs=16 reached 0.30" in c.reason for c in checks)
    # the same table at every cell: a badly trained softmax never reads "not reproduced"
    checks = rc.trained_recall(e5_table(softmax_min=0.5))
    assert [c.verdict for c in checks] == [INCONCLUSIVE] * 3


@pytest.mark.parametrize("mixer", ["softmax", "linear_elu"])
def test_diverged_runs_make_every_affected_check_inconclusive(mixer):
    table = e5_table()
    table.loc[_cell(table, mixer, 32, 8), ["final_train_loss", "accuracy", "train_accuracy"]] = np.nan
    table.loc[_cell(table, mixer, 32, 8), "stop_reason"] = "diverged"
    solve, trend, gap = rc.trained_recall(table)
    assert trend.verdict == INCONCLUSIVE
    assert "diverged" in trend.reason and "d_model=32 kv_pairs=8" in trend.reason
    assert solve.verdict == (INCONCLUSIVE if mixer == "softmax" else REPRODUCED)
    # the gap compares one cell: a diverged control withholds it, a diverged linear run elsewhere does not
    assert gap.verdict == (INCONCLUSIVE if mixer == "softmax" else REPRODUCED)


def test_linear_runs_still_learning_at_the_step_limit_are_inconclusive():
    table = e5_table()
    table.loc[_cell(table, "linear_elu", 64, 16), "stop_reason"] = "max_steps"
    solve, trend, gap = rc.trained_recall(table)
    assert solve.verdict == REPRODUCED  # the control and softmax runs are unaffected
    assert trend.verdict == INCONCLUSIVE and "still learning" in trend.reason
    assert gap.verdict == REPRODUCED  # the gap's cell (d = 16, kv = 16) settled
    table.loc[_cell(table, "linear_elu", 16, 16), "stop_reason"] = "max_steps"
    gap = rc.trained_recall(table)[2]
    assert gap.verdict == INCONCLUSIVE and "still learning" in gap.reason


def test_a_table_without_a_certificate_is_inconclusive():
    bare = e5_table()[["mixer", "short_conv", "d_model", "kv_pairs", "accuracy"]]
    assert all(c.verdict == INCONCLUSIVE and "certificate" in c.reason for c in rc.trained_recall(bare))


def test_the_ablation_without_the_convolution_is_reported_not_compared():
    solve, trend, gap = rc.trained_recall(e5_table())
    assert "with the short convolution" in solve.statement
    assert solve.measured["softmax_without_conv_min_accuracy"] == pytest.approx(1 / 16)


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


def test_the_tier_does_not_decide_the_certificate_does():
    checks = rc.trained_recall(e5_table().assign(tier="smoke"))
    assert all(c.verdict == REPRODUCED for c in checks)


def with_intervals(table, below=0, above=0):
    """Capacity rows with an interval [n_star − below, (1 + above)·n_star] (the measured band)."""
    cap = table["kind"] == "capacity"
    table.loc[cap, "n_lo"] = table.loc[cap, "n_star"] - below
    table.loc[cap, "n_hi"] = table.loc[cap, "n_star"] * (1 + above)
    return table


def test_a_bound_is_violated_only_when_the_whole_interval_lies_below_it():
    from attncap.precision import DECISION_Z

    table = e3_table(bound_factor=1.2)  # point estimates sit just below the bound
    assert rc.softmax_bound_valid(table, "gaussian").verdict == NOT_REPRODUCED
    wide = with_intervals(e3_table(bound_factor=1.2), below=1, above=1)
    check = rc.softmax_bound_valid(wide, "gaussian")
    assert check.verdict == REPRODUCED and check.measured["violations_of_point_estimate"] > 0
    assert f"{DECISION_Z:g} standard errors" in check.tolerance


def test_temperature_needs_a_resolved_difference():
    overlapping = with_intervals(e3_table(larger_beta_better=True), below=0, above=10**9)
    check = rc.temperature_optimum(overlapping)  # β = 2d's point is higher, but inside β = d's interval
    assert check.verdict == INCONCLUSIVE and check.measured["cells_where_a_larger_beta_is_better"] == 0
    assert check.measured["cells_unresolved"] == check.measured["cells"]


def test_linear_capacity_uses_the_interval():
    table = e1_table(capacity_shift=2)
    assert rc.linear_capacity_law(table).verdict == NOT_REPRODUCED
    cap = table["kind"] == "capacity"
    table.loc[cap, "n_lo"], table.loc[cap, "n_hi"] = table.loc[cap, "n"] - 2, table.loc[cap, "n"]
    assert rc.linear_capacity_law(table).verdict == REPRODUCED


def test_blog_table_check_compares_published_numbers_and_measurements():
    check = rc.blog_capacity_table(e3_table())
    assert check.verdict == REPRODUCED
    published = check.measured["published"]["d=64"]
    assert published["published_softmax"] == 2e11 and abs(published["recomputed_softmax"] / 2e11 - 1) < 0.05
    assert "d=20" in check.measured["measured_beta_d"]  # our measured numbers stay in the verdict row
    low = e3_table()
    low.loc[(low["beta_name"] == "d") & (low["d"] == 20), "n_star"] = 2  # below (ε²/4)e^{10} + 1 ≈ 56
    assert rc.blog_capacity_table(low).verdict == NOT_REPRODUCED
    assert rc.blog_capacity_table(None).verdict == INCONCLUSIVE
