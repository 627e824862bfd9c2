"""Offline fixtures for the SFT and KV-cache tests: dataset rows built by hand from harness
histories (the records.md row schema), BPE tokenizers trained in a second with ``tokenizers``,
and tiny random Qwen2 / Llama models built from config."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from harness_helpers import SOLVE_RED_ON_BLUE, RedOnBlueTask, make_stack  # noqa: E402, F401 (re-exported)

from captain_ros.harness.episode.context import PYTHON_TOOL_SCHEMA, render  # noqa: E402
from captain_ros.harness.episode.taskmd import SYSTEM_PROMPT  # noqa: E402
from captain_ros.harness.record.history import History, ToolCall, ToolOutput, Turn  # noqa: E402
from captain_ros.harness.record.trajectory import messages_sha256  # noqa: E402

# SmolLM2-135M-Instruct's own template (no tool support: render_chat adds the tool prelude).
SMOL_TEMPLATE = (
    "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}"
    "{{ '<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging "
    "Face<|im_end|>\n' }}{% endif %}{{'<|im_start|>' + message['role'] + '\n' + "
    "message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}"
    "{{ '<|im_start|>assistant\n' }}{% endif %}"
)

# A Qwen2.5-style template with native tool support (schema, tool calls, tool responses).
QWEN_TEMPLATE = (
    "{%- if tools %}{{ '<|im_start|>system\\n' }}{% if messages[0].role == 'system' %}"
    "{{ messages[0].content + '\\n\\n' }}{% endif %}{{ '# Tools\\n<tools>\\n' }}"
    "{% for t in tools %}{{ t | tojson }}{{ '\\n' }}{% endfor %}{{ '</tools><|im_end|>\\n' }}"
    "{%- elif messages[0].role == 'system' %}"
    "{{ '<|im_start|>system\\n' + messages[0].content + '<|im_end|>\\n' }}{%- endif %}"
    "{%- for m in messages %}"
    "{%- if m.role == 'assistant' %}{{ '<|im_start|>assistant\\n' + m.content }}"
    "{%- for tc in (m.tool_calls or []) %}"
    '{{ \'\\n<tool_call>\\n{"name": "\' + tc.function.name + \'", "arguments": \' }}'
    "{%- if tc.function.arguments is string %}{{ tc.function.arguments }}"
    "{%- else %}{{ tc.function.arguments | tojson }}{%- endif %}{{ '}\\n</tool_call>' }}"
    "{%- endfor %}{{ '<|im_end|>\\n' }}"
    "{%- elif m.role == 'tool' %}"
    "{{ '<|im_start|>user\\n<tool_response>\\n' + m.content + '\\n</tool_response><|im_end|>\\n' }}"
    "{%- elif m.role != 'system' %}"
    "{{ '<|im_start|>' + m.role + '\\n' + m.content + '<|im_end|>\\n' }}{%- endif %}"
    "{%- endfor %}{%- if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{%- endif %}"
)

TEMPLATES = {"smol": SMOL_TEMPLATE, "qwen": QWEN_TEMPLATE}
SPECIALS = ["<unk>", "<|im_start|>", "<|im_end|>", "<pad>"]
TASK_MD = (
    "# TASK: red_on_blue\n\n## Instruction\n\nPut the red box on top of the blue box.\n\n"
    "## API\n\n- robot.observe()\n- robot.segment(text)\n- robot.move_to(position, ...)\n"
    "- robot.release()\n- finish(summary)\n"
)


def episode_history(n_turns: int = 4, outputs: tuple[str, ...] | None = None) -> History:
    """A hand-built red-on-blue history: the scripted solution's reasoning and code."""
    turns = []
    for t in range(1, n_turns + 1):
        step = SOLVE_RED_ON_BLUE[(t - 1) % len(SOLVE_RED_ON_BLUE)]
        cid = f"call_{t}_0"
        text = outputs[t - 1] if outputs else f"ok {t}\n[receipt] move_to: reached, 0.10 m, 1.2 N"
        turns.append(
            Turn(t, step["reasoning"], (ToolCall(cid, step["code"]),), (ToolOutput(cid, text),))
        )
    return History(SYSTEM_PROMPT, TASK_MD, (), tuple(turns))


def make_row(
    history: History,
    weights: list[float] | None = None,
    seed: int = 12,
    split: str = "train",
    segment: int = 0,
) -> dict[str, Any]:
    """A dataset row (records.md schema) for ``history``: its rendered messages, one weight
    and request index per assistant message, and each request's context hash."""
    messages = render(history)
    n = sum(1 for m in messages if m["role"] == "assistant")
    return {
        "id": f"red_on_blue:{seed}:{segment}",
        "episode_id": f"red_on_blue:{seed}",
        "task": "red_on_blue",
        "seed": seed,
        "split": split,
        "outcome": "success_with_finish",
        "profile": "default",
        "messages": messages,
        "tools": [PYTHON_TOOL_SCHEMA],
        "weights": weights if weights is not None else [1.0] * n,
        "requests": [t.index for t in history.turns],
        "context_sha256": [messages_sha256(render(history.upto(t.index))) for t in history.turns],
    }


