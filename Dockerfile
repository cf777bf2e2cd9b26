# mcp-bridge image: the bridge on a Node runtime, so it can serve
# node-based MCP servers through npx. docs/docker.md.
#
#   docker build -t mcp-bridge .
#   docker run --init -p 127.0.0.1:8080:8080 -e MCP_TOKEN=... \
#     -e MCP_BRIDGE_TOKEN_ENVS=MCP_TOKEN \
#     mcp-bridge -- npx -y @modelcontextprotocol/server-everything@2026.8.31

FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/mcp-bridge ./cmd/mcp-bridge

FROM node:22-slim
COPY --from=build /out/mcp-bridge /usr/local/bin/mcp-bridge
# Inside the container the bridge listens on every interface: the
# container network is the boundary, not the loopback address. Publish
# the port on the host's loopback (-p 127.0.0.1:8080:8080) or behind a
# proxy, and require a token.
ENV MCP_BRIDGE_HOST=0.0.0.0 \
    MCP_BRIDGE_PORT=8080
EXPOSE 8080
# The image's unprivileged "node" user; npx caches packages in its home.
USER node
WORKDIR /home/node
# node:22-slim has no curl: Node's own fetch probes /healthz.
HEALTHCHECK --interval=10s --timeout=3s --start-period=5s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.MCP_BRIDGE_PORT || 8080) + '/healthz').then(r => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# The bridge stops its children and reaps orphans itself, but as PID 1 it
# is better off behind an init: run with --init (compose: init: true).
ENTRYPOINT ["mcp-bridge"]
