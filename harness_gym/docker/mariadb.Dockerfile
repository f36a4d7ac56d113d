# DBBench's database: MariaDB from Debian (MySQL 8-compatible for DBBench's SQL), a `hg`/`hg`
# account that may create one database per episode, initialised at build time.
ARG BASE=harness-gym/base:bookworm
FROM ${BASE}
RUN apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends mariadb-server \
    && rm -rf /var/lib/apt/lists/* /var/lib/mysql/* /usr/share/doc/* /usr/share/man/*
COPY harness_gym/docker/mariadb-entrypoint.sh /usr/local/bin/hg-mariadb
RUN chmod 0755 /usr/local/bin/hg-mariadb \
    && mkdir -p /run/mysqld && chown mysql:mysql /run/mysqld \
    && mariadb-install-db --user=mysql --datadir=/var/lib/mysql --skip-test-db >/dev/null \
    && (mariadbd --user=mysql --datadir=/var/lib/mysql --skip-networking --socket=/run/mysqld/init.sock &) \
    && for i in $(seq 120); do mariadb --socket=/run/mysqld/init.sock -e 'SELECT 1' >/dev/null 2>&1 && break; sleep 0.5; done \
    && mariadb --socket=/run/mysqld/init.sock -e "CREATE USER 'hg'@'%' IDENTIFIED BY 'hg'; \
         GRANT ALL PRIVILEGES ON *.* TO 'hg'@'%'; \
         GRANT PROCESS, SHUTDOWN ON *.* TO 'mysql'@'localhost'; FLUSH PRIVILEGES;" \
    && mariadb-admin --socket=/run/mysqld/init.sock shutdown \
    && for i in $(seq 120); do [ -e /run/mysqld/init.sock ] || break; sleep 0.5; done
ENV HG_PORT=3306 HG_IDLE_EXIT=0
USER mysql
EXPOSE 3306
# Healthy once the entrypoint has answered a query on the socket; the check itself does not
# connect (a connection would count as activity for the idle watchdog).
HEALTHCHECK --interval=5s --timeout=3s --start-period=20s --retries=3 \
    CMD test -S /run/mysqld/mysqld.sock && test -e /run/mysqld/ready
CMD ["/usr/local/bin/hg-mariadb"]
