# MemoRace service image: the API (uvicorn) and the workers (Celery) run from it.
#
#   docker build -f docker/service.Dockerfile --build-arg BASE=python:3.11-slim -t memorace/service .
#
# BASE is any Debian-based image with Python >= 3.11 (no registry is reachable on
# the build machines of this project, so the default is the locally built
# memorace/base:bookworm plus python3-venv from Debian). Workers start planner
# sandboxes through the host's Docker engine (the socket is mounted by
# docker-compose.yml); the planners themselves run in memorace/runner.
ARG BASE=memorace/base:bookworm
FROM ${BASE}
USER root
RUN set -eu; export DEBIAN_FRONTEND=noninteractive; \
    if ! python3 -c 'import venv, ensurepip' 2>/dev/null; then \
        apt-get update && apt-get install -y --no-install-recommends python3-venv && \
        rm -rf /var/lib/apt/lists/*; \
    fi
WORKDIR /app
COPY pyproject.toml README.md ./
COPY judge ./judge
COPY api ./api
COPY worker ./worker
COPY problems ./problems
COPY reference_solutions ./reference_solutions
RUN python3 -m venv /venv && /venv/bin/pip install --no-cache-dir .
ENV PATH=/venv/bin:$PATH MEMORACE_DATA_DIR=/var/lib/memorace PYTHONUNBUFFERED=1
EXPOSE 8000
CMD ["sh", "-c", "python -m api.bootstrap && exec uvicorn api.app:create_app --factory --host 0.0.0.0 --port 8000 --proxy-headers"]
