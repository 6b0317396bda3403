"""The shared verdict machinery: typed learning certificates judged per run, gates that withhold only
on failed certificates, the schedule-proof plateau rule, and the law comparisons every check decides by."""
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from attncap.claims import (CERTIFIED, CLAIM, DIVERGED, INCONCLUSIVE, LEARNED, MISSING, NOT_DECIDED, NOT_REPRODUCED,
                            REPRODUCED, SANITY, STILL_MOVING, TOO_SHORT, UNDER_TRAINED, WITHHELD_BECAUSE, Certificate,
                            Check, certify, claim_document, gate, learning_status, render_markdown, render_summary,
                            verdict_totals)
from attncap.claims.laws import (CLAIMED, NOT_RESOLVED, RIVAL, compare_groups, compare_laws, exponent_interval,
                                 family_level, weight_range, with_intercept)
from attncap.train import TrainSettings, lr_factor, plateau_drop, tail_lr_fraction


def runs(**columns):
    return pd.DataFrame(columns)


def check(verdict=REPRODUCED, kind=CLAIM):
    return Check("x", "s", "src", 1.0, "law", "rule", verdict, kind=kind)


# ---- certificates ---------------------------------------------------------------------------------

def test_one_seed_below_threshold_fails_although_the_mean_passes():
    frame = runs(mixer=["a", "a", "a"], seed=[0, 1, 2], train_accuracy=[1.0, 1.0, 0.8], final_train_loss=[0.1] * 3)
    cert = certify(frame, ["mixer"])
    assert cert.kind == UNDER_TRAINED and cert.runs == ("mixer=a seed=2",)
    assert learning_status(0.1, 0.8) == UNDER_TRAINED


def test_missing_columns_are_never_invented():
    frame = runs(mixer=["a"], seed=[0], acc=[1.0])
    assert certify(frame, ["mixer"]).kind == MISSING
    assert certify(None, ["mixer"]).kind == MISSING
    lossy = runs(mixer=["a"], seed=[0], final_train_loss=[0.1], loss_drop_last10=[0.0])
    assert certify(lossy, ["mixer"], accuracy=None, loss_drop="loss_drop_last10").kind == MISSING  # no lr_last10


def test_kinds_are_typed_and_ordered_by_severity():
    frame = runs(cell=[1, 2, 3, 4], seed=[0] * 4, train_accuracy=[0.5, 1.0, 1.0, 1.0],
                 final_train_loss=[0.1, math.nan, 0.1, 0.1], steps=[100, 100, 10, 100])
    cert = certify(frame, ["cell"], min_steps=50)
    assert cert.kinds == {UNDER_TRAINED, DIVERGED, TOO_SHORT} and cert.kind == DIVERGED and not cert.soft
    assert cert.only(UNDER_TRAINED).soft and cert.without(DIVERGED, TOO_SHORT).runs == ("cell=1 seed=0",)
    note = "curriculum stopped at T = 4; longest: 8"  # a note that itself contains '; ' stays one failure
    assert len(cert.only(UNDER_TRAINED).annotated(note).failures) == 1


def test_a_decayed_schedule_cannot_fake_a_plateau():
    """Loss that falls with cumulative learning rate: 30% per tenth at full rate. Under cosine-to-0 or
    linear-to-5% the raw fall in the last tenth looks like a plateau; per unit rate it does not."""
    for settings in (TrainSettings(steps=1000, lr=1e-3, schedule="cosine"),
                     TrainSettings(steps=1000, lr=1e-3, schedule="linear", final_lr_fraction=0.05)):
        factors = np.array([lr_factor(s, settings) for s in range(1000)])
        losses = 0.7 ** (np.cumsum(factors) / 100.0)  # −30% per 100 steps at full rate
        drop, fraction = plateau_drop(losses), tail_lr_fraction(settings, 1000)
        assert drop < 0.06  # the old rule (raw drop < 5%, or ≈ 5%) would have certified these runs
        assert learning_status(losses[-1], loss_drop=drop, lr_fraction=fraction) == STILL_MOVING
    constant = TrainSettings(steps=1000, lr=1e-3)
    flat = np.full(1000, 0.3)
    assert tail_lr_fraction(constant, 1000) == 1.0
    assert learning_status(0.3, loss_drop=plateau_drop(flat), lr_fraction=1.0) == LEARNED


