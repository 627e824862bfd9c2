"""In-process transformers chat backend on tiny Qwen2/Qwen3 models built from config, and SmolLM2."""

from __future__ import annotations

import json

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from captain_ros.policy.openai_client import PYTHON_TOOL  # noqa: E402
from captain_ros.policy.toolcalls import parse_reply  # noqa: E402
from captain_ros.policy.transformers_chat import (  # noqa: E402
    TransformersChat,
    flatten_content,
    smollm2_folder,
)

pytestmark = pytest.mark.learn

# A Qwen-style template that renders the tool schema (like the real Qwen2.5/Qwen3 templates).
CHAT_TEMPLATE = (
    "{% if tools %}<|im_start|>system\n# Tools\n{% for t in tools %}{{ t | tojson }}\n"
    "{% endfor %}<|im_end|>\n{% endif %}"
    "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def _tokenizer():
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    corpus = [
        "robot.observe() print(obs) tool_call python code move_to position",
        "<|im_start|>system You control a robot arm.<|im_end|>",
    ] * 20
    trainer = trainers.BpeTrainer(
        vocab_size=300,
        special_tokens=["<unk>", "<|im_start|>", "<|im_end|>", "<pad>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tok.train_from_iterator(corpus, trainer)
    from tokenizers import decoders

    tok.decoder = decoders.ByteLevel()
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, unk_token="<unk>", eos_token="<|im_end|>", pad_token="<pad>"
    )
    fast.chat_template = CHAT_TEMPLATE
    return fast


@pytest.fixture(scope="module", params=["qwen2", "qwen3"])
def tiny_folder(request, tmp_path_factory):
    torch.set_num_threads(1)
    torch.manual_seed(0)
    tok = _tokenizer()
    common = dict(
        vocab_size=len(tok),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=2048,
        eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id,
    )
    if request.param == "qwen2":
        model = transformers.Qwen2ForCausalLM(transformers.Qwen2Config(**common))
    else:
        model = transformers.Qwen3ForCausalLM(transformers.Qwen3Config(head_dim=8, **common))
    folder = tmp_path_factory.mktemp(request.param)
    model.save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


MESSAGES = [
    {"role": "system", "content": "You control a robot arm."},
    {
        "role": "user",
        "content": [
            {"type": "text", "text": "Observe the scene."},
            {"type": "image_url", "image_url": {"url": "data:,"}},
        ],
    },
]


def test_tiny_model_completes_with_usage_and_template(tiny_folder):
    chat = TransformersChat(tiny_folder, device="cpu", max_new_tokens=12, seed=1)
    prompt = chat.render(MESSAGES)
    assert '"name": "python"' in prompt  # the template rendered the tool schema
    assert "[image attached" in prompt and prompt.endswith("<|im_start|>assistant\n")
    out = chat.complete(MESSAGES)
    n_prompt = len(chat.tokenizer(prompt, add_special_tokens=False)["input_ids"])
    assert out.usage.prompt_tokens == n_prompt
    assert 1 <= out.usage.completion_tokens <= 12
    assert out.finish_reason in ("stop", "length")
    again = TransformersChat(tiny_folder, device="cpu", max_new_tokens=12, seed=1).complete(
        MESSAGES
    )
    assert again.content == out.content  # seeded sampling is reproducible
    assert chat.usage_total.completion_tokens == out.usage.completion_tokens
    parse_reply(out.content)  # whatever a random model says parses without raising


def test_template_without_tools_gets_a_tool_note(tiny_folder, tmp_path):
    chat = TransformersChat(tiny_folder, device="cpu", max_new_tokens=4, temperature=0)
    chat.tokenizer.chat_template = (
        CHAT_TEMPLATE.split("{% for m in")[0].replace("{% if tools %}", "{% if false %}")
        + CHAT_TEMPLATE[CHAT_TEMPLATE.index("{% for m in") :]
    )
    prompt = chat.render(MESSAGES, tools=[PYTHON_TOOL])
    assert "You have one tool, `python`" in prompt
    assert prompt.index("You have one tool") > prompt.index("You control a robot arm.")
    assert chat.complete(MESSAGES).usage.completion_tokens >= 1


def test_flatten_content():
    assert flatten_content(None) == ""
    assert flatten_content("abc") == "abc"
    assert flatten_content([{"type": "text", "text": "a"}, {"type": "image", "image": "x"}]) == (
        "a\n[image attached; this model cannot see images]"
    )
    assert json.dumps(PYTHON_TOOL)  # schema is JSON


@pytest.mark.slow
def test_packaged_smollm2_writes_code():
    torch.set_num_threads(2)
    folder, gguf = smollm2_folder()
    chat = TransformersChat(folder, gguf_file=gguf, device="cpu", max_new_tokens=48, temperature=0)
    out = chat.complete(
        [{"role": "user", "content": "Write Python that prints 2+2, in a ```python block."}]
    )
    assert out.usage.completion_tokens > 5
    reply = parse_reply(out.content)
    assert reply.code_cells and "print" in reply.code_cells[0]
