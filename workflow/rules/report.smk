# The verdict table over all enabled claims.


rule claims_table:
    input:
        expand("results/claims/{claim}.json", claim=config["claims"]),
    output:
        report("results/claims.md", caption="../report/claims.rst", category="verdicts"),
    conda:
        "../../envs/attncap.yaml"
    log:
        "results/logs/claims_table.log",
    shell:
        "python scripts/render_claims.py {input} --out {output} 2> {log}"
