# Claim branch 'aot_memorization': not built yet (see its issue).