def test_a_rising_loss_is_not_a_plateau():
    """A loss that rose by 6% over the last tenth at full rate has not settled (it oscillates or drifts up):
    the rule is on the size of the change, either way; a rise within the margin still settles."""
    rising = np.concatenate([np.full(900, 0.30), np.full(100, 0.318)])
    assert plateau_drop(rising) < -0.05
    assert learning_status(0.318, loss_drop=plateau_drop(rising), lr_fraction=1.0) == STILL_MOVING
    noisy = np.concatenate([np.full(900, 0.30), np.full(100, 0.306)])  # +2%: settled
    assert learning_status(0.306, loss_drop=plateau_drop(noisy), lr_fraction=1.0) == LEARNED
    frame = runs(cell=[1], seed=[0], train_accuracy=[1.0], final_train_loss=[0.318], steps=[1000],
                 loss_drop_last10=[plateau_drop(rising)], lr_last10=[1.0])
    cert = certify(frame, ["cell"], loss_drop="loss_drop_last10")
    assert cert.kinds == {STILL_MOVING} and "rose 6.0%" in cert.failures[0].text
    # a change just past the 5% rule reads as such (printed to whole percents it read "5% per unit rate")
    just_past = frame.assign(loss_drop_last10=[0.0027], lr_last10=[0.05])
    text = certify(just_past, ["cell"], loss_drop="loss_drop_last10").failures[0].text
    assert "5.4% per unit rate" in text


def test_a_vanished_learning_rate_is_never_a_plateau():
    assert learning_status(0.3, loss_drop=0.0, lr_fraction=0.005) == STILL_MOVING
    assert learning_status(0.3, accuracy=1.0, loss_drop=0.5, lr_fraction=1.0, saturated=0.99) == LEARNED


def test_gate_withholds_on_failure_and_keeps_only_soft_lower_bound_passes():
    soft = Certificate.fail(STILL_MOVING, "loss still falling: a")
    hard = Certificate.fail(DIVERGED, "diverged: a")
    assert gate(check(), "p", CERTIFIED).verdict == REPRODUCED
    assert gate(check(), "p", soft).verdict == INCONCLUSIVE
    kept = gate(check(), "p", soft, stands=REPRODUCED)
    assert kept.verdict == REPRODUCED and kept.reason.startswith("passes although")
    assert gate(check(), "p", hard, stands=REPRODUCED).verdict == INCONCLUSIVE
    assert gate(check(NOT_REPRODUCED), "p", soft, stands=REPRODUCED).verdict == INCONCLUSIVE
    refuted = gate(check(NOT_REPRODUCED), "p", soft, stands=NOT_REPRODUCED)
    assert refuted.verdict == NOT_REPRODUCED and refuted.reason.startswith("stands although")
    assert gate(check(), "p", soft, stands=NOT_REPRODUCED).verdict == INCONCLUSIVE
    assert gate(check(NOT_REPRODUCED), "p", hard, stands=NOT_REPRODUCED).verdict == INCONCLUSIVE
    with pytest.raises(TypeError):
        gate(check(), "p", "under-trained: a")


def test_every_inconclusive_verdict_says_why_it_is_withheld():
    """A gate records the certificate's failure kind; any other inconclusive verdict is not resolved at the
    evidence's precision; a decided verdict withholds nothing. The summary tables the causes of claim checks."""
    moving = gate(check(), "p", Certificate.fail(STILL_MOVING, "loss still falling: a"))
    untrained = gate(check(), "p", Certificate.fail(UNDER_TRAINED, "below 0.9: b") + Certificate.fail(
        STILL_MOVING, "loss still falling: c"))  # the most severe kind names the cause
    open_law = check(INCONCLUSIVE)
    sanity = gate(check(kind=SANITY), "p", Certificate.fail(STILL_MOVING, "loss still falling: d"))
    kept = gate(check(), "p", Certificate.fail(STILL_MOVING, "x: e"), stands=REPRODUCED)
    doc = claim_document("c", "t", "smoke", [moving, untrained, open_law, sanity, kept], {})
    assert [c["withheld"] for c in doc["checks"]] == [STILL_MOVING, STILL_MOVING, NOT_DECIDED, STILL_MOVING, ""]
    assert untrained.withheld == STILL_MOVING  # UNDER_TRAINED is milder than STILL_MOVING in the severity order
    summary = render_summary([doc])
    assert "| **all** | **1** | **0** | **0** | **3** |" in summary
    assert f"| {WITHHELD_BECAUSE[STILL_MOVING]} | c `x`, c `x` | 2 |" in summary  # the sanity check is not counted
    assert f"| {WITHHELD_BECAUSE[NOT_DECIDED]} | c `x` | 1 |" in summary
    decided = claim_document("c", "t", "smoke", [check()], {})
    assert "inconclusive because" not in render_summary([decided])


def test_sanity_checks_are_counted_apart():
    docs = [{"claim": "c", "tier": "t", "provenance": {}, "checks": [
        {**check().as_dict(), "id": "law", "rival": "another law"},
        {**check(NOT_REPRODUCED, kind=SANITY).as_dict(), "id": "beats_init"}]}]
    assert verdict_totals(docs)[REPRODUCED] == 1 and verdict_totals(docs)[NOT_REPRODUCED] == 0
    assert verdict_totals(docs, SANITY)[NOT_REPRODUCED] == 1
    text = render_markdown(docs)
    assert "another law" in text and "beats_init (sanity)" in text and "Sanity checks (counted apart)" in text


# ---- law comparisons ------------------------------------------------------------------------------

