# MemoRace runner: the sandbox image in which contestants' planners run.
#
# Built by scripts/build-images (`make images`). BASE is any image that has
# python3 with numpy, g++ (C++20), coreutils' timeout and util-linux's
# prlimit; the build fails below if one is missing. The default base is made
# locally from Debian packages (debootstrap + docker import), so the build
# needs no registry and no network (it runs with --network none).
#
# The judge (DESIGN.md "Sandboxes") starts one container per submission per
# judging and runs each case with `docker exec`, with no network, a read-only
# root, all capabilities dropped and no-new-privileges; it mounts the case
# read-only at /case, the submission read-only at /submission, and tmpfs at
# /out and /tmp (the latter with `exec`, for compiled planners).
#
# This image holds no judge code, no problem data and no secrets: the build
# context is docker/ alone and nothing is copied into the image.

ARG BASE=memorace/base:bookworm
FROM ${BASE}

# Re-declared so that the LABEL below can name the base.
ARG BASE

LABEL org.opencontainers.image.title="memorace-runner" \
      org.opencontainers.image.description="MemoRace planner sandbox: runs one contestant's memory planner (Python 3 + numpy, or C++ built with g++) on judge-mounted cases; holds no judge code, problem data or secrets" \
      org.opencontainers.image.base.name="${BASE}" \
      org.memorace.role="planner-sandbox" \
      org.memorace.user="planner (uid 10001, gid 10001)" \
      org.memorace.mounts="/case ro, /submission ro, /out tmpfs, /tmp tmpfs (exec)"

USER root

# The planner user: fixed uid/gid (the judge passes --user 10001), no password,
# no login shell, home /work (the judge mounts a tmpfs there, restored to the
# state right after the build before each case; see docker/README.md).
# /case and /submission are root-owned mount points (mounted read-only over).
# /out is mode 1777 like /tmp: Docker's `--tmpfs /out` takes the mode of the
# image's directory but makes root its owner, so only a world-writable /out is
# writable by the planner there unless the judge adds uid=10001,gid=10001 to
# the tmpfs options (it should). /work belongs to the planner (writable only
# when the root is not read-only).
RUN set -eu; \
    if getent passwd 10001 >/dev/null || getent group 10001 >/dev/null; then \
        echo "uid/gid 10001 is already taken in ${BASE}" >&2; exit 1; \
    fi; \
    groupadd --gid 10001 planner; \
    useradd --uid 10001 --gid 10001 --no-create-home --home-dir /work \
        --shell /usr/sbin/nologin --no-log-init planner; \
    mkdir -p /case /submission /out /work; \
    chown root:root /case /submission && chmod 0755 /case /submission; \
    chown planner:planner /out /work && chmod 1777 /out && chmod 0755 /work; \
    chmod 1777 /tmp

ENV MEMORACE_CASE_DIR=/case \
    MEMORACE_OUT_DIR=/out \
    HOME=/work \
    PYTHONDONTWRITEBYTECODE=1

WORKDIR /work
USER planner

# Fail the build, not the first judging, if the base lacks what the judge and
# the planners rely on. Runs as the planner user.
RUN set -eu; \
    test "$(id -u):$(id -g)" = "10001:10001"; \
    python3 -c 'import numpy; assert int(numpy.arange(4).sum()) == 6, numpy.__version__'; \
    g++ --version >/dev/null; \
    test -x /usr/bin/timeout; \
    command -v prlimit >/dev/null; \
    printf 'int main(){}\n' | g++ -O2 -std=c++20 -x c++ -o /tmp/probe - && /tmp/probe && rm -f /tmp/probe

# The container only idles; each case is a `docker exec`. It keeps no state
# worth a graceful stop, so `docker stop` kills at once (sleep as PID 1 would
# ignore SIGTERM and hold the stop for its whole timeout). The judge should
# start it with --init so that orphans of exec'd planners are reaped.
STOPSIGNAL SIGKILL
CMD ["sleep", "infinity"]
