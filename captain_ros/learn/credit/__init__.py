"""Per-request credit (CaPtain eqs. 5-6), the critic early stop and the credit analysis.

Pure numpy, torch-free: the rollout loop, the harness side and benchmarks can import it without
the learning dependencies.
"""

from captain_ros.learn.credit.advantage import (
    ERROR_ONLY_PENALTY,
    GAE_LAMBDA,
    GROUP_SIZE,
    EpisodeCredit,
    EpisodeValues,
    RunningStd,
    apply_error_only_rule,
    gae,
    group_advantages,
    round_credit,
    td_deltas,
)
from captain_ros.learn.credit.analysis import KINDS, classify_requests, credit_analysis
from captain_ros.learn.credit.early_stop import (
    EARLY_STOP_OUTCOME,
    EARLY_STOP_RETURN,
    EarlyStop,
    unit_hash,
)

__all__ = [
    "EARLY_STOP_OUTCOME",
    "EARLY_STOP_RETURN",
    "ERROR_ONLY_PENALTY",
    "GAE_LAMBDA",
    "GROUP_SIZE",
    "KINDS",
    "EarlyStop",
    "EpisodeCredit",
    "EpisodeValues",
    "RunningStd",
    "apply_error_only_rule",
    "classify_requests",
    "credit_analysis",
    "gae",
    "group_advantages",
    "round_credit",
    "td_deltas",
    "unit_hash",
]
