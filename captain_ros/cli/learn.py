"""``captain learn <command>``: the learning layer (torch is imported only by the command run).

- ``captain learn dataset RUN_DIR_OR_BAG... --out DIR``: supervised rows (torch-free);
- ``captain learn sft --data DIR --base smollm2|PATH --out DIR``: fine-tune a student;
- ``captain learn critic --episodes RUN_DIR... --out DIR``: the privileged simulator critic;
- ``captain learn rl --policy-folder DIR --critic DIR --tasks T --starts N --rounds R --out DIR``:
  RL with per-request credit.
- ``captain learn re0 --student DIR|SPEC --teacher scripted|openai --task T --out DIR``: one RE-0
  generation (verified repairs, RE-OPD distillation).
- ``captain learn rl-student SFT RL_VERSION --out DIR``: an RL version as a student folder.
- ``captain learn student-folder student[:NAME] --out DIR``: a shipped student as a trainable
  student folder (its adapter GGUF back as a peft adapter).
- ``captain learn export STUDENT``: the student as a checked GGUF file (``--engine llamacpp``).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

COMMANDS = {
    "dataset": ("captain_ros.cli.learn_dataset", "supervised rows from episode folders and bags"),
    "sft": ("captain_ros.cli.learn_sft", "fine-tune a student on dataset rows"),
    "critic": ("captain_ros.cli.learn_critic", "train the privileged simulator critic"),
    "rl": ("captain_ros.cli.learn_rl", "multi-turn RL with per-request credit from the critic"),
    "re0": ("captain_ros.research.re0.cli", "RE-0: verified repairs and RE-OPD distillation"),
    "rl-student": (
        "captain_ros.cli.learn_rl_student",
        "an RL version stacked onto its SFT student, as a student folder",
    ),
    "student-folder": (
        "captain_ros.cli.learn_student_folder",
        "a shipped student as a trainable student folder",
    ),
    "export": ("captain_ros.cli.learn_export", "a student as a GGUF file for --engine llamacpp"),
}


def main(argv: Sequence[str] | None = None) -> int:
    import importlib

    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help") or args[0] not in COMMANDS:
        lines = [f"  {name:<9} {help_text}" for name, (_m, help_text) in COMMANDS.items()]
        print(
            "usage: captain learn COMMAND [options]\n\ncommands:\n" + "\n".join(lines),
            file=sys.stdout if args[:1] in (["-h"], ["--help"]) else sys.stderr,
        )
        return 0 if args[:1] in (["-h"], ["--help"]) else 2
    return int(importlib.import_module(COMMANDS[args[0]][0]).main(args[1:]) or 0)
