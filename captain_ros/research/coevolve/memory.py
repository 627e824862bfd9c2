"""Strategy memory and action-exemplar memory, with promotion only after physical execution.

``M_t = (M^D, M^A)``:

* **Strategy records** (``M^D``) hold abstract coordination knowledge: applicability (the active
  phase's situation, the turn direction, the failure context), a coordination principle (primitive,
  objective kind, mode, a role *rule* such as ``inner=turn_side``), the observed failure pattern and
  the repair direction (a scope and changes such as ``roles:swap`` or ``speed:decrease``). They hold
  no coordinates, poses or magnitudes (validated: no digits in any field). Retrieved before
  orchestration by situation (filter) and recent failure context (ranking) - the next primitive,
  objective and mode are not query keys because they are not chosen yet.
* **Action exemplars** (``M^A``) hold accepted implementations: both robots' code and effective
  arguments. Retrieved after the coordination is committed, by primitive, objective kind and mode
  (filter), ranked by situation.

Promotion needs agreement between a record's claim, the executed behaviour and the verifier:
accepted transactions yield exemplars and positive records (and a repair record when the accepted
child of a typed revision resolved its parent's failure); rejected transactions yield
counterexamples. Proposals that were never executed are never recorded. Banks persist as JSON; a
run starts from a preloaded bank (transfer: the source stays read-only, the run writes its own
copy) or empty.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from captain_ros.core.errors import InvalidArgumentError

STRATEGY_FILE = "strategy_records.json"
EXEMPLAR_FILE = "action_exemplars.json"
ROLE_RULES = ("peer", "inner=turn_side", "inner=far_side", "co_rotate", "corrector=any")
_WORD = re.compile(r"^[a-z_=:]*$")


def _abstract(name: str, value: str) -> str:
    if not isinstance(value, str) or not _WORD.match(value):
        raise InvalidArgumentError(
            f"strategy record field {name}={value!r} must be an abstract word "
            "(no coordinates or magnitudes)"
        )
    return value


@dataclass(frozen=True)
class StrategyRecord:
    """Abstract coordination knowledge (see the module doc)."""

    id: str
    polarity: str  # "positive" | "counterexample"
    situation: str  # e.g. "traverse_corner", "traverse_straight", "place"
    turn: str  # "left" | "right" | "none"
    failure_context: tuple[str, ...]
    primitive: str
    objective_kind: str
    mode: str
    role_rule: str
    failure_pattern: str = ""
    repair_scope: str = ""
    repair_changes: tuple[str, ...] = ()
    support: int = 1
    sources: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.polarity not in ("positive", "counterexample"):
            raise InvalidArgumentError("polarity must be positive or counterexample")
        if self.role_rule not in ROLE_RULES:
            raise InvalidArgumentError(f"role_rule must be one of {', '.join(ROLE_RULES)}")
        for name in (
            "situation",
            "turn",
            "primitive",
            "objective_kind",
            "mode",
            "failure_pattern",
            "repair_scope",
        ):
            _abstract(name, getattr(self, name).replace(" ", "_"))
        for v in (*self.failure_context, *self.repair_changes):
            _abstract("failure_context/repair_changes", v)

    def key(self) -> tuple[Any, ...]:
        return (
            self.polarity,
            self.situation,
            self.turn,
            self.failure_context,
            self.primitive,
            self.objective_kind,
            self.mode,
            self.role_rule,
            self.failure_pattern,
            self.repair_scope,
            self.repair_changes,
        )

    def to_prompt(self) -> dict[str, Any]:
        d = asdict(self)
        d.pop("sources")
        return d


@dataclass(frozen=True)
class ActionExemplar:
    """An accepted implementation: code and effective arguments of both robots."""

    id: str
    primitive: str
    objective_kind: str
    mode: str
    role_rule: str
    situation: str
    turn: str
    programs: dict[str, str]
    params: dict[str, dict[str, Any]]
    summary: str = ""
    support: int = 1
    sources: tuple[str, ...] = ()

    def key(self) -> tuple[str, ...]:
        return (
            self.primitive,
            self.objective_kind,
            self.mode,
            self.role_rule,
            self.situation,
            self.turn,
        )

    def to_prompt(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if k != "sources"}


@dataclass
class Memory:
    """The two stores of one run.

    Args:
        strategy / exemplars: Initial contents (a preloaded bank, or empty).
        enabled: ``False`` = the "without memory" condition: nothing is retrieved or promoted.
    """

    strategy: list[StrategyRecord] = field(default_factory=list)
    exemplars: list[ActionExemplar] = field(default_factory=list)
    enabled: bool = True
    hits: list[dict[str, Any]] = field(default_factory=list)

    # --- persistence -----------------------------------------------------------------------------
    @classmethod
    def load(cls, folder: str | Path) -> Memory:
        """A bank from ``folder`` (missing files = empty stores). Raises on a malformed bank."""
        f = Path(folder)
        strategy, exemplars = [], []
        try:
            if (f / STRATEGY_FILE).exists():
                for d in json.loads((f / STRATEGY_FILE).read_text()):
                    d["failure_context"] = tuple(d.get("failure_context", ()))
                    d["repair_changes"] = tuple(d.get("repair_changes", ()))
                    d["sources"] = tuple(d.get("sources", ()))
                    strategy.append(StrategyRecord(**d))
            if (f / EXEMPLAR_FILE).exists():
                for d in json.loads((f / EXEMPLAR_FILE).read_text()):
                    d["sources"] = tuple(d.get("sources", ()))
                    exemplars.append(ActionExemplar(**d))
        except (OSError, ValueError, TypeError, KeyError) as exc:
            raise InvalidArgumentError(f"memory bank {f} is not readable: {exc}") from exc
        return cls(strategy, exemplars)

    def save(self, folder: str | Path) -> None:
        """Write both stores atomically into ``folder``."""
        f = Path(folder)
        f.mkdir(parents=True, exist_ok=True)
        for name, items in ((STRATEGY_FILE, self.strategy), (EXEMPLAR_FILE, self.exemplars)):
            tmp = f / (name + ".tmp")
            tmp.write_text(json.dumps([asdict(x) for x in items], indent=1))
            os.replace(tmp, f / name)

    # --- retrieval -------------------------------------------------------------------------------
    def retrieve_strategy(
        self,
        situation: str,
        turn: str,
        failure_context: tuple[str, ...],
        k: int = 4,
        transaction: int = 0,
    ) -> list[StrategyRecord]:
        """Records applicable to ``situation`` (and ``turn``), ranked by failure-context overlap."""
        if not self.enabled:
            return []
        cand = [r for r in self.strategy if r.situation == situation and r.turn in (turn, "none")]
        ctx = set(failure_context)

        def rank(r: StrategyRecord) -> tuple[int, int, int, int]:
            overlap = len(ctx & set(r.failure_context))
            general = 0 if r.failure_context else 1  # general principles next
            return (
                -overlap,
                -general if not ctx else 0,
                0 if r.polarity == "positive" else 1,
                -r.support,
            )

        out = sorted(cand, key=rank)[:k]
        if out:
            self.hits.append(
                {
                    "transaction": transaction,
                    "store": "strategy",
                    "ids": [r.id for r in out],
                    "query": [situation, turn, sorted(ctx)],
                }
            )
        return out

    def retrieve_exemplars(
        self,
        primitive: str,
        objective_kind: str,
        mode: str,
        situation: str,
        turn: str,
        k: int = 2,
        transaction: int = 0,
    ) -> list[ActionExemplar]:
        """Accepted implementations of ``(primitive, objective kind, mode)``, ranked by situation."""
        if not self.enabled:
            return []
        cand = [
            e
            for e in self.exemplars
            if (e.primitive, e.objective_kind, e.mode) == (primitive, objective_kind, mode)
        ]
        cand.sort(key=lambda e: (e.situation != situation, e.turn != turn, -e.support))
        out = cand[:k]
        if out:
            self.hits.append(
                {
                    "transaction": transaction,
                    "store": "exemplar",
                    "ids": [e.id for e in out],
                    "query": [primitive, objective_kind, mode, situation],
                }
            )
        return out

    # --- promotion -------------------------------------------------------------------------------
    def add_strategy(self, rec: StrategyRecord) -> StrategyRecord:
        """Insert ``rec`` or, when an equal record exists, raise its support."""
        if not self.enabled:
            return rec
        for i, r in enumerate(self.strategy):
            if r.key() == rec.key():
                merged = StrategyRecord(
                    **{
                        **asdict(r),
                        "support": r.support + 1,
                        "sources": (*r.sources, *rec.sources)[-8:],
                        "failure_context": r.failure_context,
                        "repair_changes": r.repair_changes,
                    }
                )
                self.strategy[i] = merged
                return merged
        rec = StrategyRecord(
            **{
                **asdict(rec),
                "id": f"S{len(self.strategy) + 1:03d}",
                "failure_context": rec.failure_context,
                "repair_changes": rec.repair_changes,
                "sources": rec.sources,
            }
        )
        self.strategy.append(rec)
        return rec

    def add_exemplar(self, ex: ActionExemplar) -> ActionExemplar:
        """Insert ``ex`` or replace the equal-key exemplar with it (raising the support)."""
        if not self.enabled:
            return ex
        for i, e in enumerate(self.exemplars):
            if e.key() == ex.key():
                merged = ActionExemplar(
                    **{
                        **asdict(ex),
                        "id": e.id,
                        "support": e.support + 1,
                        "sources": (*e.sources, *ex.sources)[-8:],
                    }
                )
                self.exemplars[i] = merged
                return merged
        ex = ActionExemplar(
            **{**asdict(ex), "id": f"A{len(self.exemplars) + 1:03d}", "sources": ex.sources}
        )
        self.exemplars.append(ex)
        return ex
