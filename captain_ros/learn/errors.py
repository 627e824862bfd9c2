"""Errors of the learning layer, all under the project's one root :class:`CaptainError`."""

from __future__ import annotations

from captain_ros.core.errors import CaptainError, InvalidArgumentError, RecordError

__all__ = [
    "AlphaBudgetError",
    "CriticFolderError",
    "DatasetError",
    "LearnError",
    "LedgerError",
    "RecordError",
    "StaleRolloutError",
]


class LearnError(CaptainError):
    """Root of the learning layer's errors."""


class CriticFolderError(LearnError):
    """A critic folder is missing files, has a wrong format, or does not match the inputs."""


class StaleRolloutError(LearnError):
    """A rollout comes from a policy more versions old than the update allows."""


class AlphaBudgetError(LearnError):
    """A verification asked for more significance level than the generation has left."""


class LedgerError(LearnError):
    """An admission-ledger line breaks the schema; the message names the line and the field."""


class DatasetError(LearnError, InvalidArgumentError):
    """A dataset input (episode folder, bag, rows file or row) is missing or malformed; the message
    names the file and the problem."""
