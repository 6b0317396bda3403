"""Bad configs stop before any job with a message naming the key (issue 2 and 8)."""
import copy
import subprocess
import sys

import pytest
import yaml

from attncap.config import ConfigError, load_config, validate_config

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


def test_snakemake_rejects_missing_configfile():
    result = run_snakemake("--configfile", "config/does_not_exist.yaml")
    assert result.returncode != 0
    assert "does_not_exist.yaml" in result.stdout + result.stderr