def test_exponential_growth_is_told_from_polynomial_growth():
    rng = np.random.default_rng(0)
    d = np.arange(4, 21, 2.0)
    cubic = np.log(d**3) + rng.normal(0, 0.05, len(d))
    exponential = 0.7 * d + rng.normal(0, 0.05, len(d))

    def decide(y, x=d):
        return compare_laws(y, with_intercept(x), with_intercept(np.log(x)), claimed="exp", rival="poly")

    assert decide(cubic).preferred == RIVAL
    assert decide(exponential).preferred == CLAIMED
    assert decide(cubic[:3], d[:3]).preferred == NOT_RESOLVED  # too few points for either law


def test_family_level_splits_the_error_over_the_intervals():
    """Bonferroni: k intervals at 1 − 0.05/k each err somewhere with probability ≤ 5%; one is the plain 95%."""
    assert family_level(1) == pytest.approx(0.95) and family_level(0) == pytest.approx(0.95)
    assert family_level(8) == pytest.approx(1 - 0.05 / 8)
    rng = np.random.default_rng(0)
    z = float(stats.norm.ppf(0.5 + family_level(8) / 2))
    wrong = (np.abs(rng.standard_normal((20000, 8))) > z).any(1).mean()  # 8 true nulls read together
    assert wrong <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / 20000)


def test_a_law_with_a_fixed_exponent_fits_its_constants_alone():
    """`offsets`: a Θ(·) law fixes its term's coefficient at 1 and fits the constant, so y = 2 + x·ln x is
    exact for the claimed law (RSS 0, one parameter: the constant 2) and the x-only rival keeps a residual."""
    x = np.arange(2, 12, dtype=float)
    y = 2.0 + np.log(x * np.log(x))
    law = compare_laws(y, np.ones_like(x), np.ones_like(x), offsets=(np.log(x * np.log(x)), np.log(x)),
                       claimed="x ln x", rival="x")
    assert law.preferred == CLAIMED and law.rss_claimed == pytest.approx(0, abs=1e-20)
    assert law.params_claimed == pytest.approx((2.0,)) and law.rss_rival > 0.1
    # the same response without offsets reads the free fits, and with the offsets swapped the rival wins
    swapped = compare_laws(y, np.ones_like(x), np.ones_like(x), offsets=(np.log(x), np.log(x * np.log(x))),
                           claimed="x", rival="x ln x")
    assert swapped.preferred == RIVAL
    low, high = weight_range(y - 0.01, y + 0.01, np.ones_like(x), np.ones_like(x),
                             offsets=(np.log(x * np.log(x)), np.log(x)))
    assert 0.95 <= low <= high <= 1.0


def test_exponent_interval_and_group_difference():
    x = np.array([1, 2, 4, 8, 16.0])
    assert exponent_interval(x, 3 * x * np.exp(np.array([0.01, -0.02, 0.0, 0.02, -0.01]))).decide(1.0, 0.5) == CLAIMED
    assert exponent_interval(x, 3 * np.sqrt(x)).decide(1.0, 0.5) == RIVAL
    # the M5.nonshared case: differences far inside a 3-seed spread are not resolved
    assert compare_groups([32.3, 31.0, 33.0], [32.0, 33.0, 31.0]).preferred == NOT_RESOLVED
    assert compare_groups([40.0, 41.0, 40.5], [32.0, 33.0, 31.0]).preferred == "a"
    assert compare_groups([40.0], [32.0]).preferred == NOT_RESOLVED  # one seed: no spread, no decision


def test_the_rivals_table_lists_every_check_with_its_law_and_rival():
    from attncap.claims import render_rivals
    doc = {"claim": "c", "checks": [Check("x", "s", "src", 1, "a ∝ N", "-", REPRODUCED, rival="a ∝ N|²").as_dict(),
                                    Check("y", "s", "src", 1, "ok", "-", REPRODUCED, kind="sanity", rival="r").as_dict()]}
    table = render_rivals([doc]).splitlines()
    assert table[2] == "| c | `x` | a ∝ N | a ∝ N\\|² |" and table[3].startswith("| c | `y` (sanity) |")


def test_a_reason_gathered_over_cells_reads_each_sentence_once():
    from attncap.claims import STILL_MOVING, UNDER_TRAINED, Certificate

    cert = Certificate.combine([
        Certificate.fail(STILL_MOVING, "still improving: a at 0.5, b at 0.6 (x, y)", ["a", "b"]),
        Certificate.fail(UNDER_TRAINED, "at chance: c at 0.1", ["c"]),
        Certificate.fail(STILL_MOVING, "still improving: b at 0.6 (x, y), d at 0.7", ["b", "d"]),
    ]).merged()
    assert [f.text for f in cert.failures] == ["still improving: a at 0.5, b at 0.6 (x, y), d at 0.7",
                                               "at chance: c at 0.1"]
    assert cert.runs == ("a", "b", "d", "c") and cert.kind == STILL_MOVING
