# One-command entry points; see README.md.
VENV ?= .venv
PY := $(VENV)/bin/python

.PHONY: setup prepare run baselines test lint bench guide

$(VENV)/.installed: pyproject.toml
	@echo "[setup] Python packages into $(VENV) (a minute the first time)"
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev]'
	touch $@

setup: $(VENV)/.installed

# The guides (docs/, Sphinx + MyST) into api/guide/, which the service serves at /guide
# and the wheel carries (Sphinx's doctrees cache goes to build/: not served). Strict: a
# broken link, reference or include fails the build.
guide: setup
	rm -rf api/guide
	$(PY) -m sphinx -W --keep-going -n -q -b dirhtml -d build/guide-doctrees docs api/guide

# The `trace` extra (PyTorch, ~35 s and 5.8 GB) for `memorace trace` and its tests;
# the service never needs it.
$(VENV)/.trace-installed: $(VENV)/.installed
	@echo "[setup] the trace extra (PyTorch) into $(VENV)"
	$(PY) -m pip install -q -e '.[dev,trace]'
	touch $@

# The main job: the whole service on this machine (SQLite, embedded broker, one
# worker, the shipped problems); prints the organizer token. scripts/prepare brings
# what the sandbox needs (root) or says what is missing and which sandbox serves.
run:
	@sandbox=$$(scripts/prepare run) && $(MAKE) -s --no-print-directory setup guide && \
	    MEMORACE_SANDBOX=$${MEMORACE_SANDBOX:-$$sandbox} scripts/serve

# Every reference planner over every shipped problem, scored (10 s per case, so that
# it ends in a few minutes; the problems allow 30 s).
baselines: setup
	$(VENV)/bin/memorace baselines --time-limit 10

prepare:
	scripts/prepare test

# Everything CI does (.ci/run is this target): system packages and services
# (scripts/prepare test; as root it installs and starts them, else it lists what
# is missing), the sandbox images, lint, every test: TEST_PROCESSES pytest processes
# side by side (pytest-xdist, a test file per process at a time), then the tests marked
# `serial` (timing figures, whole-host checks) alone. Both parts run; either failing fails.
TEST_PROCESSES ?= 2
test: prepare
	@$(MAKE) -s --no-print-directory setup $(VENV)/.trace-installed guide
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(PY) -m pytest -n $(TEST_PROCESSES) --dist loadfile -m "not serial"; side=$$?; \
	    $(PY) -m pytest -p no:xdist -m serial; alone=$$?; \
	    echo "[test] side by side: exit $$side; serial: exit $$alone"; \
	    [ $$side -eq 0 ] && [ $$alone -eq 0 ]

bench: setup
	$(PY) benchmarks/verify_speed.py
	$(PY) benchmarks/planners.py
	$(PY) benchmarks/offload_speed.py
	$(PY) benchmarks/sandbox_overhead.py
	$(PY) benchmarks/blob_store.py

# Sandbox images for the docker sandbox (memorace/base:bookworm, memorace/runner:latest);
# needs Docker, and root with debootstrap for the base. See docker/README.md.
.PHONY: images
images:
	scripts/build-images

# Contest-day load test (benchmarks/load, locust): the real service on 127.0.0.1, one
# worker, 20 teams; the mixed profile for 60 s at each client count, on PostgreSQL +
# Redis and on the embedded backend; prints req/s, p50/p95/p99, errors, the API's RSS
# and the most clients within the target. About 12 minutes.
LOAD_CLIENTS ?= 50,100,200,500
LOAD_BACKENDS ?= postgres,embedded
.PHONY: load
load: setup
	$(PY) benchmarks/load/run.py --clients $(LOAD_CLIENTS) --backend $(LOAD_BACKENDS) \
	    $(if $(LOAD_API_PROCESSES),--api-processes $(LOAD_API_PROCESSES))
