#!/usr/bin/env bash
# Install (Debian), start and provision a MariaDB server for the MySQL-marked tests.
#
# Idempotent, and tested in its three starting states: nothing (no package, no datadir:
# apt-get install, mariadb-install-db, start, create the user), an existing datadir with the
# server stopped (start it), and a running server (reuse it). Root talks to the server only
# through the unix socket: a fresh datadir has no root account reachable over TCP.
# Prints the URL (mysql://hg:hg@127.0.0.1:3306) on stdout; everything else goes to stderr.
# Called (URL=$(.ci/mariadb.sh)) or sourced (then it also exports HARNESS_GYM_MYSQL_URL).
# No systemd: the server runs in the background, logging to /tmp/mariadb.log.

_hg_mariadb_main() {
    local host=127.0.0.1 port=3306 user=hg password=hg
    local sudo=""
    if [ "$(id -u)" != "0" ] && command -v sudo >/dev/null 2>&1; then sudo="sudo"; fi

    if ! command -v mariadbd >/dev/null 2>&1 && ! command -v mysqld >/dev/null 2>&1; then
        echo "mariadb.sh: installing mariadb-server" >&2
        $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2 || return 1
        $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq mariadb-server mariadb-client >&2 || return 1
    fi
    local server client
    server=$(command -v mariadbd || command -v mysqld)
    client=$(command -v mariadb || command -v mysql)
    local admin
    admin=$(command -v mariadb-admin || command -v mysqladmin)

    local socket=/run/mysqld/mysqld.sock
    # Is a server answering? Root's own account is root@localhost through the unix socket
    # (Debian's unix_socket auth); over TCP a fresh server refuses root ("Host '127.0.0.1' is
    # not allowed to connect", exit 1, during the TLS handshake), which still means it is up.
    _hg_mariadb_up() {
        $sudo "$admin" --protocol=socket --socket="$socket" -u root ping >/dev/null 2>&1 && return 0
        local out
        out=$("$admin" --protocol=tcp -h "$host" -P "$port" --connect-timeout=2 ping 2>&1) && return 0
        case "$out" in
            *"is not allowed to connect"*|*"Access denied"*) return 0 ;;
        esac
        return 1
    }

    if ! _hg_mariadb_up; then
        $sudo mkdir -p /run/mysqld /var/lib/mysql
        $sudo chown mysql:mysql /run/mysqld /var/lib/mysql 2>/dev/null || true
        if [ ! -d /var/lib/mysql/mysql ]; then
            echo "mariadb.sh: initialising /var/lib/mysql" >&2
            $sudo "$(command -v mariadb-install-db || command -v mysql_install_db)" \
                --user=mysql --datadir=/var/lib/mysql >&2 || return 1
        fi
        echo "mariadb.sh: starting $server on $host:$port" >&2
        # a test server: no reverse DNS per connection (saves ~25 ms a connect), no fsync per commit
        $sudo nohup "$server" --user=mysql --datadir=/var/lib/mysql --bind-address="$host" \
            --port="$port" --socket="$socket" --skip-name-resolve \
            --innodb-flush-log-at-trx-commit=2 >/tmp/mariadb.log 2>&1 &
        local waited=0
        until _hg_mariadb_up; do
            sleep 1
            waited=$((waited + 1))
            if [ "$waited" -ge 60 ]; then
                echo "mariadb.sh: server did not answer within 60 s; see /tmp/mariadb.log" >&2
                tail -n 20 /tmp/mariadb.log >&2
                return 1
            fi
        done
    fi

    # ping succeeds even when access is denied, so check the user with a real query over TCP
    if ! "$client" --protocol=tcp -h "$host" -P "$port" -u "$user" -p"$password" -e "SELECT 1" >/dev/null 2>&1; then
        echo "mariadb.sh: creating user $user" >&2
        # as root through the unix socket: root@127.0.0.1 does not exist on a fresh datadir
        $sudo "$client" --protocol=socket --socket="$socket" -u root <<SQL || return 1
CREATE USER IF NOT EXISTS '$user'@'%' IDENTIFIED BY '$password';
CREATE USER IF NOT EXISTS '$user'@'localhost' IDENTIFIED BY '$password';
GRANT ALL PRIVILEGES ON *.* TO '$user'@'%' WITH GRANT OPTION;
GRANT ALL PRIVILEGES ON *.* TO '$user'@'localhost' WITH GRANT OPTION;
FLUSH PRIVILEGES;
SQL
        "$client" --protocol=tcp -h "$host" -P "$port" -u "$user" -p"$password" -e "SELECT 1" >/dev/null || {
            echo "mariadb.sh: user $user still cannot connect over TCP to $host:$port" >&2
            return 1
        }
    fi
    HARNESS_GYM_MYSQL_URL="mysql://$user:$password@$host:$port"
    echo "$HARNESS_GYM_MYSQL_URL"
}

if [ "${BASH_SOURCE[0]}" != "$0" ]; then
    # sourced: export the URL for the caller, never exit its shell
    _hg_mariadb_main && export HARNESS_GYM_MYSQL_URL
else
    _hg_mariadb_main || exit 1
fi
