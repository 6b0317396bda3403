"""Load and validate a pipeline config before any job starts.

The config a run uses is exactly one file (`--configfile`, or `config/config.yaml` when none is
named) plus any `--config KEY=VALUE` overrides, read here by `run_config`; the Snakefile and
`python -m attncap.config` both go through it, so what is validated is what runs. Nothing is merged
from another tier.

Two layers of checks: `config/schema.yaml` (JSON Schema: keys, types, ranges, upper bounds, unique
grid entries; integers must be written as integers) plus a walk that refuses NaN and ±inf anywhere,
then per-claim semantic checks (`check_config` in `attncap.experiments.<claim>`: shapes that cannot
be trained). Every problem is reported with the dotted path of the offending key and what is allowed.
"""
from __future__ import annotations

import argparse
import copy
import functools
import importlib
import importlib.util
import math
import re
import sys
from pathlib import Path

import jsonschema
import yaml

SCHEMA_PATH = Path(__file__).resolve().parents[2] / "config" / "schema.yaml"
DEFAULT_CONFIG = Path("config/config.yaml")  # relative to the working directory, as Snakemake's was
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


def _is_integer(checker, instance) -> bool:
    # JSON Schema's "integer" accepts 1.0; a float reaches argparse or range() and crashes there
    return isinstance(instance, int) and not isinstance(instance, bool)


Validator = jsonschema.validators.extend(
    jsonschema.Draft202012Validator,
    type_checker=jsonschema.Draft202012Validator.TYPE_CHECKER.redefine("integer", _is_integer),
)

_NUMBER_TEXT = re.compile(r"[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$")


def _type_problem(where: str, value, expected) -> str:
    expected = expected if isinstance(expected, str) else " or ".join(expected)
    if isinstance(value, bool):
        return f"{where}: {value!r} is a boolean; expected {expected}"
    if expected == "integer" and isinstance(value, float):
        hint = f" (write {int(value)})" if value.is_integer() else ""
        return f"{where}: {value!r} is not a whole number; expected an integer written without a decimal point{hint}"
    if isinstance(value, str) and expected in ("number", "integer") and _NUMBER_TEXT.match(value.strip()):
        return (f"{where}: {value!r} is text, not a number; expected {expected} (YAML reads an exponent "
                f"without a decimal point, such as 1e-3, as text: write 1.0e-3)")
    if isinstance(value, str) and expected in ("object", "array"):
        return (f"{where}: {value!r} is text; expected {'a mapping' if expected == 'object' else 'a list'} "
                "(on the command line: --config 'KEY={a: {b: 1}}' or 'KEY=[1, 2]', YAML flow syntax)")
    return f"{where}: {value!r} has the wrong type; expected {expected}"


def _resolve(schema: dict, root: dict) -> dict:
    """A subschema with its local `$ref` (\"#/a/b\") merged in, one level deep."""
    if "$ref" not in schema or root is None:
        return schema
    target = root
    for part in schema["$ref"].lstrip("#/").split("/"):
        target = target[part]
    return {**_resolve(target, root), **{k: v for k, v in schema.items() if k != "$ref"}}


def _summary(schema: dict, root: dict) -> str:
    """What a subschema allows, in a few words: 'number > 0', 'null', 'one of [a, b]'."""
    schema = _resolve(schema, root)
    if "enum" in schema:
        return f"one of {schema['enum']}"
    if "const" in schema:
        return repr(schema["const"])
    bounds = [f"{op} {schema[key]}" for key, op in (("minimum", ">="), ("exclusiveMinimum", ">"),
                                                    ("maximum", "<="), ("exclusiveMaximum", "<")) if key in schema]
    return " ".join([str(schema.get("type", "a value")), *bounds])


