# The CleverAgents backend over HTTP. TLS belongs to the reverse proxy in front of it
# (docs/deploy.md); inside the container the server listens on all interfaces.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    CLEVERAGENTS_WORKSPACE=/workspace

WORKDIR /app
COPY pyproject.toml README.md ./
COPY server ./server
RUN pip install ".[http,postgresql]" \
    && useradd --create-home --uid 10001 agents \
    && mkdir -p /workspace \
    && chown agents /workspace

USER agents
WORKDIR /workspace
VOLUME ["/workspace"]
EXPOSE 8000

# Secrets come from the environment: CLEVERAGENTS_AUTH_TOKENS and/or CLEVERAGENTS_API_KEYS
# (comma-separated). Without either, the server makes a token at each start and prints it
# in the container's log. Behind a proxy, add --public-url (its host is then served).
CMD ["agents", "serve", "--http", "--host", "0.0.0.0", "--port", "8000", "--proxy-headers", "--forwarded-allow-ips", "*"]
