# Claim branch 'rgr_capacity': not built yet (see its issue).
