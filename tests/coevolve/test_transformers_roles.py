"""The roles over the in-process transformers backend (a tiny random Qwen2 built from config):
the plumbing works end to end, and a model that cannot answer the schema is refused before
dispatch, so the run stalls (label G) without charging a transaction."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from captain_ros.research.coevolve.loop import CoEvolveRun  # noqa: E402
from captain_ros.research.coevolve.records import RunConfig  # noqa: E402
from captain_ros.research.coevolve.roles import make_roles  # noqa: E402
from captain_ros.research.coevolve.roles.prompts import SYSTEM  # noqa: E402

pytestmark = pytest.mark.learn

TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


@pytest.fixture(scope="module")
def tiny_folder(tmp_path_factory):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    torch.set_num_threads(1)
    torch.manual_seed(0)
    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    corpus = (
        list(SYSTEM.values()) * 4
        + ['{"robot_a": {"x_m": 0.1, "y_m": -0.73}, "route": {"s_m": 0.0}}'] * 50
    )
    trainer = trainers.BpeTrainer(
        vocab_size=2000,
        special_tokens=["<unk>", "<|im_start|>", "<|im_end|>", "<pad>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tok.train_from_iterator(corpus, trainer)
    tok.decoder = decoders.ByteLevel()
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, unk_token="<unk>", eos_token="<|im_end|>", pad_token="<pad>"
    )
    fast.chat_template = TEMPLATE
    cfg = transformers.Qwen2Config(
        vocab_size=len(fast),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=16384,
        eos_token_id=fast.eos_token_id,
        pad_token_id=fast.pad_token_id,
    )
    folder = tmp_path_factory.mktemp("tiny")
    transformers.Qwen2ForCausalLM(cfg).save_pretrained(folder)
    fast.save_pretrained(folder)
    return folder


def test_tiny_transformers_roles_are_called_and_refused_before_dispatch(tiny_folder, tmp_path):
    roles = make_roles(
        "transformers",
        True,
        {"model_folder": str(tiny_folder), "max_new_tokens": 8, "device": "cpu", "retries": 0},
    )
    try:
        s = CoEvolveRun(RunConfig(seed=5, stall_limit=2), roles, tmp_path).run()
    finally:
        roles.close()
    assert s.label == "G" and s.outcome.charged == 0
    assert s.model_calls == 2 and s.prevalidation_failures == 2
