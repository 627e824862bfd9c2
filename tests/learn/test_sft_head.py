"""The CPU trainer's LM head: logits at the supervised positions only, against trl's fused head
(which scores every position there). Same loss, same LoRA gradients, and a micro-batch with no
supervised token still trains (a differentiable zero)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("trl")
pytest.importorskip("peft")

from sft_fixtures import episode_history, make_row, save_tiny, tiny_sft_options, write_rows  # noqa: E402

from captain_ros.learn.collate import PackedCollator  # noqa: E402
from captain_ros.learn.sft import build_trainer, prepare  # noqa: E402
from captain_ros.learn.tokenize import IGNORE  # noqa: E402
from captain_ros.learn.trainer import kept_head, supervised  # noqa: E402

pytestmark = pytest.mark.learn


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    torch.set_num_threads(1)
    tmp = tmp_path_factory.mktemp("head")
    base = save_tiny(tmp / "base", "qwen2", "smol")
    rows = [make_row(episode_history(3), [1.0, 0.0, 2.0], seed=1), make_row(episode_history(2))]
    write_rows(tmp / "data", rows)
    opts = tiny_sft_options(tmp, base)
    prep = prepare(opts, tmp / "out")
    trainer, _ = build_trainer(opts, prep, tmp / "out", "cpu", False)
    # LoRA B starts at zero; move it so the adapter's gradients are not trivially related
    with torch.no_grad():
        for name, p in trainer.model.named_parameters():
            if "lora_B" in name:
                p.normal_(0, 0.02, generator=torch.Generator().manual_seed(len(name)))
    return trainer, prep


def _batch(prep):
    feats = [
        {"input_ids": list(s.input_ids), "labels": list(s.labels), "weights": list(s.weights)}
        for s in prep["train"]
    ]
    return PackedCollator(lengths=False)(feats[:1])


def _lora_grads(model):
    return {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}


def test_kept_head_gives_the_fused_heads_loss_and_gradients(trained):
    trainer, prep = trained
    model = trainer.model
    model.eval()  # no LoRA dropout: both passes see the same network; gradients still flow
    batch = _batch(prep)
    weights = batch["weights"]
    mask = supervised(batch["labels"], weights)
    assert 0 < int(mask.sum()) < mask.numel() // 2  # a real subset of positions is kept

    model.zero_grad()
    loss = trainer.compute_loss(model, dict(batch))  # the CPU path: kept logits
    loss.backward()
    kept = _lora_grads(model)

    model.zero_grad()
    fused = model(
        input_ids=batch["input_ids"], labels=batch["labels"], use_cache=False, fused_lm_head=True
    )
    reference = -(fused.log_probs * weights[:, 1:] * mask).sum() / mask.sum()
    reference.backward()
    ref = _lora_grads(model)

    assert float(loss.detach()) == pytest.approx(float(reference.detach()), rel=1e-5)
    assert kept.keys() == ref.keys() and len(kept) > 10
    for name, g in kept.items():
        assert torch.allclose(g, ref[name], rtol=1e-4, atol=1e-7), name
    assert max(float(g.abs().max()) for g in kept.values()) > 0


def test_kept_head_keeps_only_supervised_positions_and_an_empty_batch_trains(trained):
    trainer, prep = trained
    model = trainer.model
    batch = _batch(prep)
    mask = supervised(batch["labels"], batch["weights"])
    inputs = {k: v for k, v in batch.items() if k != "weights"}
    outputs, log_probs, is_top1, keep = kept_head(model, inputs, mask)
    assert keep.tolist() == mask[0].nonzero().squeeze(-1).tolist()
    assert log_probs.shape == is_top1.shape == (1, len(keep))
    assert outputs.logits is None and bool((log_probs <= 0).all())

    silent = dict(batch)
    silent["labels"] = torch.full_like(batch["labels"], IGNORE)
    model.zero_grad()
    loss = trainer.compute_loss(model, silent)
    loss.backward()
    assert float(loss) == 0.0
