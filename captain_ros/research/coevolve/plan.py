"""The semantic plan: task phases with completion evidence and status, and the scene milestones.

``P_t = [(q_k, gamma_k, sigma_k,t)]``: each phase has a kind, the completion evidence that closes
it and a status (``pending``, ``active``, ``done``). It records what to achieve, not a waypoint
sequence. The plan advances only when the verifier certifies the active phase's completion
evidence at an accepted checkpoint; several phases can close in one transaction (a transport that
crosses two gates).

Scene milestones (``K_r`` of them): the layout's route gates in order, the target region, and the
terminal milestone (placement and release, plus the robots' retreat for the base task's full
endpoint).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from captain_ros.backends.humanoid.layouts import Layout
from captain_ros.core.errors import InvalidArgumentError

ENDPOINTS = ("full", "placement")
"""``full``: placement, release and retreat (base task); ``placement``: placement and release."""


@dataclass(frozen=True)
class Phase:
    """One phase of the semantic plan.

    Attributes:
        name: Unique name (``initialize``, ``traverse_gate_2``, ``place``...).
        kind: ``initialize``, ``traverse``, ``enter_target``, ``place``, ``release`` or ``retreat``.
        evidence: The completion evidence that closes it (text for the roles and the report).
        target: The gate a traverse phase is about ("" otherwise).
        status: ``pending``, ``active`` or ``done``.
    """

    name: str
    kind: str
    evidence: str
    target: str = ""
    status: str = "pending"

    def to_dict(self) -> dict[str, str]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class Plan:
    """An immutable plan; :meth:`close` returns the advanced plan."""

    phases: tuple[Phase, ...]

    @classmethod
    def for_layout(cls, layout: Layout, endpoint: str = "full") -> Plan:
        if endpoint not in ENDPOINTS:
            raise InvalidArgumentError(
                f"unknown endpoint {endpoint!r}; valid: {', '.join(ENDPOINTS)}"
            )
        phases = [
            Phase(
                "initialize",
                "initialize",
                "both robots support the payload, lifted clear "
                "of the start pedestal, tilt within 5 degrees",
            )
        ]
        phases += [
            Phase(
                f"traverse_{g.name}",
                "traverse",
                f"payload centre crossed {g.name} inside the corridor while supported and level",
                g.name,
            )
            for g in layout.gates
        ]
        phases += [
            Phase(
                "enter_target",
                "enter_target",
                "payload centre within the 0.30 m target support radius while supported",
            ),
            Phase(
                "place",
                "place",
                "payload resting on the target pedestal: centre within "
                "0.30 m and 0.08 m of the target, tilt within 20 degrees",
            ),
            Phase(
                "release",
                "release",
                "no palm contact and the payload stays within "
                "tolerance over the 3 s stability window",
            ),
        ]
        if endpoint == "full":
            phases.append(
                Phase(
                    "retreat",
                    "retreat",
                    "both robots upright and clear of the payload by the retreat clearance",
                )
            )
        phases[0] = replace(phases[0], status="active")
        return cls(tuple(phases))

    def active(self) -> Phase | None:
        return next((p for p in self.phases if p.status == "active"), None)

    def close(self, names: set[str]) -> Plan:
        """Mark the leading run of phases in ``names`` done (from the active one) and activate the next."""
        out = list(self.phases)
        i = next((k for k, p in enumerate(out) if p.status == "active"), len(out))
        while i < len(out) and out[i].name in names:
            out[i] = replace(out[i], status="done")
            i += 1
        if i < len(out):
            out[i] = replace(out[i], status="active")
        return Plan(tuple(out))

    @property
    def finished(self) -> bool:
        return all(p.status == "done" for p in self.phases)

    def to_list(self) -> list[dict[str, Any]]:
        return [p.to_dict() for p in self.phases]


def milestone_names(layout: Layout) -> tuple[str, ...]:
    """The scene's milestones in order: gates, ``target_region``, ``terminal``."""
    return layout.milestone_names
