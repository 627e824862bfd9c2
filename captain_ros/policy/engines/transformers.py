"""Today's eager-PyTorch path behind the engine interface: an adapter of
:class:`~captain_ros.policy.transformers_chat.TransformersChat` (the training and reference path,
and the GPU path). torch is imported only when the engine is built."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from captain_ros.policy.engines.base import ChatEngine, EngineSettings, Generation, default_threads
from captain_ros.policy.openai_client import PYTHON_TOOL


class TransformersEngine(ChatEngine):
    """A transformers model folder (safetensors, or a GGUF dequantized on load).

    Args:
        folder: Model folder.
        settings: Sampling and thread settings (threads set torch's intra-op threads on CPU).
        gguf_file: GGUF file name inside ``folder``, or None.
        device: ``cuda`` / ``cpu`` / None (GPU when present).
    """

    name = "transformers"

    def __init__(
        self,
        folder: str | Path,
        settings: EngineSettings | None = None,
        *,
        gguf_file: str | None = None,
        device: str | None = None,
    ) -> None:
        import time

        from captain_ros.policy.transformers_chat import TransformersChat

        self.settings = settings or EngineSettings()
        self.threads = self.settings.threads or default_threads()
        start = time.perf_counter()
        s = self.settings
        self.chat = TransformersChat(
            folder,
            gguf_file=gguf_file,
            device=device,
            max_new_tokens=s.max_new_tokens,
            temperature=s.temperature,
            top_p=s.top_p,
            seed=s.seed,
            reuse_cache=s.reuse_prefix,
        )
        if self.chat.device == "cpu":
            self.chat._torch.set_num_threads(self.threads)
        self.load_s = time.perf_counter() - start
        self.folder = Path(folder)
        self.gguf_file = gguf_file

    def generate(
        self,
        messages: Sequence[dict[str, Any]],
        tools: Sequence[dict[str, Any]] | None = (PYTHON_TOOL,),
    ) -> Generation:
        return self.chat.generate(messages, tools)

    def reset(self) -> None:
        self.chat.reset()

    @property
    def last_decode_s(self) -> float:
        """The last request's decode time (after its prefill) [s]."""
        return float(getattr(self.chat, "last_decode_s", 0.0))

    def describe(self) -> dict[str, Any]:
        model = self.folder / self.gguf_file if self.gguf_file else self.folder
        return {
            "engine": self.name,
            "model": str(model),
            "threads": self.threads,
            "device": self.chat.device,
            "decoding": self.settings.decoding(),
            "grammar": "none",
            "load_s": round(self.load_s, 3),
        }
