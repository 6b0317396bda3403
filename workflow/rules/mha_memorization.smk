# Claim branch 'mha_memorization': not built yet (see its issue).
