"""An RL rollout worker's student on llama.cpp (``captain learn rl --engine llamacpp``).

The trainer publishes each policy version as a peft LoRA adapter folder (:mod:`.sync`). A worker
that samples with llama.cpp runs the policy folder's GGUF (the packaged SmolLM2 file for its
dequantized cache folder, else the folder's ``captain learn export`` output) plus the version's
adapter converted by llama.cpp's ``convert_lora_to_gguf.py`` into the version folder (once per
version: the first worker converts, the others find the file). The engine is rebuilt when a job
names another version (loading takes well under a second). It samples at the run's temperature
without top-p, seeded per job, and records the log-probs of the tempered distribution, as the
transformers worker does; the trainer's update scores the same tokens with transformers, and
tests/learn/test_rl_llamacpp.py checks that the two log-probs agree.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

_ENGINES: dict[str, tuple[int, str, Any]] = {}  # per worker: base -> (version, adapter, engine)


def base_gguf(base: str) -> Path:
    """The GGUF llama.cpp runs for the transformers folder ``base``."""
    from captain_ros.learn.errors import LearnError
    from captain_ros.learn.models import smollm2_base
    from captain_ros.policy.engines import model_source

    is_smollm2 = Path(base).resolve() == smollm2_base().resolve()  # its dequantized cache folder
    gguf = model_source("smollm2" if is_smollm2 else base).gguf
    if gguf is None:
        raise LearnError(
            f"--engine llamacpp needs a GGUF of the policy folder {base}: "
            f"run `captain learn export {base}` first"
        )
    return gguf


def adapter_gguf(adapter: str, base: str) -> Path:
    """The version's adapter as a llama.cpp LoRA GGUF, converted once (workers converting the same
    version at once each write their own file; the last rename wins, the files are equal)."""
    from captain_ros.learn.export import ADAPTER_GGUF, convert_adapter

    dest = Path(adapter) / ADAPTER_GGUF
    if not dest.is_file():
        tmp = dest.with_name(f".{dest.stem}.{os.getpid()}.gguf")
        convert_adapter(adapter, base, tmp)
        os.replace(tmp, dest)
    return dest


def llama_student(
    base: str, adapter: str, max_new_tokens: int, temperature: float, threads: int
) -> tuple[Any, int]:
    """The worker's llama.cpp engine at the adapter folder's version, and that version."""
    from captain_ros.learn.rl.sync import read_version
    from captain_ros.policy.engines.base import EngineSettings
    from captain_ros.policy.engines.llamacpp import LlamaCppChat

    version = read_version(adapter)
    settings = EngineSettings(
        max_new_tokens=int(max_new_tokens),
        temperature=float(temperature),
        top_p=1.0,
        seed=0,
        threads=max(1, int(threads)),
    )
    held = _ENGINES.get(base)
    if held is not None and held[0] == version and held[1] == adapter:
        engine = held[2]
        engine.settings = settings  # a job may change the reply cap or the temperature
    else:
        if held is not None:
            held[2].close()
        engine = LlamaCppChat(base_gguf(base), settings, lora_path=adapter_gguf(adapter, base))
        _ENGINES[base] = (version, adapter, engine)
    return engine, version
