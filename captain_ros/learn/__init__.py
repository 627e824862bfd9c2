"""The learning layer: supervised fine-tuning of a teacher-free student (and, beside it, the
critic and RL). It is the only layer that imports torch, transformers, peft and trl, and it does
so inside the modules that need them, so ``import captain_ros.learn`` stays light.

- :mod:`captain_ros.learn.rows`: dataset rows (``captain learn dataset`` output), validated;
- :mod:`captain_ros.learn.tokenize`: rows -> token sequences with assistant-only labels and
  per-turn weights, rendered by the deployment renderer, split at turn boundaries;
- :mod:`captain_ros.learn.collate` / :mod:`captain_ros.learn.trainer`: padding-free batches and a
  trl ``SFTTrainer`` whose loss honours the weights;
- :mod:`captain_ros.learn.sft`: ``captain learn sft`` end to end (options, training, saving);
- :mod:`captain_ros.learn.models`: base model folders (the packaged SmolLM2, or a path).
"""