def write_rows(folder: Path, rows: list[dict[str, Any]], name: str = "train.jsonl") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text("".join(json.dumps(r) + "\n" for r in rows))
    return folder


def train_tokenizer(
    template: str,
    corpus: list[str] | None = None,
    vocab_size: int = 800,
    whole_lines: list[str] | None = None,
) -> Any:
    """A byte-level BPE tokenizer trained on ``corpus`` (default: rendered episodes), with the
    pre-tokenizer and normalizer ``Qwen2Tokenizer`` rebuilds on load (so a saved and reloaded
    copy tokenizes identically). ``whole_lines`` become single added tokens (a compact
    vocabulary for tests that train on the real, long harness prompt)."""
    from tokenizers import (
        AddedToken,
        Regex,
        Tokenizer,
        decoders,
        models,
        normalizers,
        pre_tokenizers,
        trainers,
    )
    from transformers import PreTrainedTokenizerFast
    from transformers.models.qwen2.tokenization_qwen2 import PRETOKENIZE_REGEX

    if corpus is None:
        corpus = [json.dumps(make_row(episode_history(4)))] * 4 + [SYSTEM_PROMPT, TASK_MD]
    tok = Tokenizer(models.BPE())
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(PRETOKENIZE_REGEX), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=SPECIALS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tok.train_from_iterator(corpus, trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        unk_token="<unk>",
        eos_token="<|im_end|>",
        pad_token="<pad>",
        bos_token="<|im_start|>",
    )
    if whole_lines:
        fast.add_tokens(
            [AddedToken(ln, normalized=False) for ln in dict.fromkeys(whole_lines) if len(ln) > 3]
        )
    fast.chat_template = template
    return fast


def tiny_model(kind: str, tokenizer: Any, seed: int = 0) -> Any:
    """A 2-layer random Qwen2 or Llama causal LM for ``tokenizer``."""
    import torch
    import transformers

    torch.manual_seed(seed)
    common = dict(
        vocab_size=len(tokenizer),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=4096,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.bos_token_id,
        tie_word_embeddings=True,
    )
    if kind == "qwen2":
        return transformers.Qwen2ForCausalLM(transformers.Qwen2Config(**common))
    if kind == "llama":
        return transformers.LlamaForCausalLM(transformers.LlamaConfig(head_dim=8, **common))
    raise ValueError(kind)


def save_tiny(folder: Path, kind: str = "qwen2", template: str = "smol", seed: int = 0) -> Path:
    """A tiny model folder (weights + tokenizer + chat template), as a base for SFT."""
    tok = train_tokenizer(TEMPLATES[template])
    model = tiny_model(kind, tok, seed)
    model.config.architectures = [type(model).__name__]
    model.generation_config.eos_token_id = tok.eos_token_id
    model.generation_config.pad_token_id = tok.pad_token_id
    model.save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


def tiny_sft_options(tmp_path: Path, base: Path, **kw: Any) -> Any:
    """``SftOptions`` of a one-step run on ``tmp_path/data`` from the tiny model ``base``: no bf16,
    no warmup, no validation, one micro-batch a step, lr 1e-2 (``kw`` overrides any)."""
    from captain_ros.learn.sft_options import SftOptions

    defaults: dict[str, Any] = dict(
        data=str(tmp_path / "data"),
        base=str(base),
        out=str(tmp_path / "out"),
        progress=False,
        bf16="off",
        warmup=0.0,
        val_fraction=0.0,
        grad_accum=1,
        save_steps=1000,
        max_steps=1,
        learning_rate=1e-2,
    )
    return SftOptions(**{**defaults, **kw})


def random_lora(folder: Path, r: int, seed: int) -> Any:
    """A peft LoRA (all linear layers, alpha 2r) on the model in ``folder`` whose B matrices are
    drawn at random (std 0.02), so that it changes the model's outputs."""
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(str(folder), dtype=torch.float32)
    torch.manual_seed(seed)  # peft draws the A matrices
    model = get_peft_model(
        model, LoraConfig(r=r, lora_alpha=2 * r, target_modules="all-linear", task_type="CAUSAL_LM")
    )
    for name, p in model.named_parameters():
        if "lora_B" in name:
            torch.nn.init.normal_(p, std=0.02)
    return model
