# Short names for the shared rule helpers (attncap.workflow.Rules), bound to this run's config.
import json

from attncap.workflow import Rules, alternation, report_if_built

RULES = Rules(config)
TIER = RULES.tier
FINAL_TARGETS = RULES.final_targets  # claim -> files `rule all` asks for
HEADLINES = RULES.headlines  # claim -> its headline figure (a reference run keeps it)
spec_json = RULES.spec_json
run_tables = RULES.run_tables  # claim -> its run CSVs (verdicts and notebook read exactly these)
table_parts = RULES.table_parts  # claim -> {experiment: [parts]}, from the same list (wildcard values)
experiment_command = RULES.experiment_command
notebook_outputs = RULES.notebook_outputs
notebook_command = RULES.notebook_command
analyze_command = RULES.analyze_command
claim_json = RULES.claim_json
register_claim = RULES.register_claim
# Every training rule asks for these: a GPU when the config runs on CUDA (the SLURM profile turns
# `gpu` into a GPU request), and a wall-time limit (minutes) sized for the tier.
GPU = 1 if config["device"] == "cuda" else 0
TRAIN_RUNTIME = 720 if TIER == "paper" else 60
