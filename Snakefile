# attncap: every figure, table and verdict, regenerated from nothing.
#   snakemake --cores 2                               default tier (config/config.yaml)
#   snakemake --cores 2 --configfile config/smoke.yaml  CI tier
# The config is exactly ONE file, the --configfile named (config/config.yaml when none is), plus any
# --config KEY=VALUE overrides (VALUE read as YAML; nested mappings merge key by key). There is no
# `configfile:` directive, so Snakemake never merges the default tier under the named file. It is
# read and validated (schema + per-claim shape checks) by attncap.config.run_config, the same code as
# `python -m attncap.config FILE`, before any job is scheduled; a bad config exits with the message only.
import sys as _sys
from attncap.config import ConfigError, run_config
from attncap.runtime import clear_stale_locks, record_lock_owner

try:
    _run_config = run_config(workflow.config_settings.configfiles, workflow.config_settings.config_args)
except ConfigError as _err:
    _sys.exit(f"attncap: {_err}")
config.clear()
config.update(_run_config)
clear_stale_locks()  # a run killed with SIGKILL leaves its locks; the next run may resume

include: "workflow/rules/common.smk"
include: "workflow/rules/retrieval_capacity.smk"
include: "workflow/rules/aot_memorization.smk"
include: "workflow/rules/mha_memorization.smk"
include: "workflow/rules/rgr_capacity.smk"
include: "workflow/rules/swap_state_tracking.smk"
include: "workflow/rules/report.smk"


rule all:
    default_target: True
    input:
        "results/claims.md",
        [path for claim in config["claims"] for path in FINAL_TARGETS[claim]],


onstart:
    record_lock_owner()
