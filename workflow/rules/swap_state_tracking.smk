# Claim 5: swap-task state tracking, Transformer vs DeltaFormer vs DeltaNet (S1 grid, S2 κ1 ablation).
SST = "swap_state_tracking"
SST_FIGURES = ["accuracy_vs_n", "accuracy_vs_position", "learning_front", "control", "kernel_ablation", "beta_ablation",
               "final_query"]
SST_TABLES = ["largest_n_solved", "accuracy", "certificate", "early_stopping", "kernel_ablation", "beta_ablation"]
SST_EXPERIMENTS = ["S1", "S2", "S3"]  # grid; κ1 and β ablations; Transformer positive control
from attncap.experiments.swap_state_tracking import parts as sst_parts

register_claim(SST, SST_FIGURES, SST_TABLES)
# one job per (n, mixer): a job ends when its own models have learned (early stopping saves real time)
SST_PARTS = {e: sst_parts(e, config[SST][e]) for e in SST_EXPERIMENTS if SST in config["claims"] and e in config[SST]}


rule train_swap_state_tracking:
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
        runtime=60 if TIER != "paper" else 720,
        gpu=1 if config["device"] == "cuda" else 0,
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
        # one training job per (experiment, number of objects n): all models and seeds of that n share a model axis
        lambda w: [f"results/{SST}/runs/{exp}_n{n}.csv" for exp in SST_EXPERIMENTS for n in config[SST][exp]["n_objects"]],
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
        rules.analyze_swap_state_tracking.input,
        rules.analyze_swap_state_tracking.output,
    output:
        notebook_outputs(SST, SST_FIGURES, SST_TABLES),
    conda:
        "../../envs/attncap.yaml"
    log:
        "results/logs/swap_state_tracking/notebook.log",
    shell:
        notebook_command(SST)
