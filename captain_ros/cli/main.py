"""``captain``: the command line (every subcommand in ``captain --help``, one line each).

- ``captain run``: one episode in this process with live receipts and a final summary;
- ``captain eval``: many episodes (spawned workers or Ray), Wilson intervals, eval.json/png;
- ``captain compare``: paired comparison of two evaluations (exact McNemar);
- ``captain report``: (re)render an episode folder's report.html;
- ``captain bag info|recover|export|layout``: read, repair, export (LeRobot v3) or view a bag;
- ``captain up``: the ROS graph in one process (``captain_ros.ros.up``);
- ``captain ros goal|estop-reset|keygen``: an operator's goal (signed on a secured graph) and
  e-stop reset to a launched graph, and its key (``captain_ros.ros.operator_cli``);
- ``captain hw check``: hardware bring-up checks without motion;
- ``captain coevolve run|eval|report``: two humanoids carrying one payload;
- ``captain learn COMMAND``: the learning layer's commands (``captain learn --help`` lists them,
  and the ``learn`` line of ``captain --help`` names each one).

Bad input (an unknown task or policy, a negative seed, a missing or malformed file, an output
folder that cannot be written or already holds an episode) gets one clear line on stderr and exit
status 2; ``--debug`` shows the traceback instead. SIGTERM and SIGHUP end ``captain run`` the way
Ctrl-C does (its clean-up runs: the sandbox child is killed, the bag closed), with status 143 / 129;
other commands keep the default (``captain eval``'s workers and their sandbox children end with the
process that started them).
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading

import captain_ros.ros.arm_bridge  # noqa: F401 - registers the ROS 2 transport of --backend ros_arm
from captain_ros.cli.learn import COMMANDS as LEARN_COMMANDS
from captain_ros.core.errors import CaptainError

PASSTHROUGH = {
    "up": (
        "the ROS 2 graph in one process: one episode through the RunEpisode action",
        "captain_ros.ros.up",
    ),
    "ros": (
        "the operator's commands to a launched graph: goal | estop-reset | keygen "
        "(signed on a secured graph)",
        "captain_ros.ros.operator_cli",
    ),
    "coevolve": (
        "CoEvolve: two humanoids carrying one payload (run | eval | report)",
        "captain_ros.research.coevolve.cli",
    ),
    "learn": (
        f"learning: {' | '.join(LEARN_COMMANDS)} (captain learn COMMAND --help)",
        "captain_ros.cli.learn",
    ),
}
"""Subcommands with their own argument parsers: the rest of the command line is theirs."""


def build_parser() -> argparse.ArgumentParser:
    from captain_ros.cli.bag import add_parser as add_bag_parser
    from captain_ros.cli.episodes import add_parsers
    from captain_ros.cli.hw import add_parser as add_hw_parser

    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--debug", action="store_true", help="show the traceback of an error")
    parser = argparse.ArgumentParser(
        prog="captain", description="captain_ros: code-as-policy robot agents", parents=[common]
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    add_parsers(sub, common)
    add_bag_parser(sub, common)
    add_hw_parser(sub, common)
    for name, (help_text, _module) in PASSTHROUGH.items():
        p = sub.add_parser(name, help=help_text, add_help=False)
        p.add_argument("args", nargs=argparse.REMAINDER)
    return parser


def _passthrough(name: str, args: list[str]) -> int:
    import importlib

    return int(importlib.import_module(PASSTHROUGH[name][1]).main(args) or 0)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    os.environ.setdefault("MUJOCO_GL", "egl")
    debug = "--debug" in argv
    command = next((a for a in argv if not a.startswith("-")), "")
    try:
        if command in PASSTHROUGH:
            rest = argv[argv.index(command) + 1 :]
            return _passthrough(command, rest)
        ns = build_parser().parse_args(argv)
        if command == "run":
            _terminate_like_ctrl_c()
        return int(ns.fn(ns))
    except KeyboardInterrupt as exc:
        name = str(exc.args[0]) if exc.args and str(exc.args[0]).startswith("SIG") else ""
        print(
            f"captain {command}: {'terminated by ' + name if name else 'interrupted'}",
            file=sys.stderr,
        )
        return 128 + signal.Signals[name].value if name else 130
    except (CaptainError, ValueError, OSError, KeyError) as exc:
        if debug:
            raise
        print(f"captain {command}: {_one_line(exc)}", file=sys.stderr)
        return 2


def _terminate_like_ctrl_c() -> None:
    """SIGTERM/SIGHUP raise KeyboardInterrupt, so that every ``finally`` runs (by default they
    end the process at once and leave the sandbox child running)."""
    if threading.current_thread() is not threading.main_thread():
        return

    def handler(signum: int, _frame: object) -> None:
        raise KeyboardInterrupt(signal.Signals(signum).name)

    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, handler)


def _one_line(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.filename:
        return f"{exc.strerror or type(exc).__name__}: {exc.filename}"
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if isinstance(exc, CaptainError) else f"{type(exc).__name__}: {text}"


if __name__ == "__main__":
    raise SystemExit(main())
