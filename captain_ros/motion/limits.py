"""Force limits of the guarded motion layer [N] (the paper's values)."""

CONTACT_FORCE_N = 5.0
"""Guarded mode stops at the first substep whose contact force exceeds this [N]."""
DEFAULT_FORCE_LIMIT_N = 40.0
"""Manipulation mode tolerates load up to ``force_limit_n``, by default this [N]."""
EMERGENCY_FORCE_N = 80.0
"""Always-on emergency limit [N]."""
