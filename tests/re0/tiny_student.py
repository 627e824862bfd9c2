"""A tiny random transformers student for the RE-0 loop tests, built offline from config: a BPE
tokenizer whose vocabulary holds the real prompt's fixed lines (system prompt, tool note, the
task's TASK.md), so a harness context fits the tiny model's positions, and a 2-layer Qwen2."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "learn"))

from sft_fixtures import TEMPLATES, tiny_model, train_tokenizer  # noqa: E402

from captain_ros.harness.episode.budgets import Budgets  # noqa: E402
from captain_ros.harness.episode.taskmd import SYSTEM_PROMPT, render_task_md  # noqa: E402
from captain_ros.policy.chat_render import TOOL_NOTE  # noqa: E402
from captain_ros.tasks import get_task  # noqa: E402


def save_tiny_student(
    folder: Path,
    task_name: str = "pick_place",
    seeds: range = range(4),
    budgets: Budgets | None = None,
) -> Path:
    """A tiny random student folder for ``task_name`` (``captain learn sft`` takes it as --base)."""
    task = get_task(task_name)
    lines = (SYSTEM_PROMPT + "\n" + TOOL_NOTE).splitlines()
    for s in seeds:
        lines += render_task_md(task, s, budgets or Budgets()).splitlines()
    corpus = [SYSTEM_PROMPT, TOOL_NOTE, "robot.observe()\nfinish('done')\nprint(x)\n"]
    tok = train_tokenizer(TEMPLATES["smol"], corpus, 600, whole_lines=lines)
    model = tiny_model("qwen2", tok)
    model.config.architectures = [type(model).__name__]
    model.generation_config.eos_token_id = tok.eos_token_id
    model.generation_config.pad_token_id = tok.pad_token_id
    model.save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


def model_job(seat: str, out_dir: Path, **options: object) -> dict[str, object]:
    """A student episode job (``rollouts.student_job``'s plain dict) of ``seat`` on pick_place seed
    0, fake rig."""
    return {
        "task": "pick_place",
        "seed": 0,
        "policy": seat,
        "backend": "fake",
        "out_dir": str(out_dir),
        "options": options,
    }
