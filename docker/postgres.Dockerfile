# PostgreSQL 15 from Debian's packages, for hosts that cannot pull postgres:15 from a
# registry (MEMORACE_POSTGRES_IMAGE=memorace/postgres:bookworm; built by
# scripts/build-service-images with `--network host`, for the Debian mirror).
# The official image's interface as far as docker-compose.yml uses it:
# POSTGRES_USER / POSTGRES_PASSWORD / POSTGRES_DB make the cluster on the first
# start, data in /var/lib/postgresql/data, `pg_isready` for the health check.
ARG BASE=memorace/base:bookworm
FROM ${BASE}
USER root
RUN set -eu; export DEBIAN_FRONTEND=noninteractive; \
    apt-get update && apt-get install -y --no-install-recommends postgresql-15 && \
    rm -rf /var/lib/apt/lists/*; \
    mkdir -p /var/lib/postgresql/data /run/postgresql; \
    chown postgres:postgres /var/lib/postgresql/data /run/postgresql; \
    chmod 0700 /var/lib/postgresql/data
COPY postgres-entrypoint.sh /usr/local/bin/postgres-entrypoint
ENV PATH=/usr/lib/postgresql/15/bin:$PATH PGDATA=/var/lib/postgresql/data
USER postgres
EXPOSE 5432
STOPSIGNAL SIGINT
ENTRYPOINT ["postgres-entrypoint"]
CMD ["postgres"]
