"""The mixer card (attncap.mixer_card) on small synthetic run tables, config validation of mixer names for
E5 and S1/S2, and the worked example of docs/adding-a-mixer.md (a sliding-window softmax mixer) trained at
the smoke tier through E5 and landing in the card."""
import copy

import numpy as np
import pandas as pd
import pytest
import yaml

from attncap import mixer_card
from attncap.config import ConfigError, validate_config
from attncap.models.mixers import MIXERS

from conftest import ROOT


def e5_table():
    """Two widths × two kv × two seeds × two arms; values chosen so every aggregate is known."""
    rows = []
    for mixer, base in (("softmax", 0.9), ("linear_identity", 0.3), ("softmax_window8", 0.2)):
        for d in (16, 32):
            for kv in (4, 8):
                for seed in (0, 1):
                    for conv in (0, 4):
                        acc = base + (0.05 if d == 32 else 0) - (0.1 if kv == 8 else 0) + 0.02 * seed - (0.5 if not conv else 0)
                        rows.append({"mixer": mixer, "d_model": d, "kv_pairs": kv, "seed": seed, "short_conv": conv,
                                     "accuracy": acc, "stop_reason": "solved" if seed == 0 else "max_steps"})
    return pd.DataFrame(rows)


def s1_table():
    rows = []
    for mixer, base in (("softmax", 0.5), ("deltaformer_linear", 0.95)):
        for n in (3, 5):
            for seed in (0, 1):
                for mult in (1, 2, 4):
                    rows.append({"mixer": mixer, "n_objects": n, "seed": seed, "T_train": 8, "test_multiplier": mult,
                                 "acc": base / mult + (0.1 if n == 3 else 0) + 0.01 * seed})
    return pd.DataFrame(rows)


def e2_table():
    rows = []
    for kernel, scale, value in (("linear", np.nan, 1.0), ("relu", np.nan, 2.0), ("exp", 1.0, 0.01), ("exp", 2.0, 0.5),
                                 ("relu_centred", np.nan, 9.0)):
        for d in (8, 16):
            for n in (16, 64):
                rows.append({"kernel": kernel, "scale": scale, "d": d, "n": n, "median_snr_inv": value * n / d})
    return pd.DataFrame(rows)


def test_card_rows_and_values_from_synthetic_tables():
    card = mixer_card.build_card(e5_table(), s1_table(), e2_table()).set_index("mixer")
    # rows: registry order of the trained mixers, then the E2 kernel no trained mixer reads (relu)
    assert list(card.index) == ["softmax", "linear_identity", "deltaformer_linear", "softmax_window8", "kernel:relu"]
    # MQAR: largest kv (8) per width, the arm with the convolution, mean over seeds 0 and 1 (+0.01)
    assert card.loc["softmax", "mqar_d16_kv8"] == pytest.approx(0.9 - 0.1 + 0.01)
    assert card.loc["linear_identity", "mqar_d32_kv8"] == pytest.approx(0.3 + 0.05 - 0.1 + 0.01)
    assert card.loc["softmax", "mqar_short_conv"] == 4 and card.loc["softmax", "mqar_settled"] == "2/4"
    assert np.isnan(card.loc["deltaformer_linear", "mqar_d16_kv8"])
    # swap at n = 5, T/2T/4T, mean over seeds (+0.005)
    assert card.loc["deltaformer_linear", "swap_n"] == 5 and card.loc["deltaformer_linear", "swap_T_train"] == 8
    for mult in (1, 2, 4):
        assert card.loc["deltaformer_linear", f"swap_{mult}T"] == pytest.approx(0.95 / mult + 0.005)
    assert np.isnan(card.loc["linear_identity", "swap_1T"])
    # SNR⁻¹ at the largest d (16) and N (64): softmax reads exp at scale 1, linear_identity the linear kernel
    assert card.loc["softmax", "kernel"] == "exp" and card.loc["softmax", "snr_inv"] == pytest.approx(0.01 * 64 / 16)
    assert card.loc["linear_identity", "snr_inv"] == pytest.approx(64 / 16)
    assert card.loc["kernel:relu", "snr_inv"] == pytest.approx(2 * 64 / 16)
    assert (card.loc["kernel:relu", "snr_N"], card.loc["kernel:relu", "snr_d"]) == (64, 16)
    assert np.isnan(card.loc["softmax_window8", "snr_inv"])  # no kernel: it never holds N memories
    assert "kernel:relu_centred" not in card.index  # a diagnostic of E2, not one of the paper's kernels


def test_card_falls_back_to_the_largest_n_and_is_falsifiable():
    s1 = s1_table()
    card = mixer_card.build_card(s1=s1[s1["n_objects"] == 3]).set_index("mixer")
    assert card.loc["softmax", "swap_n"] == 3
    assert card.loc["softmax", "swap_1T"] == pytest.approx(0.5 + 0.1 + 0.005)
    # falsification: a changed accuracy in the table changes the card (no value is fixed in the code)
    changed = s1.copy()
    changed.loc[(changed["mixer"] == "softmax") & (changed["test_multiplier"] == 4), "acc"] = 0.0
    assert mixer_card.build_card(s1=changed).set_index("mixer").loc["softmax", "swap_4T"] == 0.0


