# The release image, built by GoReleaser (.goreleaser.yaml, dockers_v2)
# for linux/amd64 and linux/arm64 from the binaries it has built: its
# build context holds linux/<arch>/mcp-bridge and no source. Everything
# after FROM is the runtime stage of ../Dockerfile, but for the COPY of the
# binary; cmd/mcp-bridge/release_test.go keeps the two the same.

FROM node:22-slim
ARG TARGETPLATFORM
COPY $TARGETPLATFORM/mcp-bridge /usr/local/bin/mcp-bridge
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
