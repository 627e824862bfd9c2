# The two commands of the README. Both run scripts/setup.sh first (idempotent, cached).
.PHONY: setup run test lint bench

setup:
	@scripts/setup.sh

run: setup
	.venv/bin/captain up --task pick_place --seed 1000 --policy scripted --out runs/demo --overwrite

test: setup
	.venv/bin/python -m pytest -q

lint: setup
	.venv/bin/ruff check captain_ros tests benchmarks
	.venv/bin/mypy
