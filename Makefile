# One-command entry points; see README.md.
VENV ?= .venv
PY := $(VENV)/bin/python

.PHONY: setup run baselines test lint bench

$(VENV)/.installed: pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev]'
	touch $@

setup: $(VENV)/.installed

# The main job: the whole service on this machine (SQLite, embedded broker, one
# worker, the shipped problems); prints the organizer token. See scripts/serve.
run: setup
	scripts/serve

# Every reference planner over every shipped problem, scored (10 s per case, so that
# it ends in a few minutes; the problems allow 30 s).
baselines: setup
	$(VENV)/bin/memorace baselines --time-limit 10

test: setup
	$(VENV)/bin/ruff check .
	$(PY) -m pytest

bench: setup
	$(PY) benchmarks/verify_speed.py
	$(PY) benchmarks/planners.py
	$(PY) benchmarks/offload_speed.py
	$(PY) benchmarks/sandbox_overhead.py

# Sandbox images for the docker sandbox (memorace/base:bookworm, memorace/runner:latest);
# needs Docker, and root with debootstrap for the base. See docker/README.md.
.PHONY: images
images:
	scripts/build-images
