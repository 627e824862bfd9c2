"""Episodes in-process, evaluations over seeds (processes or Ray), statistics and plots.

- :class:`captain_ros.evaluation.config.EpisodeConfig`: what one episode is built from (typed,
  validated once; the CLI flags, the ROS node parameters and the workers' plain data map onto it);
- :mod:`captain_ros.evaluation.episode`: the composition root (backend, robot service, setup);
  :func:`~captain_ros.evaluation.episode.run_one`: one episode and its folder;
- :func:`captain_ros.evaluation.runner.evaluate`: many episodes, ``eval.json`` + ``eval.png``;
- :mod:`captain_ros.evaluation.stats`: Wilson score intervals, exact McNemar test;
- :mod:`captain_ros.evaluation.summary`: the episode summary schema, aggregates, paired comparison.
"""

from captain_ros.evaluation.stats import mcnemar, wilson_interval
from captain_ros.evaluation.summary import aggregate, compare
from captain_ros.harness.record.episode_record import EpisodeRecord

__all__ = ["EpisodeRecord", "aggregate", "compare", "mcnemar", "wilson_interval"]
