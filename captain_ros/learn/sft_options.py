"""The options of one ``captain learn sft`` run (:class:`SftOptions`, validated when built), the
error that refuses a run (:class:`SftError`), and which options a resume may change
(:data:`RUN_LENGTH`). Torch-free; :mod:`captain_ros.learn.sft` runs them (and still exports them).
"""

from __future__ import annotations

from dataclasses import dataclass

from captain_ros.core.errors import CaptainError

METHODS = ("lora", "full")
BF16_MODES = ("auto", "on", "off")
# Above this many tokens per sequence, "auto" recomputes activations in the backward pass: the
# activations of SmolLM2 with LoRA take about 3.5 MB per token (8k tokens: ~28 GB) without it.
CHECKPOINT_ABOVE_TOKENS = 4096


class SftError(CaptainError, ValueError):
    """Options or the output folder do not allow the run (the message says why)."""


@dataclass(frozen=True)
class SftOptions:
    """Everything a run depends on. Lengths in tokens; ``epochs`` may be fractional.

    ``pack_tokens`` > 0 packs whole training sequences into rows of at most that many tokens
    (``batch_size`` rows per micro-batch): a GPU's micro-batch; 0 (the default) keeps one
    sequence per row. ``threads``: torch's CPU threads (None: torch's own default,
    ``$OMP_NUM_THREADS``, else the physical cores); fewer threads than cores train that much slower.
    """

    data: str
    base: str = "smollm2"
    out: str = "runs/sft"
    method: str = "lora"
    lora_r: int = 16
    lora_alpha: int = 32
    lora_dropout: float = 0.05
    init_adapter: str | None = None
    epochs: float = 1.5
    max_steps: int = -1
    learning_rate: float | None = None
    batch_size: int = 1
    grad_accum: int = 4
    pack_tokens: int = 0
    max_length: int | None = None
    warmup: float = 0.03
    weight_decay: float = 0.0
    max_grad_norm: float = 1.0
    bf16: str = "auto"
    seed: int = 0
    eval_steps: int = 25
    save_steps: int = 25
    save_total_limit: int = 2
    val_fraction: float = 0.05
    resume: bool = False
    gradient_checkpointing: str = "auto"
    device: str | None = None
    threads: int | None = None
    save_adapter: bool = True
    progress: bool = True

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise SftError(f"unknown method {self.method!r}; valid: {', '.join(METHODS)}")
        if self.bf16 not in BF16_MODES:
            raise SftError(f"bf16 must be one of {', '.join(BF16_MODES)}, got {self.bf16!r}")
        if self.gradient_checkpointing not in BF16_MODES:
            raise SftError(
                "gradient_checkpointing must be one of "
                f"{', '.join(BF16_MODES)}, got {self.gradient_checkpointing!r}"
            )
        positive = {
            "lora_r": self.lora_r,
            "batch_size": self.batch_size,
            "grad_accum": self.grad_accum,
            "eval_steps": self.eval_steps,
            "save_steps": self.save_steps,
            "save_total_limit": self.save_total_limit,
        }
        for name, v in positive.items():
            if v < 1:
                raise SftError(f"{name} must be >= 1, got {v}")
        if self.pack_tokens < 0:
            raise SftError(f"pack_tokens must be >= 0 (0: no packing), got {self.pack_tokens}")
        if self.epochs <= 0 and self.max_steps <= 0:
            raise SftError("give epochs > 0 or max_steps > 0")
        if self.learning_rate is not None and not self.learning_rate > 0:
            raise SftError(f"learning_rate must be > 0, got {self.learning_rate}")
        if self.threads is not None and self.threads < 1:
            raise SftError(f"threads must be >= 1, got {self.threads}")
        if self.max_length is not None and self.max_length < 16:
            raise SftError(f"max_length must be >= 16 tokens, got {self.max_length}")
        if self.init_adapter is not None and self.method != "lora":
            raise SftError("init_adapter needs method 'lora'")
        if not 0 <= self.lora_dropout < 1 or not 0 <= self.warmup < 1:
            raise SftError("lora_dropout and warmup must be in [0, 1)")

    @property
    def lr(self) -> float:
        return self.learning_rate or (2e-4 if self.method == "lora" else 2e-5)


RUN_LENGTH = (
    "out",
    "resume",
    "progress",
    "data",
    "epochs",
    "max_steps",
    "eval_steps",
    "save_steps",
    "save_total_limit",
    "threads",
)
"""Options a resume may change: where and how long it runs, how often it evaluates and saves (a
shorter or longer horizon re-scales the cosine schedule from the restored step), not what it
trains on or how; nor the CPU threads it computes with."""
