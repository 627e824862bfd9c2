"""The learning layer: datasets, SFT, the simulator critic, per-request credit, RL.

The only product layer that imports torch, transformers, peft or trl (RE-0 and RE-OPD, which build
on it, are research: :mod:`captain_ros.research.re0`). ``import captain_ros.learn`` stays light:
heavy libraries are imported by the submodules that need them. The pure-numpy parts
(:mod:`captain_ros.learn.credit`, :mod:`captain_ros.learn.episodes`,
:mod:`captain_ros.learn.critic.metrics`) import no torch at all.

- :mod:`captain_ros.learn.data`: ``captain learn dataset`` (episodes and bags -> rows, torch-free);
- :mod:`captain_ros.learn.rows`: dataset rows, validated;
- :mod:`captain_ros.learn.tokenize`: rows -> token sequences with assistant-only labels and
  per-turn weights, rendered by the deployment renderer, split at turn boundaries;
- :mod:`captain_ros.learn.collate` / :mod:`captain_ros.learn.trainer`: padding-free batches and a
  trl ``SFTTrainer`` whose loss honours the weights;
- :mod:`captain_ros.learn.sft`: ``captain learn sft`` end to end (options, training, saving);
- :mod:`captain_ros.learn.models`: base model folders (the packaged SmolLM2, or a path).
"""
