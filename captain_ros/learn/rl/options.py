"""Options of ``captain learn rl`` (validated; the paper's values where it gives them)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from captain_ros.core.errors import InvalidArgumentError
from captain_ros.learn.credit import GROUP_SIZE
from captain_ros.learn.rl.samples import MAX_REQUESTS
from captain_ros.learn.rl.workers import TRAIN_SEEDS

ROLLOUT_ENGINES = ("transformers", "llamacpp")

# Options a resumed run must share with the run that wrote the checkpoint (they decide the rounds).
SAME_ON_RESUME = (
    "policy_folder",
    "tasks",
    "starts",
    "group",
    "seed",
    "backend",
    "lr",
    "warmup_steps",
    "accumulation_rounds",
    "max_train_requests",
    "lora_r",
    "lora_alpha",
    "max_requests",
    "max_new_tokens",
    "temperature",
    "early_stop",
    "critic_lr",
    "prefetch",
    "max_physical_actions",
)


@dataclass(frozen=True)
class RLOptions:
    """One RL run (``captain learn rl``).

    Attributes:
        policy_folder: The student: ``smollm2`` or a transformers model folder (an SFT student).
            It is also the KL reference: the trainer puts a fresh LoRA adapter on top of it.
        critic: A critic folder from ``captain learn critic`` (warm start).
        tasks / starts / group: Each round rolls out ``starts`` start states (tasks in turn),
            ``group`` times each (paper: 64 x 4).
        rounds: Rounds to have done when the command ends (a resume continues up to it).
        out: Run folder (log.jsonl, rounds/, policy/, critic/, heldout/, checkpoint/).
        workers / ray: Parallel rollout processes, or a Ray address (``local``: in-process).
        heldout_seeds / heldout_every: The no-gradient monitor: these seeds (>= 1000, never
            trained on), every ``heldout_every`` rounds and after the last one.
        lr / warmup_steps / accumulation_rounds: AdamW (constant after warm-up), K rounds per
            optimizer step (paper: K = 4; 4.24e-6 for full fine-tuning, a LoRA needs more).
        max_train_requests: Requests per trajectory in the policy gradient (8).
        lora_r / lora_alpha: The trained adapter.
        max_requests / max_physical_actions: Episode budgets (default: the RL budget mode).
        max_new_tokens: Reply length cap of the student.
        temperature: The rollouts' sampling temperature T (paper: 1). The recorded rollout
            log-probs are those of the tempered distribution, and the update's ratio and KL use
            the same T; a weakly trained student may need T < 1 to produce any success at all.
        early_stop: The critic's early stop (V < 0.02 for 5 requests after request 5).
        critic_lr: Co-training learning rate (two AdamW steps per round).
        prefetch: Submit round k + 1's rollouts before round k's update (asynchronous, as in
            the paper: rollouts then lag the trainer by one version).
        gradient_checkpointing: Recompute the trainer's decoder layers in the backward pass (the
            same gradients in far less memory: long CPU contexts; see :mod:`.update`).
        sketch_dim: Count-sketch size of per-episode gradients for appendix H's noise scale
            (0: off).
        engine: What the in-process rollout workers sample with: ``transformers`` (the policy
            folder plus the version's peft adapter) or ``llamacpp`` (the policy folder's GGUF plus
            the version's adapter converted by llama.cpp's ``convert_lora_to_gguf.py``, once per
            version; :mod:`.rollout`). The update always scores with transformers.
        served_url / served_model: Roll out through a vLLM server at this URL that serves the
            policy folder as ``served_model`` with runtime LoRA loading (:mod:`.served`); the
            trainer stays here. ``None``: the workers run the student in-process.
    """

    policy_folder: str
    critic: str
    tasks: tuple[str, ...]
    out: str
    starts: int = 64
    group: int = GROUP_SIZE
    rounds: int = 1
    workers: int = 1
    ray: str | None = None
    heldout_seeds: tuple[int, ...] = ()
    heldout_every: int = 5
    resume: bool = False
    backend: str = "mujoco"
    seed: int = 0
    lr: float = 1e-5
    warmup_steps: int = 1
    accumulation_rounds: int = 4
    max_train_requests: int = MAX_REQUESTS
    lora_r: int = 16
    lora_alpha: int = 32
    max_requests: int | None = None
    max_physical_actions: int | None = None
    max_new_tokens: int = 256
    temperature: float = 1.0
    early_stop: bool = True
    critic_lr: float = 1e-4
    prefetch: bool = False
    sketch_dim: int = 4096
    gradient_checkpointing: bool = True
    device: str | None = None
    threads: int = 0
    bags: bool = False
    progress: bool = True
    served_url: str | None = None
    served_model: str = "student"
    engine: str = "transformers"
    extra: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        from captain_ros.backends import BACKENDS
        from captain_ros.tasks import TASKS

        if not self.tasks:
            raise InvalidArgumentError("--tasks needs at least one task")
        unknown = [t for t in self.tasks if t not in TASKS]
        if unknown:
            raise InvalidArgumentError(f"unknown task {unknown[0]!r}; valid: {', '.join(TASKS)}")
        if self.backend not in ("mujoco", "fake") or self.backend not in BACKENDS:
            raise InvalidArgumentError(
                f"RL needs a simulated backend (mujoco or fake), got {self.backend!r}"
            )
        if not 1 <= self.starts <= len(TRAIN_SEEDS):
            raise InvalidArgumentError(
                f"--starts must be in 1..{len(TRAIN_SEEDS)}, got {self.starts}"
            )
        for name in (
            "group",
            "rounds",
            "workers",
            "heldout_every",
            "accumulation_rounds",
            "max_train_requests",
            "lora_r",
            "lora_alpha",
            "max_new_tokens",
        ):
            if int(getattr(self, name)) < 1:
                raise InvalidArgumentError(
                    f"--{name.replace('_', '-')} must be >= 1, got {getattr(self, name)}"
                )
        if not 0 < float(self.temperature) <= 2:
            raise InvalidArgumentError(
                f"--temperature must be in (0, 2] (RL samples), got {self.temperature}"
            )
        if self.served_url and float(self.temperature) != 1.0:
            raise InvalidArgumentError(
                "--temperature other than 1 with --served-url: vLLM returns the raw "
                "(untempered) log-probs by default, which would not match the sampling "
                "distribution"
            )
        for name in ("max_requests", "max_physical_actions"):
            v = getattr(self, name)
            if v is not None and v < 1:
                raise InvalidArgumentError(f"--{name.replace('_', '-')} must be >= 1, got {v}")
        bad = [s for s in self.heldout_seeds if s in TRAIN_SEEDS]
        if bad:
            raise InvalidArgumentError(
                f"held-out seed {bad[0]} is a training seed (0-999); the monitor uses seeds >= 1000"
            )
        if not self.lr > 0 or not self.critic_lr > 0 or self.warmup_steps < 0:
            raise InvalidArgumentError("--lr and --critic-lr must be > 0, --warmup-steps >= 0")
        if self.served_url is not None and not self.served_url.startswith(("http://", "https://")):
            raise InvalidArgumentError(
                f"--served-url must be an http(s) URL such as http://localhost:8000/v1, "
                f"got {self.served_url!r}"
            )
        if self.engine not in ROLLOUT_ENGINES:
            raise InvalidArgumentError(
                f"--engine must be one of {', '.join(ROLLOUT_ENGINES)}, got {self.engine!r}"
            )
        if self.engine != "transformers" and self.served_url:
            raise InvalidArgumentError("--engine llamacpp and --served-url exclude each other")
        if self.sketch_dim < 0 or self.threads < 0:
            raise InvalidArgumentError("--sketch-dim and --threads must be >= 0")

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["tasks"], d["heldout_seeds"] = list(self.tasks), list(self.heldout_seeds)
        return d

    def resume_conflicts(self, saved: dict[str, Any]) -> list[str]:
        """Options that differ from the checkpoint's (``--name saved -> now``)."""
        now = self.to_dict()
        return [
            f"--{k.replace('_', '-')} {saved[k]!r} -> {now[k]!r}"
            for k in SAME_ON_RESUME
            if k in saved and saved[k] != now[k]
        ]
