"""TransformersVLM (a local transformers folder) end to end with a tiny randomly initialised LLaVA
(CLIP vision tower + Llama text model, BPE tokenizer trained offline, PIL image processor) saved to
a temporary folder: the pointer runs generation on the camera image and the service turns the
random model's unparseable reply into a structured not_detected failure."""

import numpy as np
import pytest
from perception_synth import Box, SynthBackend

from captain_ros.perception import PerceptionService
from captain_ros.perception.vlm_pointer import TransformersVLM, VLMPointer

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytestmark = pytest.mark.learn


@pytest.fixture(scope="module")
def llava_folder(tmp_path_factory):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import (
        LlavaConfig,
        LlavaForConditionalGeneration,
        LlavaProcessor,
        PreTrainedTokenizerFast,
    )
    from transformers.models.llava.image_processing_pil_llava import LlavaImageProcessorPil

    torch.set_num_threads(1)
    torch.manual_seed(0)
    tok = Tokenizer(models.BPE(unk_token=None))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=300,
        special_tokens=["<pad>", "<s>", "</s>", "<image>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tok.train_from_iterator(
        ['Point to the red cube. <point x="10" y="20" alt="cube">cube</point> USER ASSISTANT'] * 10,
        trainer,
    )
    template = (
        "{% for m in messages %}{{ m['role'].upper() }}: {% for c in m['content'] %}"
        "{% if c['type'] == 'image' %}<image>\n{% else %}{{ c['text'] }}{% endif %}"
        "{% endfor %}\n{% endfor %}{% if add_generation_prompt %}ASSISTANT:{% endif %}"
    )
    ftok = PreTrainedTokenizerFast(
        tokenizer_object=tok, eos_token="</s>", pad_token="<pad>", bos_token="<s>"
    )
    proc = LlavaProcessor(
        image_processor=LlavaImageProcessorPil(
            size={"shortest_edge": 28}, crop_size={"height": 28, "width": 28}
        ),
        tokenizer=ftok,
        patch_size=14,
        vision_feature_select_strategy="default",
        chat_template=template,
        num_additional_image_tokens=1,
    )
    cfg = LlavaConfig(
        vision_config=dict(
            model_type="clip_vision_model",
            hidden_size=32,
            intermediate_size=64,
            num_hidden_layers=1,
            num_attention_heads=2,
            image_size=28,
            patch_size=14,
        ),
        text_config=dict(
            model_type="llama",
            vocab_size=len(ftok),
            hidden_size=32,
            intermediate_size=64,
            num_hidden_layers=1,
            num_attention_heads=2,
            num_key_value_heads=1,
            max_position_embeddings=256,
        ),
        image_token_index=ftok.convert_tokens_to_ids("<image>"),
        vision_feature_select_strategy="default",
        vision_feature_layer=-1,
    )
    model = LlavaForConditionalGeneration(cfg)
    model.generation_config.eos_token_id = ftok.eos_token_id
    model.generation_config.pad_token_id = ftok.pad_token_id
    folder = tmp_path_factory.mktemp("tiny_llava")
    model.save_pretrained(folder)
    proc.save_pretrained(folder)
    return folder


def test_local_folder_generates_and_pointer_fails_cleanly_on_junk(llava_folder):
    vlm = TransformersVLM(llava_folder, max_new_tokens=6)
    reply = vlm.generate(np.zeros((40, 60, 3), dtype=np.uint8), "Point to the red cube.")
    assert isinstance(reply, str) and reply  # a real (random) model's decoded tokens
    pointer = VLMPointer(vlm)
    svc = PerceptionService(
        SynthBackend(
            objects=[Box((0.45, 0.0, 0.025), (0.05, 0.05, 0.05), (200, 30, 30))], size_px=64
        ),
        pointer=pointer,
    )
    r = svc.point("red cube")
    assert pointer.last_reply  # the model was asked about the camera image
    # the random model writes no point: a structured failure, never an exception
    assert not r.success and r.failure_category.value == "not_detected"
