# attncap: every figure, table and verdict, regenerated from nothing.
#   snakemake --cores 2                               default tier (config/config.yaml)
#   snakemake --cores 2 --configfile config/smoke.yaml  CI tier
# The config is exactly ONE file, the --configfile named (config/config.yaml when none is), plus any
# --config KEY=VALUE overrides (VALUE read as YAML; nested mappings merge key by key). There is no
# `configfile:` directive, so Snakemake never merges the default tier under the named file. It is
# read and validated (schema + per-claim shape checks) by attncap.config.run_config, the same code as
# `python -m attncap.config FILE`, before any job is scheduled; a bad config exits with the message only.
from snakemake.utils import min_version

min_version("9.0")

import sys as _sys
from attncap.config import ConfigError, run_config

try:
    _run_config = run_config(workflow.config_settings.configfiles, workflow.config_settings.config_args)
except ConfigError as _err:
    _sys.exit(f"attncap: {_err}")
config.clear()
config.update(_run_config)
# Nothing here writes or deletes files: parsing happens for -n, --lint, --report and (on a cluster) in
# every job. A run killed with SIGKILL leaves Snakemake's locks; `snakemake --unlock` clears them.

# The report opens on the landing page the verdict table's rule writes (tier, revision, verdict totals);
# before it exists, on a static page saying so. Only existence is checked here (read-only).
import os.path as _path

report: "results/claims_landing.rst" if _path.exists("results/claims_landing.rst") else "workflow/report/workflow.rst"

# With `warm_start: true` (the smoke tier) one warm interpreter per run forks the jobs' Python commands, which
# then skip torch's start-up (attncap.warmstart); it is stopped when the run ends, and exits by itself if
# Snakemake is killed. Dry runs start nothing (Snakemake runs no hooks for them).
from attncap.warmstart import Server as _WarmServer

_warm_server = []

onstart:
    if config.get("warm_start"):
        _warm_server.append(_WarmServer.start())

onsuccess:
    _WarmServer.stop(_warm_server.pop() if _warm_server else None)

onerror:
    _WarmServer.stop(_warm_server.pop() if _warm_server else None)

include: "workflow/rules/common.smk"
include: "workflow/rules/retrieval_capacity.smk"
include: "workflow/rules/aot_memorization.smk"
include: "workflow/rules/mha_memorization.smk"
include: "workflow/rules/rgr_capacity.smk"
include: "workflow/rules/swap_state_tracking.smk"
include: "workflow/rules/mixer_card.smk"  # reads claims 1 and 5 (after their rules)
include: "workflow/rules/report.smk"


rule all:
    default_target: True
    input:
        "results/claims.md",
        "results/claims_landing.rst",
        "results/claims.html",
        [path for claim in config["claims"] for path in FINAL_TARGETS[claim]],

