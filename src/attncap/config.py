"""Load and validate a pipeline config before any job starts.

Two layers: `config/schema.yaml` (JSON Schema: keys, types, ranges) and per-claim semantic checks
(`check_config` in `attncap.experiments.<claim>`: shapes that cannot be trained). Every problem is
reported with the dotted path of the offending key and what is allowed.
"""
from __future__ import annotations

import argparse
import importlib
import importlib.util
import sys
from pathlib import Path

import jsonschema
import yaml

SCHEMA_PATH = Path(__file__).resolve().parents[2] / "config" / "schema.yaml"
CLAIMS = (
    "retrieval_capacity",
    "aot_memorization",
    "mha_memorization",
    "rgr_capacity",
    "swap_state_tracking",
)


class ConfigError(ValueError):
    """A config that must not start a run; the message lists every problem found."""


def _dotted(path) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "<top level>"


def _describe(error: jsonschema.ValidationError) -> str:
    where = _dotted(error.absolute_path)
    if error.validator == "additionalProperties":
        allowed = sorted(error.schema.get("properties", {}))
        return f"{where}: {error.message}; allowed keys: {', '.join(allowed)}"
    if error.validator == "enum":
        return f"{where}: {error.instance!r} is not allowed; choose one of {error.validator_value}"
    if error.validator in ("minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"):
        bound = {"minimum": ">=", "exclusiveMinimum": ">", "maximum": "<=", "exclusiveMaximum": "<"}
        return f"{where}: {error.instance!r} is out of range; must be {bound[error.validator]} {error.validator_value}"
    if error.validator == "minItems":
        return f"{where}: grid is empty or too short; needs at least {error.validator_value} item(s)"
    if error.validator == "type":
        return f"{where}: {error.instance!r} has the wrong type; expected {error.validator_value}"
    return f"{where}: {error.message}"


def load_schema() -> dict:
    return yaml.safe_load(SCHEMA_PATH.read_text())


def validate_config(config: dict) -> dict:
    """Raise ConfigError naming every bad key; return the config unchanged when it is valid."""
    if not isinstance(config, dict) or not config:
        raise ConfigError("config is empty or not a mapping; pass --configfile config/<tier>.yaml")
    validator = jsonschema.Draft202012Validator(load_schema())
    problems = [_describe(e) for e in sorted(validator.iter_errors(config), key=lambda e: list(e.absolute_path))]
    if not problems:
        problems += [f"claims: {c!r} is enabled but the config has no '{c}' section"
                     for c in config["claims"] if c not in config]
    if not problems:
        for claim in config.get("claims", []):
            if importlib.util.find_spec(f"attncap.experiments.{claim}") is None:
                continue
            check = getattr(importlib.import_module(f"attncap.experiments.{claim}"), "check_config", None)
            if check is not None and claim in config:
                problems += [f"{claim}.{p}" for p in check(config[claim])]
    if problems:
        raise ConfigError("invalid config:\n  - " + "\n  - ".join(problems))
    return config


def load_config(path: str | Path) -> dict:
    """Read a YAML config file and validate it; errors name the file."""
    path = Path(path)
    if not path.exists():
        raise ConfigError(f"config file {path} does not exist")
    try:
        config = yaml.safe_load(path.read_text())
    except yaml.YAMLError as err:
        raise ConfigError(f"{path} is not valid YAML: {err}") from None
    return validate_config(config)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="Validate attncap config files.")
    parser.add_argument("paths", nargs="+")
    args = parser.parse_args(argv)
    status = 0
    for path in args.paths:
        try:
            load_config(path)
            print(f"{path}: ok")
        except ConfigError as err:
            print(f"{path}: {err}", file=sys.stderr)
            status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())
