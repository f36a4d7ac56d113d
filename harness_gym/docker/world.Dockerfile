# One world server (WebShop or ALFWorld) in server mode: `--build-arg TARGET=webshop|alfworld`.
# Build context: a directory holding the `harness_gym` package (the repository root, or the
# context `harness_gym.targets.docker` assembles from the installed package).
ARG BASE=harness-gym/base:bookworm
FROM ${BASE}
ARG TARGET
# The harness-gym base already has python3; a stock debian image gets it here.
RUN command -v python3 >/dev/null && python3 -c "import venv, ensurepip" 2>/dev/null \
    || (apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
          python3 python3-venv ca-certificates && rm -rf /var/lib/apt/lists/*)
# The pinned requirements come as wheels in the context (`wheels/`): no index is needed here.
COPY harness_gym/docker/requirements.txt /tmp/requirements.txt
COPY wheels /tmp/wheels
RUN python3 -m venv /opt/venv \
    && /opt/venv/bin/pip install --no-cache-dir --disable-pip-version-check --no-compile --no-index \
         --find-links /tmp/wheels -r /tmp/requirements.txt \
    && rm -rf /tmp/requirements.txt /tmp/wheels \
    && useradd --system --uid 10001 --no-create-home --shell /usr/sbin/nologin harness
COPY harness_gym /opt/harness-gym/harness_gym
ENV PYTHONPATH=/opt/harness-gym PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 \
    HG_TARGET=${TARGET} HG_PORT=8765 HG_IDLE_EXIT=0
USER 10001
EXPOSE 8765
HEALTHCHECK --interval=5s --timeout=3s --start-period=20s --retries=3 \
    CMD /opt/venv/bin/python -c "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:%s/health' % os.environ['HG_PORT'], timeout=2)"
CMD ["/bin/sh", "-c", "exec /opt/venv/bin/python -m harness_gym.benchmarks.${HG_TARGET}.server --host 0.0.0.0 --port ${HG_PORT} --exit-after-idle ${HG_IDLE_EXIT}"]
