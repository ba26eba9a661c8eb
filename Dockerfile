# esxi-storage-exporter container image.
#   docker build -t esxi-storage-exporter .
#   docker run --rm -p 10114:10114 esxi-storage-exporter          # the built-in simulated host
# With podman: `podman build --format docker` (the OCI format has no HEALTHCHECK). Where no registry
# can be reached: --build-arg PYTHON_IMAGE=<a mirrored or local base> (docs/deployment.md).
# Two stages: the first builds a virtualenv with the exporter and its wheels, the second copies only
# that virtualenv onto a slim Python base, so no compiler, pip cache or source tree ships.
# The base is pinned to a patch release; pin its digest too in your own registry if you mirror it.
# Any base with python3, its venv module and apt will do (tests/deployment/test_deploy_image.py: Debian bookworm).
ARG PYTHON_IMAGE=python:3.12.12-slim-trixie

FROM ${PYTHON_IMAGE} AS build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
COPY pyproject.toml README.md ./
COPY exporter ./exporter
# The exporter's own version is pinned by the source tree it is built from; its dependencies by
# the ranges in pyproject.toml. `--help` imports every command: a broken install fails the build.
# pip and setuptools are not needed at run time (24 MB).
RUN python3 -m venv /opt/esxi-storage-exporter \
 && /opt/esxi-storage-exporter/bin/pip install --no-compile . \
 && /opt/esxi-storage-exporter/bin/esxi-storage-exporter --help >/dev/null \
 && /opt/esxi-storage-exporter/bin/pip uninstall --yes --quiet pip setuptools \
 && /opt/esxi-storage-exporter/bin/python -m compileall -q /opt/esxi-storage-exporter/lib

FROM ${PYTHON_IMAGE}
LABEL org.opencontainers.image.title="esxi-storage-exporter" \
      org.opencontainers.image.description="Prometheus exporter for VMware ESXi storage health (esxtop and vSphere)" \
      org.opencontainers.image.licenses="Apache-2.0"
# openssh-client: for live esxtop over SSH (esxtop.ssh); the exporter drives the system ssh client.
# Versions come from the base image's Debian release; pinning them would break on every point release.
# apt's downloaded packages and package caches (80 MB) are removed here: a plain Debian base, unlike
# the python image, does not drop them by itself.
# A fixed system user and group `exporter` (10114:10114) with passwd and group entries, because ssh
# refuses to run for a uid it cannot look up (--user-group would pick the next free system gid).
# hadolint ignore=DL3008
RUN apt-get update \
 && apt-get install -y --no-install-recommends openssh-client \
 && apt-get clean \
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin \
 && groupadd --system --gid 10114 exporter \
 && useradd --system --uid 10114 --gid exporter --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin exporter
COPY --from=build /opt/esxi-storage-exporter /opt/esxi-storage-exporter
ENV PATH=/opt/esxi-storage-exporter/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    ESXI_EXPORTER_WEB_LISTEN_ADDRESS=:10114
USER 10114:10114
EXPOSE 10114
# Probes the port the exporter really listens on, also when ESXI_EXPORTER_WEB_LISTEN_ADDRESS is overridden.
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
  CMD ["python", "-c", "import os, urllib.request; port = os.environ['ESXI_EXPORTER_WEB_LISTEN_ADDRESS'].rpartition(':')[2]; urllib.request.urlopen(f'http://127.0.0.1:{port}/-/healthy', timeout=4)"]
ENTRYPOINT ["esxi-storage-exporter"]
CMD ["serve"]
