#!/usr/bin/env bash
# The whole test suite, on a fresh machine with Go, Node and npm: installs
# the pinned test peers (testdata/node/package-lock.json: the MCP
# conformance suite, the TypeScript SDK v1 and v2 clients, server-everything and a Node 22
# binary for the conformance CLI, playwright-core), HAProxy, nginx and Chromium,
# checks formatting and vet, and runs every test with the race detector.
set -euo pipefail
cd "$(dirname "$0")"

echo "== haproxy (Debian package: the replicas-behind-a-load-balancer test)"
command -v haproxy || (apt-get update && apt-get install -y haproxy)

echo "== nginx (Debian package: SSE through a buffering reverse proxy)"
command -v nginx >/dev/null || (apt-get update && apt-get install -y nginx)

echo "== chromium (Debian package: the browser test, driven by playwright-core)"
[ -x /usr/bin/chromium ] || (apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y chromium)

echo "== npm ci (testdata/node)"
npm ci --prefix testdata/node --no-audit --no-fund --loglevel=error

echo "== gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go'))
if [ -n "$unformatted" ]; then
  echo "gofmt would change:"; echo "$unformatted"; exit 1
fi

echo "== go vet"
go vet ./...

echo "== go test -race"
go test -race -count=1 -timeout 40m ./...
