#!/bin/sh
# Serve MariaDB on $HG_PORT; with HG_IDLE_EXIT > 0, shut down once no client connected for
# that many seconds (this script's own status query is the only connection it ignores; the
# HEALTHCHECK only tests the socket and the ready marker this script writes).
set -eu
mariadbd --datadir=/var/lib/mysql --port="$HG_PORT" --bind-address=0.0.0.0 \
  --socket=/run/mysqld/mysqld.sock --skip-name-resolve --skip-log-bin \
  --innodb-buffer-pool-size=64M --max-connections=500 &
pid=$!
trap 'rm -f /run/mysqld/ready; kill -TERM "$pid" 2>/dev/null' TERM INT
rm -f /run/mysqld/ready
for _ in $(seq 240); do
  if mariadb --socket=/run/mysqld/mysqld.sock -N -e "SELECT 1" >/dev/null 2>&1; then
    touch /run/mysqld/ready
    break
  fi
  kill -0 "$pid" 2>/dev/null || break
  sleep 0.25
done
connections() {
  mariadb --socket=/run/mysqld/mysqld.sock -N -e "SHOW GLOBAL STATUS LIKE 'Connections'" 2>/dev/null | cut -f2
}
last=""
idle=0
while kill -0 "$pid" 2>/dev/null; do
  sleep 5 &
  wait $! || true
  [ "$HG_IDLE_EXIT" -gt 0 ] 2>/dev/null || continue
  now=$(connections || true)
  [ -n "$now" ] || continue
  if [ -n "$last" ] && [ $((now - last)) -le 1 ]; then idle=$((idle + 5)); else idle=0; fi
  last=$now
  if [ "$idle" -ge "$HG_IDLE_EXIT" ]; then
    echo "no client for ${idle}s: shutting down" >&2
    mariadb-admin --socket=/run/mysqld/mysqld.sock shutdown || kill -TERM "$pid"
    break
  fi
done
wait "$pid"
rm -f /run/mysqld/ready
