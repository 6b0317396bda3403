# Claim 1: linear vs softmax attention as associative memory (E1-E4 Monte Carlo, E5 trained MQAR).
RC = "retrieval_capacity"
RC_FIGURES = ["linear_error", "softmax_capacity", "snr", "snr_kernels", "log2_law", "mqar_accuracy", "mqar_training"]
RC_TABLES = ["blog_table", "softmax_capacity", "snr_kernels", "log2_law", "mqar_accuracy"]
RC_PARTS = table_parts(RC)  # E1-E4: one Monte Carlo job each; E5: one training job per width
register_claim(RC, RC_FIGURES, RC_TABLES)


rule experiment_retrieval_capacity:
    # before the verdicts and notebooks, which Snakemake's scheduler otherwise prefers (their many inputs)
    priority: 1
    output:
        "results/retrieval_capacity/runs/{experiment}.csv",
    wildcard_constraints:
        experiment=alternation(e for e, parts in RC_PARTS.items() if not parts),
    params:
        spec=lambda w: spec_json(RC, w.experiment),
    threads: 1
    resources:
        mem_mb=4000,
        runtime=TRAIN_RUNTIME,
    conda:
        "../../envs/attncap.yaml"
    log:
        "results/logs/retrieval_capacity/{experiment}.log",
    benchmark:
        "results/benchmarks/retrieval_capacity/{experiment}.tsv"
    shell:
        experiment_command(RC, "{wildcards.experiment}")


rule train_retrieval_capacity:
    # before the verdicts and notebooks, which Snakemake's scheduler otherwise prefers (their many inputs)
    priority: 1
    output:
        "results/retrieval_capacity/runs/E5_{part}.csv",
    wildcard_constraints:
        part=alternation(RC_PARTS.get("E5", [])),  # only the widths the config lists
    params:
        spec=lambda w: spec_json(RC, "E5"),
    threads: 1
    resources:
        mem_mb=4000,
        runtime=TRAIN_RUNTIME,
        gpu=GPU,
    conda:
        "../../envs/attncap.yaml"
    log:
        "results/logs/retrieval_capacity/E5_{part}.log",
    benchmark:
        "results/benchmarks/retrieval_capacity/E5_{part}.tsv"
    shell:
        experiment_command(RC, "E5", "{wildcards.part}")


rule analyze_retrieval_capacity:
    input:
        # one CSV per training job, as the experiment module lists them (expected_cells)
        run_tables("retrieval_capacity"),
    output:
        claims="results/claims/retrieval_capacity.json",
        summary="results/retrieval_capacity/summary.csv",
    params:
        spec=lambda w: claim_json(RC),  # the analysis checks the run tables cover this grid
    conda:
        "../../envs/attncap.yaml"
    log:
        "results/logs/retrieval_capacity/analyze.log",
    shell:
        analyze_command(RC)


rule notebook_retrieval_capacity:
    input:
        # the same run tables the verdicts were computed from, passed to the notebook by name; the
        # notebook source is an input, so editing it reruns the notebook
        runs=run_tables("retrieval_capacity"),
        verdicts=rules.analyze_retrieval_capacity.output,
        source="notebooks/retrieval_capacity.py",
    output:
        notebook_outputs(RC, RC_FIGURES, RC_TABLES),
    conda:
        "../../envs/attncap.yaml"
    log:
        "results/logs/retrieval_capacity/notebook.log",
    params:
        runs=lambda wildcards, input: json.dumps(list(input.runs)),
    shell:
        notebook_command(RC)
