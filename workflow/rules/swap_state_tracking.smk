# Claim branch 'swap_state_tracking': not built yet (see its issue).