def _describe(error: jsonschema.ValidationError, root: dict | None = None) -> str:
    where = _dotted(error.absolute_path)
    if error.validator in ("additionalProperties", "unevaluatedProperties"):
        referenced = _resolve({"$ref": error.schema["$ref"]}, root) if "$ref" in error.schema and root else {}
        allowed = sorted(referenced.get("properties", {}) | error.schema.get("properties", {}))
        return f"{where}: {error.message}; allowed keys: {', '.join(allowed)}"
    if error.validator == "enum":
        return f"{where}: {error.instance!r} is not allowed; choose one of {error.validator_value}"
    if error.validator == "const":
        return f"{where}: {error.instance!r} is not allowed here; must be {error.validator_value!r}"
    if error.validator in ("minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"):
        bound = {"minimum": ">=", "exclusiveMinimum": ">", "maximum": "<=", "exclusiveMaximum": "<"}
        return f"{where}: {error.instance!r} is out of range; must be {bound[error.validator]} {error.validator_value}"
    if error.validator == "minItems":
        return f"{where}: grid is empty or too short; needs at least {error.validator_value} item(s)"
    if error.validator == "maxItems":
        return f"{where}: grid has {len(error.instance)} items; at most {error.validator_value} allowed"
    if error.validator == "uniqueItems":
        seen, dups = [], []
        for item in error.instance:
            (dups if item in seen and item not in dups else seen).append(item)
        return f"{where}: duplicate entries {dups}; each grid value must appear once (it would run twice)"
    if error.validator == "type":
        return _type_problem(where, error.instance, error.validator_value)
    if error.validator in ("oneOf", "anyOf"):
        options = " or ".join(_summary(option, root) for option in error.validator_value)
        return f"{where}: {error.instance!r} is not allowed; expected {options}"
    return f"{where}: {error.message}"


def _non_finite(node, path=()):
    """Every NaN or ±inf in the config, wherever it is (they pass every JSON Schema bound)."""
    if isinstance(node, float) and not math.isfinite(node):
        yield path, node
    elif isinstance(node, dict):
        for key, value in node.items():
            yield from _non_finite(value, (*path, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _non_finite(value, (*path, index))


@functools.lru_cache(maxsize=4)
def _schema(mtime_ns: int) -> dict:
    return yaml.safe_load(SCHEMA_PATH.read_text())


def load_schema() -> dict:
    """The schema, parsed once per version of the file (treat it as read-only)."""
    return _schema(SCHEMA_PATH.stat().st_mtime_ns)


def validate_config(config: dict) -> dict:
    """Raise ConfigError naming every bad key; return the config unchanged when it is valid."""
    if not isinstance(config, dict) or not config:
        raise ConfigError("config is empty or not a mapping; pass --configfile config/<tier>.yaml")
    bad_numbers = list(_non_finite(config))
    problems = [f"{_dotted(path)}: {value!r} is not a finite number; NaN and infinities are not allowed anywhere"
                for path, value in bad_numbers]
    skip = {tuple(path) for path, _ in bad_numbers}
    schema = load_schema()
    errors = sorted(Validator(schema).iter_errors(config), key=lambda e: [str(p) for p in e.absolute_path])
    problems += [_describe(e, schema) for e in errors if tuple(e.absolute_path) not in skip]
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


# ---- reading files and overrides -------------------------------------------------------------

class _UniqueKeyLoader(yaml.SafeLoader):
    """safe_load, but a key written twice in one mapping is an error instead of silently the last."""


def _construct_unique_mapping(loader, node, deep=False):
    seen = {}
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, f"key {key!r} appears twice in one mapping (first at line {seen[key] + 1})",
                key_node.start_mark)
        seen[key] = key_node.start_mark.line
    return yaml.SafeLoader.construct_mapping(loader, node, deep=deep)


_UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_unique_mapping)


def _yaml_problem(err: yaml.YAMLError) -> str:
    """One line: what is wrong and where."""
    mark = getattr(err, "problem_mark", None)
    problem = getattr(err, "problem", None) or str(err).splitlines()[0]
    return f"{problem} at line {mark.line + 1}, column {mark.column + 1}" if mark else problem


def _parse_yaml(text: str):
    return yaml.load(text, Loader=_UniqueKeyLoader)  # noqa: S506 (a SafeLoader subclass)


