# Claim 4: relational graph recognition, the D_K* = Θ(m'·log m'/d_model) law and head splits (R1-R5).
RGR = "rgr_capacity"
RGR_FIGURES = ["f1_curves", "dkstar_heatmap", "law", "diagonal", "uncompressed", "contexts"]
RGR_TABLES = ["dkstar_cells", "dkstar_by_h", "law_fit", "threshold_widths"]
RGR_SEARCHES = ["R2", "R3", "R4", "R5"]
register_claim(RGR, RGR_FIGURES, RGR_TABLES)


# Parts per experiment: R1 in interleaved D_K slices, a search per (m, d_model, graph) cell (cells an
# earlier search experiment already covers with the same settings are not run twice).
RGR_PARTS = table_parts(RGR)


rule train_rgr_capacity:
    # before the verdicts and notebooks, which Snakemake's scheduler otherwise prefers (their many inputs)
    priority: 1
    output:
        "results/rgr_capacity/runs/R1_{part}.csv",
    wildcard_constraints:
        part=alternation(RGR_PARTS.get("R1", [])),
    params:
        spec=lambda w: spec_json(RGR, "R1"),
    threads: 1
    resources:
        mem_mb=3000,
        runtime=TRAIN_RUNTIME,
        gpu=GPU,
    conda:
        "../../envs/attncap.yaml"
    log:
        "results/logs/rgr_capacity/R1_{part}.log",
    benchmark:
        "results/benchmarks/rgr_capacity/R1_{part}.tsv"
    shell:
        experiment_command(RGR, "R1", "{wildcards.part}")


rule search_rgr_capacity:
    # before the verdicts and notebooks, which Snakemake's scheduler otherwise prefers (their many inputs)
    priority: 1
    output:
        "results/rgr_capacity/runs/{experiment}_{part}.csv",
    wildcard_constraints:
        experiment=alternation(e for e in RGR_SEARCHES if e in RGR_PARTS),
        part=alternation(p for e in RGR_SEARCHES for p in RGR_PARTS.get(e, [])),
    params:
        spec=lambda w: spec_json(RGR, w.experiment),
    threads: 1
    resources:
        mem_mb=3000,
        runtime=TRAIN_RUNTIME,
        gpu=GPU,
    conda:
        "../../envs/attncap.yaml"
    log:
        "results/logs/rgr_capacity/{experiment}_{part}.log",
    benchmark:
        "results/benchmarks/rgr_capacity/{experiment}_{part}.tsv"
    shell:
        experiment_command(RGR, "{wildcards.experiment}", "{wildcards.part}")


rule analyze_rgr_capacity:
    input:
        # one CSV per training job, as the experiment module lists them (expected_cells)
        run_tables("rgr_capacity"),
    output:
        claims="results/claims/rgr_capacity.json",
        summary="results/rgr_capacity/summary.csv",
    params:
        spec=lambda w: claim_json(RGR),  # the analysis checks the run tables cover this grid
    conda:
        "../../envs/attncap.yaml"
    log:
        "results/logs/rgr_capacity/analyze.log",
    shell:
        analyze_command(RGR)


rule notebook_rgr_capacity:
    input:
        # the same run tables the verdicts were computed from, passed to the notebook by name; the
        # notebook source is an input, so editing it reruns the notebook
        runs=run_tables("rgr_capacity"),
        verdicts=rules.analyze_rgr_capacity.output,
        source="notebooks/rgr_capacity.py",
    output:
        notebook_outputs(RGR, RGR_FIGURES, RGR_TABLES),
    conda:
        "../../envs/attncap.yaml"
    log:
        "results/logs/rgr_capacity/notebook.log",
    params:
        runs=lambda wildcards, input: json.dumps(list(input.runs)),
    shell:
        notebook_command(RGR)
