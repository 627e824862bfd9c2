"""``captain learn export``: a student folder to a GGUF file for the llama.cpp engine, checked.

The conversion is llama.cpp's own ``convert_hf_to_gguf.py`` with its ``gguf-py``, which
``scripts/setup.sh`` unpacks from the ``llama-cpp-python`` source distribution into
``$VENV/share/llama.cpp`` (``$CAPTAIN_LLAMA_CPP_CONVERT`` names another copy). It runs as a
child process. The check then loads the folder in transformers (the reference) and the GGUF in
llama.cpp and decodes greedily from recorded prompts (the student's dataset rows, cut before each
assistant turn): the prompt token ids and the greedy reply tokens must agree, and the largest
|log-prob difference| over the agreeing tokens is reported. The result goes to
``FOLDER/export.json``, which the engines read to find the GGUF.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from captain_ros.core.errors import CaptainError, InvalidArgumentError

OUTTYPES = ("q8_0", "f16", "bf16", "f32")
CONVERTER = "convert_hf_to_gguf.py"
FALLBACK_PROMPT: tuple[dict[str, Any], ...] = (
    {"role": "system", "content": "You control a robot arm through Python."},
    {"role": "user", "content": "Pick up the red cube and place it on the blue cube."},
)


class ExportError(CaptainError):
    """The conversion failed or its check did not pass (one line)."""


def converter_dir() -> Path:
    """The folder holding llama.cpp's ``convert_hf_to_gguf.py``, ``conversion/`` and ``gguf-py/``."""
    env = os.environ.get("CAPTAIN_LLAMA_CPP_CONVERT")
    folder = Path(env) if env else Path(sys.prefix) / "share" / "llama.cpp"
    if not (folder / CONVERTER).is_file() or not (folder / "gguf-py").is_dir():
        raise ExportError(
            f"llama.cpp's converter is not in {folder} (scripts/setup.sh unpacks it; "
            "$CAPTAIN_LLAMA_CPP_CONVERT names another copy)"
        )
    return folder


def convert(folder: str | Path, outfile: str | Path, outtype: str = "q8_0") -> Path:
    """Run ``convert_hf_to_gguf.py`` on the transformers folder ``folder``; the GGUF path."""
    if outtype not in OUTTYPES:
        raise InvalidArgumentError(f"unknown --outtype {outtype!r}; valid: {', '.join(OUTTYPES)}")
    src = Path(folder)
    if not (src / "config.json").is_file():
        raise ExportError(f"{src} is not a transformers model folder (no config.json)")
    conv = converter_dir()
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(
            [str(conv / "gguf-py"), str(conv), os.environ.get("PYTHONPATH", "")]
        ).rstrip(os.pathsep),
    }
    cmd = [
        sys.executable,
        str(conv / CONVERTER),
        str(src),
        "--outfile",
        str(outfile),
        "--outtype",
        outtype,
    ]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0 or not Path(outfile).is_file():
        lines = [ln for ln in (done.stderr or done.stdout).splitlines() if ln.strip()]
        raise ExportError(
            f"convert_hf_to_gguf.py failed on {src}: "
            f"{lines[-1] if lines else f'exit {done.returncode}'}"
        )
    return Path(outfile)


@dataclass(frozen=True)
class PromptCheck:
    """One recorded prompt decoded greedily by both engines."""

    prompt_tokens: int
    prompt_ids_equal: bool
    reply_tokens: int
    agreeing_tokens: int
    max_abs_logprob_diff: float


def recorded_prompts(data: str | Path | None, n: int) -> list[tuple[list[dict[str, Any]], Any]]:
    """Up to ``n`` (messages, tools) prompts: dataset rows cut before each assistant turn."""
    if data is None:
        return [(list(FALLBACK_PROMPT), None)]
    from captain_ros.learn.rows import load_rows

    out: list[tuple[list[dict[str, Any]], Any]] = []
    for row in load_rows(data):
        for i, m in enumerate(row.messages):
            if m["role"] == "assistant" and len(out) < n:
                out.append(([dict(x) for x in row.messages[:i]], list(row.tools) or None))
    return out or [(list(FALLBACK_PROMPT), None)]


def check_export(
    folder: str | Path,
    gguf: str | Path,
    prompts: Sequence[tuple[list[dict[str, Any]], Any]],
    max_new_tokens: int = 48,
    threads: int | None = None,
) -> list[PromptCheck]:
    """Greedy decoding of ``prompts`` by transformers (``folder``) and llama.cpp (``gguf``)."""
    from captain_ros.policy.engines.base import EngineSettings
    from captain_ros.policy.engines.llamacpp import LlamaCppChat
    from captain_ros.policy.engines.transformers import TransformersEngine

    settings = EngineSettings(max_new_tokens=max_new_tokens, temperature=0.0, threads=threads)
    ref = TransformersEngine(folder, settings, device="cpu")
    eng = LlamaCppChat(gguf, settings)
    checks = []
    try:
        for messages, tools in prompts:
            ref.reset()
            eng.reset()
            a = ref.generate(messages, tools)
            b = eng.generate(messages, tools)
            agree = 0
            while (
                agree < min(len(a.completion_ids), len(b.completion_ids))
                and a.completion_ids[agree] == b.completion_ids[agree]
            ):
                agree += 1
            diff = max(
                (abs(x - y) for x, y in zip(a.logprobs[:agree], b.logprobs[:agree], strict=True)),
                default=0.0,
            )
            checks.append(
                PromptCheck(
                    len(a.prompt_ids),
                    a.prompt_ids == b.prompt_ids,
                    len(a.completion_ids),
                    agree,
                    float(diff),
                )
            )
    finally:
        eng.close()
    return checks


def export_student(
    folder: str | Path,
    outtype: str = "q8_0",
    data: str | Path | None = None,
    n_prompts: int = 3,
    max_new_tokens: int = 48,
) -> dict[str, Any]:
    """Convert ``folder`` to ``FOLDER/student.OUTTYPE.gguf``, check it, write ``export.json``.

    Raises :class:`ExportError` when prompt tokens or greedy reply tokens disagree."""
    src = Path(folder)
    name = f"student.{outtype}.gguf"
    t0 = time.perf_counter()
    convert(src, src / name, outtype)
    convert_s = time.perf_counter() - t0
    checks = check_export(src, src / name, recorded_prompts(data, n_prompts), max_new_tokens)
    agree = all(c.prompt_ids_equal and c.agreeing_tokens == c.reply_tokens for c in checks)
    record = {
        "gguf": name,
        "outtype": outtype,
        "convert_s": round(convert_s, 2),
        "greedy_tokens_agree": agree,
        "max_abs_logprob_diff": max(c.max_abs_logprob_diff for c in checks),
        "prompts": [asdict(c) for c in checks],
    }
    (src / "export.json").write_text(json.dumps(record, indent=2) + "\n")
    if not agree:
        first = next(
            c for c in checks if not (c.prompt_ids_equal and c.agreeing_tokens == c.reply_tokens)
        )
        raise ExportError(
            f"{name} disagrees with transformers: prompt ids equal "
            f"{first.prompt_ids_equal}, {first.agreeing_tokens}/{first.reply_tokens} "
            f"greedy tokens agree (see {src / 'export.json'})"
        )
    return record
