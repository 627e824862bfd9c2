"""RE-0's verification statistics and RE-OPD weights (numpy, torch-free).

- :mod:`bounds`: the two-layer Hoeffding radius of eq. B.2 (analytical form);
- :mod:`betting`: the anytime-valid betting e-process / confidence sequence (operational form);
- :mod:`allocation`: alpha shared across every history verified in a generation (sum <= 0.05);
- :mod:`verify`: paired draws -> Delta-hat, LCB, verdict, with the 8..48 escalation;
- :mod:`contracts`: repair contracts, increasing-kappa order, smallest-verified selection;
- :mod:`ledger`: the admission ledger's JSONL schema, writer and validating reader;
- :mod:`opd`: RE-OPD per-turn loss weights and the abstention rules.

Locating boundaries, snapshots and running the rollouts live elsewhere (the episode layer); this
package only decides from their returns.
"""

from captain_ros.research.re0.allocation import TOTAL_ALPHA, AlphaAllocator, AlphaGrant
from captain_ros.research.re0.betting import BettingBounds, betting_bounds
from captain_ros.research.re0.bounds import hoeffding_term, split_alpha, two_layer_radius
from captain_ros.research.re0.contracts import (
    RepairContract,
    Selection,
    order_by_scope,
    scope_cost,
    select_smallest_verified,
)
from captain_ros.research.re0.ledger import (
    SCHEMA,
    LedgerWriter,
    iter_ledger,
    ledger_entry,
    read_ledger,
    validate_entry,
)
from captain_ros.research.re0.opd import (
    AdmittedEvent,
    GateState,
    TaskDecision,
    TurnSource,
    gate_state,
    keep_cold_trajectory,
    refine_or_abstain,
    reopd_weights,
)
from captain_ros.research.re0.verify import (
    ESCALATION,
    PairedDraw,
    Verification,
    VerifierConfig,
    decide,
    invalid_verification,
    verify,
)

__all__ = [
    "ESCALATION",
    "SCHEMA",
    "TOTAL_ALPHA",
    "AdmittedEvent",
    "AlphaAllocator",
    "AlphaGrant",
    "BettingBounds",
    "GateState",
    "LedgerWriter",
    "PairedDraw",
    "RepairContract",
    "Selection",
    "TaskDecision",
    "TurnSource",
    "Verification",
    "VerifierConfig",
    "betting_bounds",
    "decide",
    "gate_state",
    "hoeffding_term",
    "invalid_verification",
    "iter_ledger",
    "keep_cold_trajectory",
    "ledger_entry",
    "order_by_scope",
    "read_ledger",
    "refine_or_abstain",
    "reopd_weights",
    "scope_cost",
    "select_smallest_verified",
    "split_alpha",
    "two_layer_radius",
    "validate_entry",
    "verify",
]
