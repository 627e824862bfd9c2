"""The episode: one task attempt, request by request, from the first observation to the record.

- :mod:`.setup`: :class:`EpisodeSetup`, what every front end builds (folder checks included);
- :mod:`.parts`: :class:`EpisodeParts` and :class:`EpisodeOptions`, what one episode is made of;
- :mod:`.loop`: :class:`Episode`, the loop itself (open, announce, request..., settle, close),
  and :func:`run_episode`, its one-call form; :mod:`.start` opens an episode, :mod:`.settle`
  judges it and builds its record;
- :mod:`.reply`, :mod:`.cells`, :mod:`.calls`: asking the policy, running its cells in the
  sandbox, answering their robot calls;
- :mod:`.budgets`, :mod:`.gate`: the budgets and the completion gate that end an episode;
- :mod:`.context`, :mod:`.tokens`, :mod:`.profiles`, :mod:`.taskmd`: what the policy is shown;
- :mod:`.observers`: how front ends watch (and may stop) an episode;
- :mod:`.resume`: starting the loop at a restored decision point.

The episode uses the sandbox (:mod:`captain_ros.harness.sandbox`) and writes the record
(:mod:`captain_ros.harness.record`); neither of those imports anything from here.
"""

from captain_ros.harness.episode.budgets import Budgets, BudgetTracker
from captain_ros.harness.episode.context import PYTHON_TOOL_SCHEMA, ContextConfig, render
from captain_ros.harness.episode.gate import CompletionGate, GateDecision
from captain_ros.harness.episode.loop import Episode, run_episode
from captain_ros.harness.episode.observers import CallEvent, EpisodeObserver, EpisodeStart, Stop
from captain_ros.harness.episode.parts import EpisodeOptions, EpisodeParts
from captain_ros.harness.episode.resume import EpisodeResume
from captain_ros.harness.episode.setup import EpisodeSetup

__all__ = [
    "PYTHON_TOOL_SCHEMA",
    "BudgetTracker",
    "Budgets",
    "CallEvent",
    "CompletionGate",
    "ContextConfig",
    "Episode",
    "EpisodeObserver",
    "EpisodeOptions",
    "EpisodeParts",
    "EpisodeResume",
    "EpisodeSetup",
    "EpisodeStart",
    "GateDecision",
    "Stop",
    "render",
    "run_episode",
]
