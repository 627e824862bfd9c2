"""One root exception with specific subclasses.

These are raised *inside* the stack (backends, motion, perception). They never reach policy code:
the API layer turns every exception into a :class:`~captain_ros.core.result.Result` with a
failure category.
"""


class CaptainError(Exception):
    """Root of every error raised by captain_ros."""


class InvalidArgumentError(CaptainError, ValueError):
    """An argument has the wrong type, shape, a non-finite value or is out of its domain."""


class UnknownNameError(CaptainError, KeyError):
    """A name (arm, camera, handle, detection id, task) is not known. The message lists valid names."""

    def __init__(self, kind: str, name: object, valid: "list[str] | tuple[str, ...]") -> None:
        self.kind = kind
        self.name = name
        self.valid = tuple(valid)
        super().__init__(
            f"unknown {kind} {name!r}; valid: {', '.join(map(str, self.valid)) or '(none)'}"
        )

    def __str__(self) -> str:  # KeyError quotes its message otherwise
        return str(self.args[0])


class NotSupportedError(CaptainError):
    """The backend does not support this operation (e.g. snapshots on hardware)."""


class EStopError(CaptainError):
    """The emergency stop is latched; motion is refused until it is reset."""


class SafetyLimitError(InvalidArgumentError):
    """A safety guard below the API refused a command (workspace box, joint limit, force/current
    limit, disagreeing twin). Nothing moved; the message names the guard and the limit."""


class HardwareError(CaptainError):
    """The hardware link is not usable: bus down, arm not enabled, stale feedback or a device fault.
    The message says what to check; nothing was commanded."""


class RecordError(InvalidArgumentError):
    """An episode folder or one of its files (summary, trajectory, privileged log, rollout record)
    is missing or malformed; the message names the file and the problem."""
