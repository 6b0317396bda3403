"""Bad configs stop before any job with a message naming the key (issues 2, 8 and 15).

Issue 15: the config a run uses is exactly the one named file plus --config overrides (no default
tier merged underneath), the validator checks that same object, and unreadable files, floats where
integers go, booleans, NaN/inf, absurd sizes and duplicate grid entries are refused up front."""
import copy
import subprocess
import sys

import pytest
import yaml

from attncap.config import ConfigError, load_config, main, parse_overrides, run_config, validate_config

from conftest import ROOT


def set_key(config, dotted, value):
    node = config
    *parents, last = dotted.split(".")
    for key in parents:
        node = node[int(key)] if key.isdigit() else node[key]
    if value is DELETE:
        del node[last]
    else:
        node[int(last) if last.isdigit() else last] = value


DELETE = object()
NAN, INF = float("nan"), float("inf")

BAD_CONFIGS = [
    # (dotted key, bad value, text the message must contain)
    ("unknown_key", 1, "unknown_key"),
    ("retrieval_capacity.E1.typo", 3, "typo"),
    ("seed", "zero", "seed"),
    ("seed", -1, "seed"),
    ("device", "tpu", "device"),
    ("tier", "huge", "tier"),
    ("claims", [], "claims"),
    ("claims", ["no_such_claim"], "claims[0]"),
    ("retrieval_capacity.E1.dims", [16, -4], "retrieval_capacity.E1.dims[1]"),
    ("retrieval_capacity.E1.dims", [], "retrieval_capacity.E1.dims"),
    ("retrieval_capacity.E1.dims", "16", "retrieval_capacity.E1.dims"),
    ("retrieval_capacity.E1.epsilons", [0.5, 1.5], "retrieval_capacity.E1.epsilons[1]"),
    ("retrieval_capacity.E1.epsilons", [0.0], "retrieval_capacity.E1.epsilons[0]"),
    ("retrieval_capacity.E3.betas", ["d", "huge"], "retrieval_capacity.E3.betas[1]"),
    ("retrieval_capacity.E5.mixers", ["softmax", "mamba"], "retrieval_capacity.E5.mixers[1]"),
    ("retrieval_capacity.E5.lr", 0, "retrieval_capacity.E5.lr"),
    ("retrieval_capacity.E5.steps", 10.5, "retrieval_capacity.E5.steps"),
    ("retrieval_capacity.E5.kv_pairs", [4, 40], "retrieval_capacity.E5.kv_pairs"),
    ("retrieval_capacity.E5.d_model", [30], "retrieval_capacity.E5.d_model"),
    ("retrieval_capacity.E2", DELETE, "E2"),
    ("retrieval_capacity", DELETE, "retrieval_capacity"),
    # ---- issue 15: integers written as floats, booleans as numbers, NaN/inf, upper bounds, duplicates
    ("seed", 1.0, "seed: 1.0 is not a whole number; expected an integer"),
    ("seed", True, "seed: True is a boolean; expected integer"),
    ("seed", 2**63, "seed: 9223372036854775808 is out of range; must be <= 4294967295"),
    ("seed", NAN, "seed: nan is not a finite number"),
    ("retrieval_capacity.E1.n_points", 6.0, "retrieval_capacity.E1.n_points: 6.0 is not a whole number"),
    ("retrieval_capacity.E1.dims", [16, 16], "retrieval_capacity.E1.dims: duplicate entries [16]"),
    ("retrieval_capacity.E1.dims", [10**9], "retrieval_capacity.E1.dims[0]: 1000000000 is out of range; must be <= 8192"),
    ("retrieval_capacity.E1.min_queries", 10**12, "retrieval_capacity.E1.min_queries: 1000000000000 is out of range"),
    ("retrieval_capacity.E2.scales", [INF], "retrieval_capacity.E2.scales[0]: inf is not a finite number"),
    ("retrieval_capacity.E3.betas", ["d", "d"], "retrieval_capacity.E3.betas: duplicate entries ['d']"),
    ("retrieval_capacity.E4.log10_n", [2.0, NAN], "retrieval_capacity.E4.log10_n[1]: nan is not a finite number"),
    ("retrieval_capacity.E5.lr", NAN, "retrieval_capacity.E5.lr: nan is not a finite number"),
    ("retrieval_capacity.E5.lr", "1e-3", "retrieval_capacity.E5.lr: '1e-3' is text, not a number"),
    ("retrieval_capacity.E5.weight_decay", INF, "retrieval_capacity.E5.weight_decay: inf is not a finite number"),
    ("retrieval_capacity.E5.weight_decay", -INF, "retrieval_capacity.E5.weight_decay: -inf is not a finite number"),
    ("retrieval_capacity.E5.steps", 10**12, "retrieval_capacity.E5.steps: 1000000000000 is out of range; must be <= 1000000"),
    ("retrieval_capacity.E5.batch", True, "retrieval_capacity.E5.batch: True is a boolean"),
    ("retrieval_capacity.E5.seeds", [0, 0], "retrieval_capacity.E5.seeds: duplicate entries [0]"),
    ("retrieval_capacity.E5.seeds", [2**63], "retrieval_capacity.E5.seeds[0]: 9223372036854775808 is out of range"),
    ("retrieval_capacity.E5.curriculum", 1, "retrieval_capacity.E5.curriculum: 1 has the wrong type; expected boolean"),
    ("retrieval_capacity.E5.continue_lr", DELETE, "E5.continue_cap: a continued run needs E5.continue_lr"),
    ("retrieval_capacity.E5.continue_lr", 0, "retrieval_capacity.E5.continue_lr"),
    ("retrieval_capacity.E5.continue_cap", 0.5, "retrieval_capacity.E5.continue_cap"),
    ("aot_memorization.A1.epochs", 4.0, "aot_memorization.A1.epochs: 4.0 is not a whole number"),
    ("aot_memorization.A1.batch", True, "aot_memorization.A1.batch: True is a boolean"),
    ("aot_memorization.A1.heads", [1, 2, 2], "aot_memorization.A1.heads: duplicate entries [2]"),
    ("aot_memorization.A1.lr", NAN, "aot_memorization.A1.lr: nan is not a finite number"),
    ("aot_memorization.A1.group_heads", "yes", "aot_memorization.A1.group_heads: 'yes' has the wrong type; expected boolean"),
    ("aot_memorization.A2.d_head", [1, 10**9], "aot_memorization.A2.d_head[1]: 1000000000 is out of range; must be <= 8192"),
    ("aot_memorization.A2.layouts", ["shared", "shared"], "aot_memorization.A2.layouts: duplicate entries ['shared']"),
    ("aot_memorization.A3.jobs", 10**6, "aot_memorization.A3.jobs: 1000000 is out of range; must be <= 256"),
    ("aot_memorization.A5.mlp_final_lr", INF, "aot_memorization.A5.mlp_final_lr: inf is not a finite number"),
    ("aot_memorization.A6.seeds", [0, 1, 1], "aot_memorization.A6.seeds: duplicate entries [1]"),
    ("mha_memorization.M1.d", 10**9, "mha_memorization.M1.d: 1000000000 is out of range; must be <= 8192"),
    ("mha_memorization.M2.T", [4, 7, 8, 8, 13, 16, 32, 64], "mha_memorization.M2.T: duplicate entries [8]"),
    ("mha_memorization.M2.steps", 150.0, "mha_memorization.M2.steps: 150.0 is not a whole number"),
    ("mha_memorization.M2.parts", 2.0, "mha_memorization.M2.parts: 2.0 is not a whole number"),
    ("mha_memorization.M2.positional", 1, "mha_memorization.M2.positional: 1 has the wrong type; expected boolean"),
    ("mha_memorization.M2.lr", NAN, "mha_memorization.M2.lr: nan is not a finite number"),
    ("mha_memorization.M2.seeds", [True], "mha_memorization.M2.seeds[0]: True is a boolean"),
    ("mha_memorization.M3.n", [1, 2, 2, 4], "mha_memorization.M3.n: duplicate entries [2]"),
    ("mha_memorization.M4.d_head", [1, 4, 8, 10**9], "mha_memorization.M4.d_head[3]: 1000000000 is out of range"),
    ("mha_memorization.M6.stop_rel_mse", INF, "mha_memorization.M6.stop_rel_mse: inf is not a finite number"),
    ("mha_memorization.M6.T_multiples", [1, 1, 2], "mha_memorization.M6.T_multiples: duplicate entries [1]"),
    ("mha_memorization.M7.threshold", NAN, "mha_memorization.M7.threshold: nan is not a finite number"),
    ("mha_memorization.M8.patches", [2.0, 4], "mha_memorization.M8.patches[0]: 2.0 is not a whole number"),
    ("mha_memorization.M8.patches", [2, 2], "mha_memorization.M8.patches: duplicate entries [2]"),
    ("rgr_capacity.R1.d_k_total", [4, 4], "rgr_capacity.R1.d_k_total: duplicate entries [4]"),
    ("rgr_capacity.R1.m", 10**9, "rgr_capacity.R1.m: 1000000000 is out of range; must be <= 16384"),
    ("rgr_capacity.R1.train.lr", NAN, "rgr_capacity.R1.train.lr: nan is not a finite number"),
    ("rgr_capacity.R1.train.temperature", INF, "rgr_capacity.R1.train.temperature: inf is not a finite number"),
    ("rgr_capacity.R1.train.temperature", "hot", "rgr_capacity.R1.train.temperature: 'hot' is not allowed; expected null or number > 0"),
    ("rgr_capacity.R1.train.steps", 200.5, "rgr_capacity.R1.train.steps: 200.5 is not a whole number"),
    ("rgr_capacity.R1.contexts.sizes", [8, 8], "rgr_capacity.R1.contexts.sizes: duplicate entries [8]"),
    ("rgr_capacity.R2.m", [16, 10**9], "rgr_capacity.R2.m[1]: 1000000000 is out of range; must be <= 16384"),
    ("rgr_capacity.R2.heads", [1, 1], "rgr_capacity.R2.heads: duplicate entries [1]"),
    ("rgr_capacity.R2.typo", 1, "allowed keys: construct, contexts, d_model, heads, m, search, seeds, train"),
    ("rgr_capacity.R3.out_degree", [1, 1], "rgr_capacity.R3.out_degree: duplicate entries [1]"),
    ("rgr_capacity.R4.ratio", 8.0, "rgr_capacity.R4.ratio: 8.0 is not a whole number"),
    ("rgr_capacity.R5.seeds", [0, 2**40], "rgr_capacity.R5.seeds[1]: 1099511627776 is out of range; must be <= 4294967295"),
    ("swap_state_tracking.S1.n_objects", [3, 3], "swap_state_tracking.S1.n_objects: duplicate entries [3]"),
    ("swap_state_tracking.S1.d_model", 32.0, "swap_state_tracking.S1.d_model: 32.0 is not a whole number"),
    ("swap_state_tracking.S1.d_model", 10**9, "swap_state_tracking.S1.d_model: 1000000000 is out of range; must be <= 8192"),
    ("swap_state_tracking.S1.heads", 2.0, "swap_state_tracking.S1.heads: 2.0 is not a whole number"),
    ("swap_state_tracking.S1.lr", NAN, "swap_state_tracking.S1.lr: nan is not a finite number"),
    ("swap_state_tracking.S1.weight_decay", INF, "swap_state_tracking.S1.weight_decay: inf is not a finite number"),
    ("swap_state_tracking.S1.clip", NAN, "swap_state_tracking.S1.clip: nan is not a finite number"),
    ("swap_state_tracking.S1.seeds", [0, 0], "swap_state_tracking.S1.seeds: duplicate entries [0]"),
    ("swap_state_tracking.S1.models", ["softmax", "softmax"], "swap_state_tracking.S1.models: duplicate entries ['softmax']"),
    ("swap_state_tracking.S2.seeds", [1, 1], "swap_state_tracking.S2.seeds: duplicate entries [1]"),
    ("swap_state_tracking.S2.steps", True, "swap_state_tracking.S2.steps: True is a boolean"),
    ("swap_state_tracking.S2.batch", 10**9, "swap_state_tracking.S2.batch: 1000000000 is out of range; must be <= 65536"),
    ("swap_state_tracking.S2.T_train", 10**9, "swap_state_tracking.S2.T_train: 1000000000 is out of range"),
]


