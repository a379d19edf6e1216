#!/usr/bin/env bash
# Make sure the Postgres and Redis the tests use (127.0.0.1:5432 and :6379) are up,
# starting the local Debian services if they are installed but stopped.
set -euo pipefail

postgres_up() { pg_isready -q -h 127.0.0.1 -p 5432 2>/dev/null; }
redis_up() { redis-cli -h 127.0.0.1 -p 6379 ping 2>/dev/null | grep -q PONG; }
wait_for() { for _ in $(seq 60); do "$1" && return 0; sleep 0.5; done; return 1; }

if ! postgres_up; then
    if command -v pg_ctlcluster >/dev/null 2>&1; then
        echo "starting postgres ..."
        pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -n1)" main start || true
    fi
    wait_for postgres_up || { echo "Postgres is not reachable on 127.0.0.1:5432 (try: docker compose up -d postgres)" >&2; exit 1; }
fi
if ! redis_up; then
    if command -v redis-server >/dev/null 2>&1; then
        echo "starting redis ..."
        mkdir -p /var/lib/redis /var/log/redis
        redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no \
            --dir /var/lib/redis --logfile /var/log/redis/ci.log
    fi
    wait_for redis_up || { echo "Redis is not reachable on 127.0.0.1:6379 (try: docker compose up -d redis)" >&2; exit 1; }
fi
echo "postgres and redis are up"