def read_config_file(path: str | Path) -> dict:
    """The mapping in one config file; every way it can be unreadable is a one-line ConfigError."""
    path = Path(path)
    if not path.exists():
        raise ConfigError(f"config file {path} does not exist")
    if path.is_dir():
        raise ConfigError(f"config file {path} is a directory; name a YAML file such as config/smoke.yaml")
    try:
        data = path.read_bytes()
    except OSError as err:
        raise ConfigError(f"config file {path} cannot be read: {err.strerror}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise ConfigError(f"config file {path} is not UTF-8 text (byte 0x{data[err.start]:02x} at offset "
                          f"{err.start}); save it as UTF-8") from None
    try:
        config = _parse_yaml(text)
    except yaml.YAMLError as err:
        raise ConfigError(f"{path} is not valid YAML: {_yaml_problem(err)}") from None
    if config is None:
        raise ConfigError(f"config file {path} is empty")
    if not isinstance(config, dict):
        raise ConfigError(f"config file {path} holds a {type(config).__name__}, not a mapping of keys "
                          "(tier, seed, device, claims and one section per claim)")
    return config


def _nested(keys: list[str], text: str) -> str:
    return text if not keys else "{" + f"{keys[0]}: {_nested(keys[1:], text)}" + "}"


def parse_overrides(entries) -> dict:
    """`--config KEY=VALUE` entries as a mapping; each VALUE is read as YAML (typed, nested)."""
    overrides: dict = {}
    for entry in entries or ():
        key, sep, text = str(entry).partition("=")
        key = key.strip()
        if not sep or not key:
            raise ConfigError(f"--config {entry!r}: expected KEY=VALUE")
        if "." in key:
            head, *rest = key.split(".")
            raise ConfigError(f"--config {entry!r}: dotted keys are not supported; override a nested value "
                              f"with a YAML mapping under its top-level key: --config '{head}={_nested(rest, text)}'")
        try:
            value = _parse_yaml(text) if text.strip() else None
        except yaml.YAMLError as err:
            raise ConfigError(f"--config {key}: {text!r} is not valid YAML: {_yaml_problem(err)}") from None
        merge_into(overrides, {key: value})
    return overrides


def merge_into(config: dict, overrides: dict) -> dict:
    """Recursive update: a mapping merges into a mapping key by key; anything else replaces."""
    for key, value in overrides.items():
        if isinstance(value, dict) and isinstance(config.get(key), dict):
            merge_into(config[key], value)
        else:
            config[key] = copy.deepcopy(value)
    return config


def run_config(configfiles=(), config_args=(), default: str | Path = DEFAULT_CONFIG) -> dict:
    """The validated config of a run: the one named file (or `default`) plus `--config` overrides."""
    files = [Path(f) for f in configfiles or ()]
    if len(files) > 1:
        raise ConfigError(f"one --configfile per run (got {len(files)}: {', '.join(map(str, files))}); tier files "
                          "are complete and are not merged: copy one and edit it, or override keys with --config")
    path = files[0] if files else Path(default)
    config = read_config_file(path)
    overrides = parse_overrides(config_args)
    merge_into(config, overrides)
    try:
        return validate_config(config)
    except ConfigError as err:
        raise ConfigError(f"{path}{' with --config overrides' if overrides else ''}: {err}") from None


def load_config(path: str | Path, overrides=()) -> dict:
    """Read a YAML config file (plus `--config`-style overrides) and validate it; errors name the file."""
    return run_config([path], overrides)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        description="Validate attncap config files: exactly what `snakemake --configfile FILE [--config ...]` runs.")
    parser.add_argument("paths", nargs="+")
    parser.add_argument("--config", nargs="*", default=[], metavar="KEY=VALUE",
                        help="overrides, as given to snakemake --config (VALUE is YAML)")
    args = parser.parse_args(argv)
    status = 0
    for path in args.paths:
        try:
            load_config(path, args.config)
            print(f"{path}: ok")
        except ConfigError as err:
            message = str(err)
            print(message if str(Path(path)) in message else f"{path}: {message}", file=sys.stderr)
            status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())
