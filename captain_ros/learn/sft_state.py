"""What a ``captain learn sft`` run leaves behind and takes back: its ``checkpoint-N`` folders
and where a resume starts, a cut run restored without training, a LoRA started from an earlier
adapter, and the saved student folder. Used by :mod:`captain_ros.learn.sft`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from captain_ros.learn.collate import PACKED_ATTENTION
from captain_ros.learn.sft_options import SftError


def checkpoint_step(checkpoint: Path) -> int:
    """The optimizer step of a ``checkpoint-N`` folder."""
    return int(checkpoint.name.rsplit("-", 1)[-1])


def list_checkpoints(folder: Path) -> list[Path]:
    """The ``checkpoint-N`` folders in ``folder``, by step (none when it does not exist)."""
    return sorted(folder.glob("checkpoint-*"), key=checkpoint_step) if folder.is_dir() else []


def load_adapter_weights(model: Any, folder: Path) -> int:
    """Set the LoRA weights of the peft ``model`` from the adapter ``folder`` (its
    ``adapter_model.safetensors``, as peft and the trainer's checkpoints save it); the number of
    tensors loaded. Raises :class:`SftError` when the folder is not an adapter of the same shape
    (rank, target modules), so a continuation never starts from a silently partial load."""
    from peft import set_peft_model_state_dict
    from safetensors.torch import load_file

    path = folder / "adapter_model.safetensors"
    if not path.is_file():
        raise SftError(f"--init-adapter {folder}: no adapter_model.safetensors there")
    state = load_file(str(path))
    try:
        result: Any = set_peft_model_state_dict(model, state)
    except RuntimeError as exc:  # a tensor of another shape (another rank)
        raise SftError(f"--init-adapter {folder}: {str(exc).splitlines()[0]}") from None
    lora_keys = [k for k in model.state_dict() if "lora_" in k]
    missing = [k for k in result.missing_keys if "lora_" in k]
    if result.unexpected_keys or missing or len(state) != len(lora_keys):
        raise SftError(
            f"--init-adapter {folder}: not an adapter of this model and LoRA config "
            f"({len(state)} tensors for {len(lora_keys)} LoRA weights; "
            f"{len(result.unexpected_keys)} unexpected, {len(missing)} missing)"
        )
    return len(state)


def save_student(trainer: Any, tokenizer: Any, out: Path, save_adapter: bool = True) -> Path:
    """Write the trained model to ``out`` as a plain transformers folder (LoRA merged)."""
    model = trainer.model
    if hasattr(model, "merge_and_unload"):
        if save_adapter:
            model.save_pretrained(str(out / "adapter"))
            tokenizer.save_pretrained(str(out / "adapter"))
        model = model.merge_and_unload()
    if model.config._attn_implementation == PACKED_ATTENTION:  # a training-time choice only
        model.config._attn_implementation = "sdpa"
    model.config.architectures = [type(model).__name__]
    model.config.use_cache = True
    model.save_pretrained(str(out))
    tokenizer.save_pretrained(str(out))
    return out


def resume_point(existing: list[Path], max_steps: int) -> Path | None:
    """The checkpoint to continue: the last one, or, for a run cut shorter (``--max-steps`` below
    the last checkpoint), the one at exactly ``max_steps``."""
    if not existing:
        return None
    if max_steps <= 0 or checkpoint_step(existing[-1]) <= max_steps:
        return existing[-1]
    at = [c for c in existing if checkpoint_step(c) == max_steps]
    if not at:
        raise SftError(
            f"cannot cut the run to {max_steps} steps: no checkpoint at that step (kept: "
            f"{', '.join(c.name for c in existing)})"
        )
    return at[0]


def restore_checkpoint(trainer: Any, checkpoint: Path) -> dict[str, float]:
    """Load ``checkpoint`` (weights and trainer state) without training; the run's figures up to
    it: mean logged loss, training time [s] and tokens/s as logged at its last step."""
    from transformers.trainer_callback import TrainerState

    trainer._load_from_checkpoint(str(checkpoint))
    trainer.state = TrainerState.load_from_json(str(checkpoint / "trainer_state.json"))
    history = trainer.state.log_history
    losses = [float(r["loss"]) for r in history if "loss" in r]
    last: dict[str, Any] = next((r for r in reversed(history) if "train_runtime" in r), {})
    return {
        "loss": sum(losses) / len(losses) if losses else float("nan"),
        "train_s": float(last.get("train_runtime", 0.0)),
        "tokens_per_s": float(last.get("train_tokens_per_second", 0.0)),
    }
