# One-command entry points; see README.md.
VENV ?= .venv
PY := $(VENV)/bin/python

.PHONY: setup run test lint bench

$(VENV)/.installed: pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev]'
	touch $@

setup: $(VENV)/.installed

# The main job for now: every reference planner over every shipped problem, scored.
run: setup
	$(VENV)/bin/memorace baselines

test: setup
	$(VENV)/bin/ruff check .
	$(PY) -m pytest

bench: setup
	$(PY) benchmarks/verify_speed.py
	$(PY) benchmarks/planners.py
