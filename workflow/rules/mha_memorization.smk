# Claim 3: multi-head attention memorizes Ω(H·n) examples (M1 exact ranks, M2-M6 trained, M8 assumptions;
# M7 saturation is measured inside the trained jobs).
import json

MHA = "mha_memorization"
MHA_FIGURES = ["rank_laws", "heads", "context_size", "head_size", "shared_vs_nonshared", "regression",
               "saturation", "assumptions"]
MHA_TABLES = ["rank_laws", "memorization", "fits", "assumptions"]
register_claim(MHA, MHA_FIGURES, MHA_TABLES)
MHA_PARTS = {e: parts for e, parts in table_parts(MHA).items() if parts}  # trained experiments run in parts


rule experiment_mha_memorization:
    # before the verdicts and notebooks, which Snakemake's scheduler otherwise prefers (their many inputs)
    priority: 1
    output:
        "results/mha_memorization/runs/{experiment}.csv",
    wildcard_constraints:
        experiment=alternation(e for e, parts in table_parts(MHA).items() if not parts),
    params:
        spec=lambda w: spec_json(MHA, w.experiment),
    threads: 1
    resources:
        mem_mb=4000,
        runtime=TRAIN_RUNTIME,
    conda:
        "../../envs/attncap.yaml"
    log:
        "results/logs/mha_memorization/{experiment}.log",
    benchmark:
        "results/benchmarks/mha_memorization/{experiment}.tsv"
    shell:
        experiment_command(MHA, "{wildcards.experiment}")


rule train_mha_memorization:
    # before the verdicts and notebooks, which Snakemake's scheduler otherwise prefers (their many inputs)
    priority: 1
    output:
        "results/mha_memorization/runs/{experiment}_{part}.csv",
    wildcard_constraints:
        experiment=alternation(MHA_PARTS),
        part=alternation(p for parts in MHA_PARTS.values() for p in parts),
    params:
        spec=lambda w: spec_json(MHA, w.experiment, w.part),  # with the M7 saturation settings its jobs measure
    threads: 1
    resources:
        mem_mb=4000,
        runtime=TRAIN_RUNTIME,
        gpu=GPU,
    conda:
        "../../envs/attncap.yaml"
    log:
        "results/logs/mha_memorization/{experiment}_{part}.log",
    benchmark:
        "results/benchmarks/mha_memorization/{experiment}_{part}.tsv"
    shell:
        experiment_command(MHA, "{wildcards.experiment}", "{wildcards.part}")


rule analyze_mha_memorization:
    input:
        # one CSV per training job, as the experiment module lists them (expected_cells)
        run_tables("mha_memorization"),
    output:
        claims="results/claims/mha_memorization.json",
        summary="results/mha_memorization/summary.csv",
    params:
        spec=lambda w: claim_json(MHA),  # the analysis checks the run tables cover this grid
    conda:
        "../../envs/attncap.yaml"
    log:
        "results/logs/mha_memorization/analyze.log",
    shell:
        analyze_command(MHA)


rule notebook_mha_memorization:
    input:
        # the same run tables the verdicts were computed from, passed to the notebook by name; the
        # notebook source is an input, so editing it reruns the notebook
        runs=run_tables("mha_memorization"),
        verdicts=rules.analyze_mha_memorization.output,
        source="notebooks/mha_memorization.py",
    output:
        notebook_outputs(MHA, MHA_FIGURES, MHA_TABLES),
    conda:
        "../../envs/attncap.yaml"
    log:
        "results/logs/mha_memorization/notebook.log",
    params:
        runs=lambda wildcards, input: json.dumps(list(input.runs)),
    shell:
        notebook_command(MHA)
