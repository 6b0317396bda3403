# Claim 5: swap-task state tracking, Transformer vs DeltaFormer vs DeltaNet (S1 grid, S2 κ1 ablation).
SST = "swap_state_tracking"
SST_FIGURES = ["accuracy_vs_n", "accuracy_vs_position", "learning_front", "control", "kernel_ablation", "beta_ablation",
               "final_query", "frontier", "readout_length"]
SST_TABLES = ["largest_n_solved", "accuracy", "certificate", "early_stopping", "kernel_ablation", "beta_ablation",
              "frontier", "protocol", "readout_ablation"]
# S1 grid; S2 κ1 and β ablations; S3 Transformer positive control; S4 the paper's protocol and the Transformer frontier;
# S5 DeltaFormer's readout variants (no positions, learned temperature) beyond T_train
register_claim(SST, SST_FIGURES, SST_TABLES)
# one job per (n, mixer): a job ends when its own models have learned (early stopping saves real time)
SST_PARTS = table_parts(SST)


rule train_swap_state_tracking:
    # before the verdicts and notebooks, which Snakemake's scheduler otherwise prefers (their many inputs)
    priority: 1
    output:
        "results/swap_state_tracking/runs/{experiment}_{part}.csv",
    wildcard_constraints:
        experiment=alternation(SST_PARTS),
        part=alternation(p for parts in SST_PARTS.values() for p in parts),
    params:
        spec=lambda w: spec_json(SST, w.experiment),
    threads: 1
    resources:
        mem_mb=3000,
        runtime=TRAIN_RUNTIME,
        gpu=GPU,
    conda:
        "../../envs/attncap.yaml"
    log:
        "results/logs/swap_state_tracking/{experiment}_{part}.log",
    benchmark:
        "results/benchmarks/swap_state_tracking/{experiment}_{part}.tsv"
    shell:
        experiment_command(SST, "{wildcards.experiment}", "{wildcards.part}")


rule analyze_swap_state_tracking:
    input:
        # one CSV per training job, as the experiment module lists them (expected_cells)
        run_tables("swap_state_tracking"),
    output:
        claims="results/claims/swap_state_tracking.json",
        summary="results/swap_state_tracking/summary.csv",
    params:
        spec=lambda w: claim_json(SST),  # the analysis checks the run tables cover this grid
    conda:
        "../../envs/attncap.yaml"
    log:
        "results/logs/swap_state_tracking/analyze.log",
    shell:
        analyze_command(SST)


rule notebook_swap_state_tracking:
    input:
        # the same run tables the verdicts were computed from, passed to the notebook by name; the
        # notebook source is an input, so editing it reruns the notebook
        runs=run_tables("swap_state_tracking"),
        verdicts=rules.analyze_swap_state_tracking.output,
        source="notebooks/swap_state_tracking.py",
    output:
        notebook_outputs(SST, SST_FIGURES, SST_TABLES),
    conda:
        "../../envs/attncap.yaml"
    log:
        "results/logs/swap_state_tracking/notebook.log",
    params:
        runs=lambda wildcards, input: json.dumps(list(input.runs)),
    shell:
        notebook_command(SST)
