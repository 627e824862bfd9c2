"""The harness: episode loop, sandboxed session, completion gate, budgets, context, trajectory log.

Front ends assemble an episode with :class:`EpisodeSetup` (robot, policy, budgets, outputs,
observers, privileged source) and get one :class:`EpisodeRecord` back; :func:`run_episode` is the
loop underneath. ``robot`` is any :class:`~captain_ros.api.service.RobotCaller`.
"""

from captain_ros.harness.budgets import Budgets, BudgetTracker
from captain_ros.harness.context import PYTHON_TOOL_SCHEMA, ContextConfig, render
from captain_ros.harness.episode import EpisodeOptions, run_episode
from captain_ros.harness.gate import CompletionGate, GateDecision
from captain_ros.harness.observers import CallEvent, EpisodeObserver, EpisodeStart, Stop
from captain_ros.harness.record.episode_record import (
    OUTCOMES,
    EpisodeRecord,
    load_record,
    outcome_label,
)
from captain_ros.harness.record.history import History, ImageRef, ToolCall, ToolOutput, Turn
from captain_ros.harness.record.privileged_log import (
    EpisodeLearningRecord,
    PrivilegedSource,
    RequestRecord,
    StateRecord,
    load_episode_record,
)
from captain_ros.harness.record.trajectory import load_history, messages_sha256, read_records
from captain_ros.harness.sandbox.session import CellResult, PythonSession, SessionConfig
from captain_ros.harness.setup import EpisodeSetup

__all__ = [
    "OUTCOMES", "PYTHON_TOOL_SCHEMA", "BudgetTracker", "Budgets", "CallEvent", "CellResult",
    "CompletionGate", "ContextConfig", "EpisodeLearningRecord", "EpisodeObserver", "EpisodeOptions",
    "EpisodeRecord", "EpisodeSetup", "EpisodeStart", "GateDecision", "History", "ImageRef",
    "PrivilegedSource", "PythonSession", "RequestRecord", "SessionConfig", "StateRecord", "Stop",
    "ToolCall", "ToolOutput", "Turn", "load_episode_record", "load_history", "load_record",
    "messages_sha256", "outcome_label", "read_records", "render", "run_episode",
]
