"""The scripted expert: a careful code-writing agent per task family (public robot API only).

:class:`ScriptedExpert` drives a task plan (:mod:`captain_ros.policy.expert.plans`): each call to
:meth:`ScriptedExpert.next_cell` gets the output of the previous cell (cell output, receipts) and
returns the next :class:`Cell`, or ``None`` when the episode is over (the reply without a tool call
that ends it). It reads only what a policy reads: its own printed notes and receipts. It is the
embedded default policy of ``captain run`` and the generator of synthetic SFT trajectories.

Its cells call a small helper library (:mod:`.kit`, :mod:`.look`) and per-request session
functions (:mod:`.skills`, the plan modules), all real checked Python whose source the expert
writes into the session the first time a cell needs it (:mod:`.source`). It can make seeded
mistakes (:mod:`.faults`) and take over another policy's episode for a bounded segment
(:meth:`ScriptedExpert.takeover`). See docs/expert.md.
"""

from __future__ import annotations

from captain_ros.policy.expert.cells import Call, Cell, parse_notes
from captain_ros.policy.expert.expert import PROBE, ScriptedExpert, Segment
from captain_ros.policy.expert.plans import PLANS

__all__ = ["PLANS", "PROBE", "Call", "Cell", "ScriptedExpert", "Segment", "parse_notes"]
