# The worqr image of docker-compose.yml: the library, its CLI and deploy/app.py.
FROM python:3.11-slim

ENV PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONPATH=/app

WORKDIR /app
COPY pyproject.toml README.md ./
COPY worqr ./worqr
RUN pip install .
# The compose application, importable through PYTHONPATH (`worqr worker deploy.app:worker`).
COPY deploy ./deploy

RUN useradd --create-home --uid 10001 worqr
USER worqr

CMD ["worqr", "--help"]
