"""The learning layer: datasets, SFT, the simulator critic, per-request credit, RL, RE-0.

The only layer that imports torch, transformers, peft or trl. ``import captain_ros.learn`` stays
light: heavy libraries are imported by the submodules that need them. The pure-numpy parts
(:mod:`captain_ros.learn.credit`, :mod:`captain_ros.learn.re0`, :mod:`captain_ros.learn.episodes`,
:mod:`captain_ros.learn.critic.metrics`) import no torch at all.
"""
