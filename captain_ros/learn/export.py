"""``captain learn export``: a student folder to a GGUF file for the llama.cpp engine, checked.

The conversion is llama.cpp's own ``convert_hf_to_gguf.py`` with its ``gguf-py``, which
``scripts/setup.sh`` unpacks from the ``llama-cpp-python`` source distribution into
``$VENV/share/llama.cpp`` (``$CAPTAIN_LLAMA_CPP_CONVERT`` names another copy). It runs as a
child process. The check then loads the folder in transformers (the reference) and the GGUF in
llama.cpp and decodes greedily from recorded prompts (the student's dataset rows, cut before each
assistant turn): the prompt token ids and the greedy reply tokens must agree, and the largest
|log-prob difference| over the agreeing tokens is reported. The result goes to
``FOLDER/export.json``, which the engines read to find the GGUF.

``--adapter`` converts the student's LoRA adapter (``FOLDER/adapter/``, peft) instead, with
llama.cpp's ``convert_lora_to_gguf.py``, to ``FOLDER/adapter.f16.gguf``: a few MB that llama.cpp
applies to the packaged SmolLM2 GGUF at load (what a shipped student is,
:mod:`captain_ros.policy.students`). Its check runs the packaged base plus the adapter in
llama.cpp against the merged student in transformers, and goes to ``export.json``'s ``adapter``.
The base's weights are the same numbers on both sides (the student was trained on the packaged
Q4_1 file, dequantized), but llama.cpp multiplies Q4_1 weights with activations rounded to 8 bits,
so greedy decoding may part at a near-tie: the adapter's check fails on differing prompt tokens or
on a log-prob difference above :data:`ADAPTER_LOGPROB_TOL` over the agreeing tokens, and reports
how many greedy tokens agree. Whether the student still solves its tasks on llama.cpp is what its
held-out evaluation, run on that engine, measures.
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
from captain_ros.policy.engines import ADAPTER_GGUF

OUTTYPES = ("q8_0", "f16", "bf16", "f32")
CONVERTER = "convert_hf_to_gguf.py"
LORA_CONVERTER = "convert_lora_to_gguf.py"
ADAPTER_LOGPROB_TOL = 0.25
"""Largest |log-prob difference| [nats] over the agreeing greedy tokens an adapter export accepts."""
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
    return _run_converter(CONVERTER, [str(src)], src, outfile, outtype)


def convert_adapter(adapter: str | Path, base: str | Path, outfile: str | Path) -> Path:
    """Run ``convert_lora_to_gguf.py`` on the peft adapter folder ``adapter`` of the transformers
    model ``base``; the adapter GGUF path (f16)."""
    src = Path(adapter)
    if not (src / "adapter_config.json").is_file():
        raise ExportError(f"{src} is not a LoRA adapter folder (no adapter_config.json)")
    return _run_converter(LORA_CONVERTER, [str(src), "--base", str(base)], src, outfile, "f16")


def _run_converter(
    script: str, args: list[str], src: Path, outfile: str | Path, outtype: str
) -> Path:
    conv = converter_dir()
    if not (conv / script).is_file():
        raise ExportError(f"llama.cpp's {script} is not in {conv} (scripts/setup.sh unpacks it)")
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(
            [str(conv / "gguf-py"), str(conv), os.environ.get("PYTHONPATH", "")]
        ).rstrip(os.pathsep),
    }
    cmd = [
        sys.executable,
        str(conv / script),
        *args,
        "--outfile",
        str(outfile),
        "--outtype",
        outtype,
    ]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0 or not Path(outfile).is_file():
        lines = [ln for ln in (done.stderr or done.stdout).splitlines() if ln.strip()]
        raise ExportError(
            f"{script} failed on {src}: {lines[-1] if lines else f'exit {done.returncode}'}"
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
    lora: str | Path | None = None,
) -> list[PromptCheck]:
    """Greedy decoding of ``prompts`` by transformers (``folder``) and llama.cpp (``gguf``, with
    the adapter ``lora`` applied when given)."""
    from captain_ros.policy.engines.base import EngineSettings
    from captain_ros.policy.engines.llamacpp import LlamaCppChat
    from captain_ros.policy.engines.transformers import TransformersEngine

    settings = EngineSettings(max_new_tokens=max_new_tokens, temperature=0.0, threads=threads)
    ref = TransformersEngine(folder, settings, device="cpu")
    eng = LlamaCppChat(gguf, settings, lora_path=lora)
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


def _agreement(
    checks: list[PromptCheck], what: str, record_path: Path, logprob_tol: float | None = None
) -> tuple[dict[str, Any], ExportError | None]:
    """The check's figures, and the error to raise when prompt or greedy tokens disagree (with
    ``logprob_tol``: when prompt tokens differ or log-probs differ by more than that)."""
    figures = {
        "greedy_tokens_agree": all(
            c.prompt_ids_equal and c.agreeing_tokens == c.reply_tokens for c in checks
        ),
        "max_abs_logprob_diff": max(c.max_abs_logprob_diff for c in checks),
        "prompts": [asdict(c) for c in checks],
    }
    figures["agreeing_tokens"] = sum(c.agreeing_tokens for c in checks)
    figures["reply_tokens"] = sum(c.reply_tokens for c in checks)
    if logprob_tol is not None:
        bad = [c for c in checks if not c.prompt_ids_equal or c.max_abs_logprob_diff > logprob_tol]
        if bad:
            return figures, ExportError(
                f"{what} disagrees with transformers: prompt ids equal {bad[0].prompt_ids_equal}, "
                f"log-prob difference {bad[0].max_abs_logprob_diff:.3f} > {logprob_tol} nats "
                f"(see {record_path})"
            )
        return figures, None
    bad = [c for c in checks if not (c.prompt_ids_equal and c.agreeing_tokens == c.reply_tokens)]
    error = (
        ExportError(
            f"{what} disagrees with transformers: prompt ids equal {bad[0].prompt_ids_equal}, "
            f"{bad[0].agreeing_tokens}/{bad[0].reply_tokens} greedy tokens agree (see {record_path})"
        )
        if bad
        else None
    )
    return figures, error


def _write_record(src: Path, key: str | None, entry: dict[str, Any]) -> None:
    """Merge ``entry`` into ``export.json`` (at the top, or under ``key``)."""
    path = src / "export.json"
    try:
        record = json.loads(path.read_text()) if path.is_file() else {}
    except ValueError:
        record = {}
    record.update({key: entry} if key else entry)
    path.write_text(json.dumps(record, indent=2) + "\n")


def export_student(
    folder: str | Path,
    outtype: str = "q8_0",
    data: str | Path | None = None,
    n_prompts: int = 3,
    max_new_tokens: int = 48,
) -> dict[str, Any]:
    """Convert ``folder`` to ``FOLDER/student.OUTTYPE.gguf``, check it, write ``export.json``.

    Raises :class:`ExportError` when prompt tokens or greedy reply tokens disagree (the record
    is written first, for inspection)."""
    src = Path(folder)
    name = f"student.{outtype}.gguf"
    t0 = time.perf_counter()
    convert(src, src / name, outtype)
    convert_s = time.perf_counter() - t0
    checks = check_export(src, src / name, recorded_prompts(data, n_prompts), max_new_tokens)
    entry: dict[str, Any] = {"gguf": name, "outtype": outtype, "convert_s": round(convert_s, 2)}
    figures, error = _agreement(checks, name, src / "export.json")
    _write_record(src, None, {**entry, **figures})
    if error:
        raise error
    return {**entry, **figures}


def export_adapter(
    folder: str | Path,
    data: str | Path | None = None,
    n_prompts: int = 3,
    max_new_tokens: int = 48,
) -> dict[str, Any]:
    """Convert the LoRA adapter of the student ``folder`` to ``FOLDER/adapter.f16.gguf`` and check
    the packaged SmolLM2 GGUF plus that adapter in llama.cpp against the merged student in
    transformers; the figures go to ``export.json``'s ``adapter`` entry.

    Raises :class:`ExportError` for a student without an adapter or a packaged base, a failed
    conversion, or a check that does not pass."""
    from captain_ros.policy.students import file_sha256
    from captain_ros.policy.transformers_chat import smollm2_folder

    src = Path(folder)
    try:
        meta = json.loads((src / "sft_config.json").read_text())
        base_folder = Path(meta["base_folder"])
        base_spec = meta["options"]["base"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ExportError(
            f"{src} is not a `captain learn sft` student (sft_config.json: {exc})"
        ) from None
    if base_spec != "smollm2":
        raise ExportError(
            f"{src}: only students of the packaged smollm2 ship as an adapter "
            f"(this one's base is {base_spec!r}); export the merged model instead"
        )
    gguf_dir, gguf_name = smollm2_folder()
    t0 = time.perf_counter()
    convert_adapter(src / "adapter", base_folder, src / ADAPTER_GGUF)
    convert_s = time.perf_counter() - t0
    checks = check_export(
        src,
        gguf_dir / gguf_name,
        recorded_prompts(data, n_prompts),
        max_new_tokens,
        lora=src / ADAPTER_GGUF,
    )
    entry: dict[str, Any] = {
        "gguf": ADAPTER_GGUF,
        "base": "smollm2",
        "base_gguf": gguf_name,
        "base_sha256": file_sha256(gguf_dir / gguf_name),
        "profile": meta.get("profile", "default"),
        "convert_s": round(convert_s, 2),
        "bytes": (src / ADAPTER_GGUF).stat().st_size,
    }
    figures, error = _agreement(
        checks, f"smollm2 + {ADAPTER_GGUF}", src / "export.json", ADAPTER_LOGPROB_TOL
    )
    _write_record(src, "adapter", {**entry, **figures})
    if error:
        raise error
    return {**entry, **figures}
