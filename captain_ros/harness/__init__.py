"""The harness: episode loop, sandboxed session, completion gate, budgets, context, trajectory log.

Entry point: :func:`run_episode` (``task, seed, robot, policy, budgets, out_dir``) ->
:class:`EpisodeSummary`. ``robot`` is any :class:`~captain_ros.api.service.RobotCaller`.
"""

from captain_ros.harness.budgets import Budgets, BudgetTracker
from captain_ros.harness.context import PYTHON_TOOL_SCHEMA, ContextConfig, render
from captain_ros.harness.episode import OUTCOMES, EpisodeSummary, outcome_label, run_episode
from captain_ros.harness.gate import CompletionGate, GateDecision
from captain_ros.harness.history import History, ImageRef, ToolCall, ToolOutput, Turn
from captain_ros.harness.session import CellResult, PythonSession, SessionConfig
from captain_ros.harness.trajectory import load_history, messages_sha256, read_records

__all__ = [
    "OUTCOMES", "PYTHON_TOOL_SCHEMA", "BudgetTracker", "Budgets", "CellResult", "CompletionGate",
    "ContextConfig", "EpisodeSummary", "GateDecision", "History", "ImageRef", "PythonSession",
    "SessionConfig", "ToolCall", "ToolOutput", "Turn", "load_history", "messages_sha256",
    "outcome_label", "read_records", "render", "run_episode",
]
