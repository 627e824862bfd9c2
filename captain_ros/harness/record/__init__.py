"""The record: what one episode leaves in its folder, and reading it back.

- :mod:`.history`: the conversation h_t (turns, tool calls, outputs, image references);
- :mod:`.trajectory`: ``trajectory.jsonl``, one line per request (:class:`TrajectoryWriter`,
  :func:`read_records`, :func:`load_history`);
- :mod:`.episode_record`: :class:`EpisodeRecord`, the one record of an episode (``summary.json``)
  and its outcome labels;
- :mod:`.privileged_log`: ``privileged.jsonl``, the simulator's ground truth per request (never
  shown to the policy) and :class:`EpisodeLearningRecord`, what learning reads from it;
- :mod:`.returns`: the per-request costs and the terminal return R (CaPtain section 3.3);
- :mod:`.recorded`: :class:`RecordedEpisode`, a finished folder read back whole;
- :mod:`.robot_state`: a snapshot of the robot side between requests (:class:`RobotSideSnapshot`).

Nothing here runs an episode or a sandbox: the episode loop writes through these types.
"""

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
from captain_ros.harness.record.recorded import RecordedEpisode
from captain_ros.harness.record.returns import CostConfig, RequestCounts
from captain_ros.harness.record.robot_state import RestoreRefused, RobotSideSnapshot
from captain_ros.harness.record.trajectory import (
    TrajectoryWriter,
    load_history,
    messages_sha256,
    read_records,
)

__all__ = [
    "OUTCOMES",
    "CostConfig",
    "EpisodeLearningRecord",
    "EpisodeRecord",
    "History",
    "ImageRef",
    "PrivilegedSource",
    "RecordedEpisode",
    "RequestCounts",
    "RequestRecord",
    "RestoreRefused",
    "RobotSideSnapshot",
    "StateRecord",
    "ToolCall",
    "ToolOutput",
    "TrajectoryWriter",
    "Turn",
    "load_episode_record",
    "load_history",
    "load_record",
    "messages_sha256",
    "outcome_label",
    "read_records",
]
