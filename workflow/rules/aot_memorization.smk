# Claim 2: attention-only transformers memorize H·d_h + d associations (A1–A3, A5, A6 trained; A4 from A1).
AOT = "aot_memorization"
AOT_FIGURES = ["accuracy_vs_heads", "accuracy_vs_dhead", "accuracy_vs_d", "slope_vs_d", "aot_vs_mlp",
               "d2_bound"]
AOT_TABLES = ["fitted_laws", "published_comparison", "accuracy_vs_heads", "aot_vs_mlp", "converged_arm"]
register_claim(AOT, AOT_FIGURES, AOT_TABLES)
AOT_PARTS = table_parts(AOT)


rule train_aot_memorization:
    # before the verdicts and notebooks, which Snakemake's scheduler otherwise prefers (their many inputs)
    priority: 1
    output:
        "results/aot_memorization/runs/{experiment}_{part}.csv",
    wildcard_constraints:
        experiment=alternation(AOT_PARTS),
        part=alternation(p for parts in AOT_PARTS.values() for p in parts),
    params:
        spec=lambda w: spec_json(AOT, w.experiment),
    threads: 1
    resources:
        mem_mb=4000,
        runtime=TRAIN_RUNTIME,
        gpu=GPU,
    conda:
        "../../envs/attncap.yaml"
    log:
        "results/logs/aot_memorization/{experiment}_{part}.log",
    benchmark:
        "results/benchmarks/aot_memorization/{experiment}_{part}.tsv"
    shell:
        experiment_command(AOT, "{wildcards.experiment}", "{wildcards.part}")


rule analyze_aot_memorization:
    input:
        # one CSV per training job, as the experiment module lists them (expected_cells)
        run_tables("aot_memorization"),
    output:
        claims="results/claims/aot_memorization.json",
        summary="results/aot_memorization/summary.csv",
    params:
        spec=lambda w: claim_json(AOT),  # the analysis checks the run tables cover this grid
    conda:
        "../../envs/attncap.yaml"
    log:
        "results/logs/aot_memorization/analyze.log",
    shell:
        analyze_command(AOT)


rule notebook_aot_memorization:
    input:
        # the same run tables the verdicts were computed from, passed to the notebook by name; the
        # notebook source is an input, so editing it reruns the notebook
        runs=run_tables("aot_memorization"),
        verdicts=rules.analyze_aot_memorization.output,
        source="notebooks/aot_memorization.py",
    output:
        notebook_outputs(AOT, AOT_FIGURES, AOT_TABLES),
    conda:
        "../../envs/attncap.yaml"
    log:
        "results/logs/aot_memorization/notebook.log",
    params:
        runs=lambda wildcards, input: json.dumps(list(input.runs)),
    shell:
        notebook_command(AOT)
