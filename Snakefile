# attncap: every figure, table and verdict, regenerated from nothing.
#   snakemake --cores 2                               default tier (config/config.yaml)
#   snakemake --cores 2 --configfile config/smoke.yaml  CI tier
# The config is validated (schema + per-claim shape checks) before any job is scheduled.
from attncap.config import validate_config
from attncap.runtime import clear_stale_locks, record_lock_owner

configfile: "config/config.yaml"

validate_config(config)
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
