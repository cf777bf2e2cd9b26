#!/usr/bin/env bash
# The whole test suite, on a fresh machine with Go, Node and npm: installs
# the pinned test peers (testdata/node/package-lock.json: the MCP
# conformance suite, the TypeScript SDK v1 and v2 clients, server-everything and a Node 22
# binary for the conformance CLI, playwright-core), HAProxy, nginx and Chromium,
# checks formatting and vet, vets and builds every release target (macOS and
# Windows included), checks the release configuration with a snapshot
# release, and runs every test with the race detector.
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

# The release targets (.goreleaser.yaml): each is vetted (test files
# included, so the tests compile there too) and built, without cgo and
# with -trimpath as the releases are (so the snapshot build below finds
# every package compiled). macOS and Windows have no runner here; this is
# what keeps their code compiling on every change.
echo "== go vet and go build for the release targets"
for target in linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64; do
  echo "-- $target"
  GOOS=${target%/*} GOARCH=${target#*/} CGO_ENABLED=0 go vet -trimpath ./...
  GOOS=${target%/*} GOARCH=${target#*/} CGO_ENABLED=0 go build -trimpath ./...
done

# GoReleaser from the Go module proxy, pinned, built once per machine into
# the user's cache (the Go build cache makes a rebuild a link). No newer
# release builds with the modules the proxy serves here, and the npm
# package downloads its binary at install time, which CI cannot.
GORELEASER_VERSION=v2.15.1
goreleaser_bin="${XDG_CACHE_HOME:-$HOME/.cache}/mcp-bridge/goreleaser-$GORELEASER_VERSION"
echo "== goreleaser $GORELEASER_VERSION (go install, once)"
[ -x "$goreleaser_bin/goreleaser" ] ||
  GOBIN="$goreleaser_bin" go install "github.com/goreleaser/goreleaser/v2@$GORELEASER_VERSION"

echo "== goreleaser check, and a snapshot release (archives and checksums; no image, nothing published)"
"$goreleaser_bin/goreleaser" check
"$goreleaser_bin/goreleaser" release --snapshot --clean --skip=docker,publish

echo "== go test -race"
go test -race -count=1 -timeout 40m ./...
