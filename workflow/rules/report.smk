# The verdict table over all enabled claims, the report's landing page (tier, revision, verdict totals) and its
# page of every check (verdict, measured numbers, reason).


rule claims_table:
    input:
        expand("results/claims/{claim}.json", claim=config["claims"]),
    output:
        table=report_if_built("results/claims.md", caption="../report/claims.rst", category="verdicts"),
        landing="results/claims_landing.rst",
        checks=report_if_built("results/claims.html", caption="../report/checks.rst", category="verdicts"),
    conda:
        "../../envs/attncap.yaml"
    log:
        "results/logs/claims_table.log",
    shell:
        "python -m attncap.jobrun --log {log:q} -- python scripts/render_claims.py {input:q} --out {output.table:q} --landing {output.landing:q} --checks {output.checks:q}"


# `snakemake reference --cores 2`: freeze this tier's run as reference/<tier>/ (committed; refresh it
# whenever a change moves a verdict or a number, and review the diff). `snakemake compare --cores 2`:
# this run against the committed reference, every number within its precision (attncap.compare); the
# job fails, naming the checks and numbers, on any difference.
rule reference:
    input:
        claims=expand("results/claims/{claim}.json", claim=config["claims"]),
        table="results/claims.md",
        figures=[HEADLINES[claim] for claim in config["claims"]],
    output:
        directory(f"reference/{TIER}"),
    conda:
        "../../envs/attncap.yaml"
    log:
        "results/logs/reference.log",
    shell:
        "python -m attncap.jobrun --log {log:q} -- python scripts/write_reference.py results {output:q} --figures {input.figures:q}"
        + (" --job-time s" if config.get("warm_start") else "")


rule compare:
    input:
        claims=expand("results/claims/{claim}.json", claim=config["claims"]),
    output:
        "results/compare.md",
    conda:
        "../../envs/attncap.yaml"
    log:
        "results/logs/compare.log",
    shell:
        f"python -m attncap.jobrun --log {{log:q}} --merge-stdout -- python -m attncap.compare results reference/{TIER} --markdown {{output:q}}"
