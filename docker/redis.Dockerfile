# Redis from Debian's package, for hosts that cannot pull redis:7 from a registry
# (MEMORACE_REDIS_IMAGE=memorace/redis:bookworm; scripts/build-service-images builds
# it with `--network host`, for the Debian mirror). Same interface as the official
# image: `redis-server ARGS`, data in /data, `redis-cli` for the health check.
ARG BASE=memorace/base:bookworm
FROM ${BASE}
USER root
RUN set -eu; export DEBIAN_FRONTEND=noninteractive; \
    apt-get update && apt-get install -y --no-install-recommends redis-server && \
    rm -rf /var/lib/apt/lists/*; \
    mkdir -p /data && chown redis:redis /data && chmod 0750 /data
WORKDIR /data
USER redis
EXPOSE 6379
# As the official image: reachable from the stack's network (protected mode off,
# listening on every address); nothing outside that network can reach it.
CMD ["redis-server", "--protected-mode", "no", "--bind", "0.0.0.0"]
