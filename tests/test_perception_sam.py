"""SamSegmenter with a tiny randomly initialised SamModel built from a config and saved to a
temporary folder (no weights can be downloaded here): loading, point/box prompts, text prompts
chained with pointing, and use inside PerceptionService."""

import numpy as np
import pytest
from perception_synth import Box, SynthBackend

from captain_ros.core.errors import InvalidArgumentError
from captain_ros.perception import DefaultPointer, PerceptionService
from captain_ros.perception.sam import SamSegmenter

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
pytestmark = pytest.mark.learn


@pytest.fixture(scope="module")
def sam_folder(tmp_path_factory):
    from transformers import SamConfig, SamImageProcessorPil, SamModel
    from transformers.models.sam.configuration_sam import (
        SamMaskDecoderConfig,
        SamPromptEncoderConfig,
        SamVisionConfig,
    )

    torch.set_num_threads(1)
    torch.manual_seed(0)
    vision = SamVisionConfig(
        hidden_size=32,
        output_channels=16,
        num_hidden_layers=2,
        num_attention_heads=2,
        image_size=64,
        patch_size=8,
        mlp_dim=64,
        window_size=4,
        global_attn_indexes=[1],
        num_pos_feats=8,
    )
    prompt = SamPromptEncoderConfig(
        hidden_size=16, image_size=64, patch_size=8, mask_input_channels=4
    )
    decoder = SamMaskDecoderConfig(
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        mlp_dim=32,
        iou_head_hidden_dim=16,
    )
    cfg = SamConfig(
        vision_config=vision.to_dict(),
        prompt_encoder_config=prompt.to_dict(),
        mask_decoder_config=decoder.to_dict(),
    )
    folder = tmp_path_factory.mktemp("tiny_sam")
    SamModel(cfg).save_pretrained(folder)
    SamImageProcessorPil(
        size={"longest_edge": 64}, pad_size={"height": 64, "width": 64}
    ).save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def scene():
    return SynthBackend(
        objects=[Box((0.45, 0.05, 0.025), (0.05, 0.05, 0.05), (200, 30, 30))], size_px=96
    )


def test_point_and_box_prompts_give_full_size_masks(sam_folder, scene):
    frame = scene.capture(["head"])["head"]
    seg = SamSegmenter(sam_folder, num_threads=1)
    by_point = seg.segment(frame, "thing", points=[(40.0, 50.0)])
    by_box = seg.segment(frame, "thing", box=(10, 10, 80, 70))
    for cands in (by_point, by_box):
        assert len(cands) == 1
        c = cands[0]
        assert c.mask.shape == (96, 96) and c.mask.dtype == bool and c.mask.any()
        assert 0.0 <= c.score <= 1.0 and c.label == "thing"
    # the embedding of the same image is computed once and reused
    assert seg._emb_cache is not None and seg._emb_cache[0] is frame.rgb


def test_text_prompt_is_chained_with_pointing(sam_folder, scene):
    frame = scene.capture(["head"])["head"]
    assert SamSegmenter(sam_folder).segment(frame, "red cube") == []  # no pointer: nothing
    seg = SamSegmenter(sam_folder, pointer=DefaultPointer())
    cands = seg.segment(frame, "red cube")
    assert len(cands) == 1 and cands[0].mask.shape == (96, 96)
    assert seg.segment(frame, "purple ball") == []  # the pointer finds nothing


def test_service_with_sam_backend(sam_folder, scene):
    seg = SamSegmenter(sam_folder, pointer=DefaultPointer())
    svc = PerceptionService(scene, segmenter=seg)
    h = svc.observe(["head"]).value["handle"]
    frame = svc.observations.get(h).frame("head")
    r = svc.segment("red cube", h)
    assert r.success, r.message
    det = r.value["detections"][0]
    expected = seg.segment(frame, "red cube")[0].mask  # the service used the SAM mask
    assert det["area_px"] == int(expected.sum()) and det["label"] == "red cube"
    m = svc.mark_point(h, "head", 53, 53, label="cube")
    assert m.success
    clicked = seg.segment(frame, "cube", points=[(53, 53)])[0].mask
    assert clicked[53, 53] and m.value["area_px"] == int(clicked.sum())


def test_missing_folder_is_rejected(tmp_path):
    with pytest.raises(InvalidArgumentError):
        SamSegmenter(tmp_path / "nowhere")


def test_masks_follow_image_size(sam_folder):
    seg = SamSegmenter(sam_folder)
    frame = SynthBackend(objects=[], size_px=80).capture(["head"])["head"]
    c = seg.segment(frame, points=[(5.0, 70.0)])
    assert all(x.mask.shape == (80, 80) for x in c)
    assert np.isfinite([x.score for x in c]).all()
