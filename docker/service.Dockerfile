# MemoRace service image: the API (uvicorn), the workers and beat (Celery) run from it.
#
#   scripts/build-service-images             # wheels on the host, then this build
#   scripts/build-service-images --gpu       # memorace/service:gpu (EXTRAS=gpu: cupy)
#
# BASE is any Debian-based image with Python >= 3.11 (default: memorace/base:bookworm,
# made from Debian packages by scripts/build-images, so no registry is needed). The
# Python packages come from build/wheels, which scripts/build-service-images fills
# with `pip wheel` on the host (no index needed inside the build); with an index
# reachable from the build, pip fetches whatever is missing there.
#
# The image runs as the unprivileged user `memorace` (uid/gid 10002). A worker
# starts planner sandboxes through the host's Docker engine (docker-compose.yml
# mounts the socket and adds its group); the planners themselves run in
# memorace/runner.
ARG BASE=memorace/base:bookworm
FROM ${BASE}
ARG EXTRAS=""
USER root

# Only when the base lacks venv (memorace/base has python3 but not python3-venv):
# needs a Debian mirror, hence `--network host` in scripts/build-service-images.
RUN set -eu; export DEBIAN_FRONTEND=noninteractive; \
    if ! python3 -c 'import venv, ensurepip' 2>/dev/null; then \
        apt-get update && apt-get install -y --no-install-recommends python3-venv && \
        rm -rf /var/lib/apt/lists/*; \
    fi; \
    groupadd --gid 10002 memorace; \
    useradd --uid 10002 --gid 10002 --no-create-home --home-dir /var/lib/memorace \
        --shell /usr/sbin/nologin --no-log-init memorace

# Dependencies first (their own layer: a source change rebuilds in seconds). The
# wildcard lets the build go on without build/wheels (pip then needs an index); with
# wheels there, no index is asked (fast, and the same packages on every build).
COPY pyproject.toml build/wheel[s] /wheels/
RUN set -eu; python3 -m venv /venv; \
    python3 -c 'import sys, tomllib; p = tomllib.load(open("/wheels/pyproject.toml", "rb"))["project"]; \
extras = [e for e in sys.argv[1].split(",") if e]; \
print("\n".join(["setuptools>=68"] + p["dependencies"] + [d for e in extras for d in p["optional-dependencies"][e]]))' \
        "$EXTRAS" >/wheels/requirements.txt; \
    index=""; if ls /wheels/*.whl >/dev/null 2>&1; then index=--no-index; fi; \
    /venv/bin/pip install --no-cache-dir --disable-pip-version-check $index --find-links /wheels \
        -r /wheels/requirements.txt; \
    rm -rf /wheels

WORKDIR /app
COPY README.md pyproject.toml ./
COPY judge ./judge
COPY api ./api
COPY worker ./worker
COPY client ./client
COPY problems ./problems
COPY reference_solutions ./reference_solutions
# The project itself (setuptools is in the venv: no index needed). /app stays the
# working directory, so the source tree and the installed package are the same code.
RUN /venv/bin/pip install --no-cache-dir --disable-pip-version-check --no-deps --no-index \
        --no-build-isolation . && rm -rf build ./*.egg-info

ENV PATH=/venv/bin:$PATH MEMORACE_DATA_DIR=/var/lib/memorace PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1
USER memorace
EXPOSE 8000
CMD ["sh", "-c", "python -m api.bootstrap --token-file \"$MEMORACE_DATA_DIR/admin.token\" && exec uvicorn api.app:create_app --factory --host 0.0.0.0 --port 8000 --workers \"${MEMORACE_API_PROCESSES:-$(nproc)}\" --no-access-log $(if [ -n \"$MEMORACE_FORWARDED_ALLOW_IPS\" ]; then echo --proxy-headers --forwarded-allow-ips \"$MEMORACE_FORWARDED_ALLOW_IPS\"; else echo --no-proxy-headers; fi)"]
