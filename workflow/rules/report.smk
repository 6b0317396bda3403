# The verdict table over all enabled claims, and the report's landing page (tier, revision, verdict totals).


rule claims_table:
    input:
        expand("results/claims/{claim}.json", claim=config["claims"]),
    output:
        table=report_if_built("results/claims.md", caption="../report/claims.rst", category="verdicts"),
        landing="results/claims_landing.rst",
    conda:
        "../../envs/attncap.yaml"
    log:
        "results/logs/claims_table.log",
    shell:
        "python -m attncap.jobrun --log {log:q} -- python scripts/render_claims.py {input:q} --out {output.table:q} --landing {output.landing:q}"
