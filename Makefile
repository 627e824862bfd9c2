# The two commands of the README. Both run scripts/setup.sh first (idempotent, cached).
.PHONY: setup run test test-fast lint format bench

setup:
	@scripts/setup.sh

run: setup
	.venv/bin/captain up --task pick_place --seed 1000 --policy scripted --out runs/demo --overwrite

test: setup
	.venv/bin/python -m pytest -q

# The fast tier: no ROS, no learning frameworks or models, nothing marked slow (the markers come
# from tests/conftest.py); pytest's last line gives its time, --durations the slowest tests.
test-fast: setup
	.venv/bin/python -m pytest -q -m "not ros and not learn and not slow" --durations=20

# The checks of .pre-commit-config.yaml over the whole tree: ruff, ruff format (every file),
# mypy (pyproject.toml [tool.mypy]).
LINT_PATHS = captain_ros tests benchmarks examples launch

lint: setup
	.venv/bin/ruff check $(LINT_PATHS)
	.venv/bin/ruff format --check $(LINT_PATHS)
	.venv/bin/mypy --cache-dir build/mypy_cache

format: setup
	.venv/bin/ruff format $(LINT_PATHS)