@pytest.mark.parametrize("key,value,expected", BAD_CONFIGS, ids=[f"{k}={v!r}"[:60] for k, v, _ in BAD_CONFIGS])
def test_bad_config_is_rejected_naming_the_key(smoke_config, key, value, expected):
    config = copy.deepcopy(smoke_config)
    if key == "retrieval_capacity.E5.d_model":
        config["retrieval_capacity"]["E5"]["heads"] = 4
    set_key(config, key, value)
    with pytest.raises(ConfigError) as err:
        validate_config(config)
    assert expected in str(err.value)


def test_shipped_configs_are_valid():
    for name in ("config.yaml", "smoke.yaml", "paper.yaml"):
        load_config(ROOT / "config" / name)


def test_missing_file_and_yaml_syntax_error(tmp_path):
    with pytest.raises(ConfigError, match="does not exist"):
        load_config(tmp_path / "nope.yaml")
    broken = tmp_path / "broken.yaml"
    broken.write_text("tier: smoke\nseed: [0\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(broken)


def test_empty_config_is_rejected():
    with pytest.raises(ConfigError, match="empty"):
        validate_config({})


def run_snakemake(*args, cwd=ROOT):
    return subprocess.run([sys.executable, "-m", "snakemake", "--cores", "1", "-n", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=300)


def test_snakemake_stops_before_any_job_on_bad_config(tmp_path, smoke_config):
    config = copy.deepcopy(smoke_config)
    config["retrieval_capacity"]["E1"]["epsilons"] = [2.0]
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(config))
    result = run_snakemake("--configfile", str(path))
    assert result.returncode != 0
    output = result.stdout + result.stderr
    assert "retrieval_capacity.E1.epsilons[0]" in output
    assert "Job stats" not in output and "rule " not in output.split("invalid config")[0]
    assert "Traceback" not in output and 'File "' not in output  # the message only


def test_snakemake_rejects_missing_configfile():
    result = run_snakemake("--configfile", "config/does_not_exist.yaml")
    assert result.returncode != 0
    assert "does_not_exist.yaml" in result.stdout + result.stderr


# ---- issue 15.1: the config that runs is the config you named -----------------------------------

TIERS = ("config.yaml", "smoke.yaml", "paper.yaml")


@pytest.mark.parametrize("name", TIERS)
def test_run_config_is_exactly_the_named_file(name):
    path = ROOT / "config" / name
    assert run_config([path]) == yaml.safe_load(path.read_text())


def test_snakemake_does_not_merge_the_default_tier_under_a_named_config(tmp_path, smoke_config):
    # config/config.yaml has an aot_memorization section; a custom file without one must not borrow it
    del smoke_config["aot_memorization"]
    path = tmp_path / "partial.yaml"
    path.write_text(yaml.safe_dump(smoke_config))
    result = run_snakemake("--configfile", str(path))
    output = result.stdout + result.stderr
    assert result.returncode != 0
    assert "claims: 'aot_memorization' is enabled but the config has no 'aot_memorization' section" in output
    assert "Traceback" not in output


def test_snakemake_nested_config_override_is_typed_and_merged():
    # a nested value arrives typed (not as text) and merges key by key into the named file
    result = run_snakemake("--configfile", "config/smoke.yaml", "--config", "claims=[retrieval_capacity]",
                           "retrieval_capacity={E1: {dims: [8, 16]}, E5: {steps: 20}}")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "train_retrieval_capacity" in result.stdout


PAPER_CLAIM3_CELLS = {"M2": 8 * 14, "M3": 8 * 13, "M5": 8 * 14}  # 328: H (or n) x every T of the grid


def test_paper_tier_plans_its_full_claim_3_grid():
    """Spec 03: the paper tier is the reference grid (d = 64, n = 32, H in {1, 5, 10, ..., 60}, T in the
    tens of thousands, 50k+ steps). Before issue 15 it silently inherited config.yaml's T_max_per_head
    and planned 182 of these 328 cells."""
    from attncap.experiments.mha_memorization import TRAINED, trained_T

    section = run_config([ROOT / "config" / "paper.yaml"])["mha_memorization"]
    planned, full = {}, {}
    for exp in TRAINED:
        spec = section[exp]
        planned[exp] = sum(len(trained_T(spec, heads, n)) * len(spec["d_head"])
                           for heads in spec["heads"] for n in spec["n"])
        full[exp] = (len(spec["heads"]) * len(spec["n"]) * len(spec["d_head"])
                     * len(spec["T"] if "T" in spec else spec["T_multiples"]))
    assert planned == full  # nothing trimmed: every T at every H and n
    assert {exp: planned[exp] for exp in PAPER_CLAIM3_CELLS} == PAPER_CLAIM3_CELLS
    for exp in ("M2", "M5"):
        spec = section[exp]
        assert spec["d"] == 64 and spec["n"] == [32] and spec["d_head"] == [64]
        assert spec["heads"][0] == 1 and spec["heads"][1:] == sorted(spec["heads"][1:]) and max(spec["heads"]) == 60
        assert all(h % 5 == 0 for h in spec["heads"][1:]) and max(spec["T"]) >= 10_000 and spec["steps"] >= 50_000
        assert "T_max_per_head" not in spec
    assert "T_max_per_head" not in section["M3"] and section["M3"]["heads"] == [20]


def test_more_than_one_configfile_is_refused():
    with pytest.raises(ConfigError, match="one --configfile per run"):
        run_config([ROOT / "config" / "smoke.yaml", ROOT / "config" / "paper.yaml"])


# ---- issue 15.2: unreadable files, overrides --------------------------------------------------------

UNREADABLE = [
    # (what to write at the path, text the one-line message must contain)
    (None, "does not exist"),
    ("dir", "is a directory"),
    (b"tier: smoke\nseed: \xff\xfe\n", "is not UTF-8 text (byte 0xff at offset 18)"),
    (b"", "is empty"),
    (b"- tier\n- smoke\n", "holds a list, not a mapping"),
    (b"tier: smoke\nseed: [0\n", "is not valid YAML"),
    (b"tier: smoke\nseed: 0\nseed: 1\n", "key 'seed' appears twice in one mapping (first at line 2)"),
]


@pytest.mark.parametrize("content,expected", UNREADABLE, ids=[e for _, e in UNREADABLE])
def test_unreadable_config_file_is_a_one_line_error(tmp_path, content, expected):
    path = tmp_path / "bad.yaml"
    if content == "dir":
        path.mkdir()
    elif content is not None:
        path.write_bytes(content)
    with pytest.raises(ConfigError) as err:
        run_config([path])
    message = str(err.value)
    assert expected in message and str(path) in message
    assert "\n" not in message


def test_validator_cli_prints_one_line_per_unreadable_file(tmp_path):
    (tmp_path / "adir").mkdir()
    (tmp_path / "latin1.yaml").write_bytes(b"tier: d\xe9faut\n")
    paths = [str(tmp_path / name) for name in ("adir", "latin1.yaml", "missing.yaml")]
    result = subprocess.run([sys.executable, "-m", "attncap.config", *paths], capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 3 and "Traceback" not in result.stderr
    assert [p in line for p, line in zip(paths, lines)] == [True] * 3


def test_config_overrides_are_typed_yaml_and_merge_key_by_key():
    assert parse_overrides(["claims=[retrieval_capacity]", "retrieval_capacity={E5: {steps: 10, lr: 1.0e-3}}",
                            "seed=7", "device=cpu"]) == {
        "claims": ["retrieval_capacity"], "retrieval_capacity": {"E5": {"steps": 10, "lr": 0.001}},
        "seed": 7, "device": "cpu"}
    base = run_config([ROOT / "config" / "smoke.yaml"])
    config = run_config([ROOT / "config" / "smoke.yaml"], ["retrieval_capacity={E5: {steps: 10}}"])
    e5 = config["retrieval_capacity"]["E5"]
    assert e5["steps"] == 10 and {k: v for k, v in e5.items() if k != "steps"} == {
        k: v for k, v in base["retrieval_capacity"]["E5"].items() if k != "steps"}


@pytest.mark.parametrize("entry,expected", [
    ("retrieval_capacity.E5.steps=10", "--config 'retrieval_capacity={E5: {steps: 10}}'"),
    ("retrieval_capacity={E5: {steps: 0}}", "retrieval_capacity.E5.steps: 0 is out of range; must be >= 1"),
    ("retrieval_capacity={E5: {steps: 1.0}}", "retrieval_capacity.E5.steps: 1.0 is not a whole number"),
    ("retrieval_capacity={E5: {lr: .nan}}", "retrieval_capacity.E5.lr: nan is not a finite number"),
    ("retrieval_capacity=[1", "is not valid YAML"),
    ("retrieval_capacity", "expected KEY=VALUE"),
    ("retrieval_capacity=E5", "retrieval_capacity: 'E5' is text; expected a mapping"),
])
def test_bad_config_override_names_the_key(entry, expected):
    with pytest.raises(ConfigError) as err:
        run_config([ROOT / "config" / "smoke.yaml"], [entry])
    assert expected in str(err.value)


def test_validator_cli_checks_overrides_too(capsys):
    smoke = str(ROOT / "config" / "smoke.yaml")
    assert main([smoke, "--config", "claims=[retrieval_capacity]"]) == 0
    assert main([smoke, "--config", "seed=1.5"]) == 1
    assert "seed: 1.5 is not a whole number" in capsys.readouterr().err