def test_missing_tables_leave_columns_empty_and_files_are_written(tmp_path):
    card = mixer_card.build_card(e2=e2_table())
    assert list(card["mixer"]) == ["kernel:exp", "kernel:linear", "kernel:relu"]
    assert not any(c.startswith(("mqar_d", "swap_")) for c in card)
    e5, s1, e2 = tmp_path / "E5_d16.csv", tmp_path / "S1_n5-softmax.csv", tmp_path / "E2.csv"
    e5_table().to_csv(e5, index=False), s1_table().to_csv(s1, index=False), e2_table().to_csv(e2, index=False)
    assert mixer_card.main(["--results", str(tmp_path / "results"), "--e5", str(e5), "--s1", str(s1),
                            "--e2", str(e2)]) == 0
    written = pd.read_csv(tmp_path / "results" / "tables" / "mixer_card.csv")
    assert len(written) == 5 and written["mixer"].iloc[0] == "softmax"
    png = tmp_path / "results" / "figures" / "mixer_card.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # nothing at all (neither claim enabled, or asked directly): an empty card, still a figure
    assert mixer_card.main(["--results", str(tmp_path / "empty"), "--e5", "--s1", "--e2"]) == 0
    assert (tmp_path / "empty" / "figures" / "mixer_card.png").exists()


# ------------------------------------------------------------------- config: any registered name ----------
@pytest.fixture(scope="module")
def smoke():
    return yaml.safe_load((ROOT / "config" / "smoke.yaml").read_text())


@pytest.mark.parametrize("where", [("retrieval_capacity", "E5", "mixers"), ("swap_state_tracking", "S1", "models"),
                                   ("swap_state_tracking", "S2", "models")])
def test_config_takes_any_registered_mixer_and_refuses_unknown_ones(smoke, where):
    claim, experiment, key = where
    config = copy.deepcopy(smoke)
    config[claim][experiment][key] = ["softmax", "softmax_window8"]  # registered, listed by no tier config
    validate_config(config)
    config[claim][experiment][key] = ["softmax", "gated_linear"]
    with pytest.raises(ConfigError) as err:
        validate_config(config)
    message = str(err.value)
    assert f"{claim}.{experiment}.{key}" in message and "unknown mixer 'gated_linear'" in message
    assert all(name in message for name in MIXERS)  # the known list


def test_no_tier_config_lists_the_worked_example():
    for tier in ("smoke", "config", "paper"):
        config = yaml.safe_load((ROOT / "config" / f"{tier}.yaml").read_text())
        assert "softmax_window8" not in config["retrieval_capacity"]["E5"]["mixers"]
        assert all("softmax_window8" not in config["swap_state_tracking"][e]["models"]
                   for e in config["swap_state_tracking"] if "models" in config["swap_state_tracking"][e])


# ------------------------------------------------------------------- the worked example at the smoke tier ----------
def test_worked_example_trains_through_e5_and_lands_in_the_card(smoke, tmp_path):
    """docs/adding-a-mixer.md: the smoke E5 spec with mixers [softmax, softmax_window8] (the convolution arm
    only), run by the experiment's own `run`; every model's loss is finite and falls, and the card has its row."""
    from attncap.experiments import retrieval_capacity as rc
    from attncap.experiments.context import RunContext

    spec = dict(smoke["retrieval_capacity"]["E5"], mixers=["softmax", "softmax_window8"], short_conv=[True])
    config = copy.deepcopy(smoke)
    config["retrieval_capacity"]["E5"] = spec
    validate_config(config)
    context = RunContext.create(claim="retrieval_capacity", experiment="E5", part="d32", device="cpu", tier="smoke")
    rows = context.stamp(rc.run("E5", spec, context))
    assert list(rows["mixer"]) == ["softmax", "softmax_window8"]
    for _, row in rows.iterrows():
        curve = [float(point.split(":")[1]) for point in row["loss_curve"].split()]
        assert np.isfinite(row["final_train_loss"]) and curve[-1] < curve[0] - 0.3, row["loss_curve"]
        assert 0 <= row["accuracy"] <= 1 and row["steps_run"] == row["step_cap"] > spec["steps"]  # continued to the cap
    path = tmp_path / "E5_d32.csv"
    rows.to_csv(path, index=False)
    card = mixer_card.write_card(tmp_path / "results", e5_paths=[path]).set_index("mixer")
    assert list(card.index) == ["softmax", "softmax_window8"]
    window = rows.set_index("mixer").loc["softmax_window8", "accuracy"]
    assert card.loc["softmax_window8", "mqar_d32_kv4"] == pytest.approx(window)
