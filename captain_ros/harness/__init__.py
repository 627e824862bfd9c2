"""The harness: the episode loop over a sandboxed Python session, and the record it leaves.

Three concept folders, each with a base module that says what it exports:

- :mod:`captain_ros.harness.episode`: one episode (setup, loop, budgets, gate, context,
  observers);
- :mod:`captain_ros.harness.record`: what an episode writes and how it is read back (history,
  trajectory, summary record, privileged log, returns);
- :mod:`captain_ros.harness.sandbox`: the session where policy code runs, and its isolation.

Imports point down that list: ``episode`` uses ``record`` and ``sandbox``, which use neither each
other nor ``episode`` (tests/test_layering.py). Front ends assemble an episode with
:class:`EpisodeSetup` (robot, policy, budgets, outputs, observers, privileged source) and get one
:class:`EpisodeRecord` back; :class:`Episode` is the loop underneath (:func:`run_episode` its
one-call form). ``robot`` is any :class:`~captain_ros.api.service.RobotCaller`.
"""

from captain_ros.harness.episode import (
    PYTHON_TOOL_SCHEMA,
    Budgets,
    BudgetTracker,
    CallEvent,
    CompletionGate,
    ContextConfig,
    Episode,
    EpisodeObserver,
    EpisodeOptions,
    EpisodeParts,
    EpisodeSetup,
    EpisodeStart,
    GateDecision,
    Stop,
    render,
    run_episode,
)
from captain_ros.harness.record import (
    OUTCOMES,
    EpisodeLearningRecord,
    EpisodeRecord,
    History,
    ImageRef,
    PrivilegedSource,
    RequestRecord,
    StateRecord,
    ToolCall,
    ToolOutput,
    Turn,
    load_episode_record,
    load_history,
    load_record,
    messages_sha256,
    outcome_label,
    read_records,
)
from captain_ros.harness.sandbox import CellResult, PythonSession, SessionConfig

__all__ = [
    "OUTCOMES",
    "PYTHON_TOOL_SCHEMA",
    "BudgetTracker",
    "Budgets",
    "CallEvent",
    "CellResult",
    "CompletionGate",
    "ContextConfig",
    "Episode",
    "EpisodeLearningRecord",
    "EpisodeObserver",
    "EpisodeOptions",
    "EpisodeParts",
    "EpisodeRecord",
    "EpisodeSetup",
    "EpisodeStart",
    "GateDecision",
    "History",
    "ImageRef",
    "PrivilegedSource",
    "PythonSession",
    "RequestRecord",
    "SessionConfig",
    "StateRecord",
    "Stop",
    "ToolCall",
    "ToolOutput",
    "Turn",
    "load_episode_record",
    "load_history",
    "load_record",
    "messages_sha256",
    "outcome_label",
    "read_records",
    "render",
    "run_episode",
]
