"""Research on top of the product: nothing a deployer needs, nothing the product imports.

- :mod:`captain_ros.research.coevolve`: CoEvolve, two humanoids carrying one payload (roles,
  verifier, memory, loop) and its ``captain coevolve`` command (:mod:`.coevolve.cli`);
- :mod:`captain_ros.research.re0`: RE-0 verified repairs and RE-OPD distillation and its
  ``captain learn re0`` command (:mod:`.re0.cli`);
- :mod:`captain_ros.research.ros`: the ROS node that runs CoEvolve over the humanoid controller
  (``captain_coevolve``).

This layer sits above the whole product: it may import any product package (learn, ros,
evaluation, harness, ...) and no product module imports it. The product reaches it only by name:
the CLI's dispatch tables (``captain_ros.cli.main.PASSTHROUGH``, ``captain_ros.cli.learn.COMMANDS``)
and the ROS executables' table (``captain_ros.ros.entry.NODES``) name its command and node modules,
imported when that command or executable runs (``tests/test_layering.py`` checks both rules).
"""
