#!/usr/bin/env bash
# The whole test suite, on a fresh machine with Go, Node and npm: installs
# the pinned test peers (testdata/node/package-lock.json: the MCP
# conformance suite, the TypeScript SDK v1 and v2 clients, server-everything and a Node 22
# binary for the conformance CLI, playwright-core), HAProxy, nginx and Chromium,
# checks formatting and vet, vets and builds every release target (macOS and
# Windows included: linux/amd64, linux/arm64, darwin/amd64, darwin/arm64,
# windows/amd64) and FreeBSD (the portable containment fallback), runs
# every test with the race detector, and fuzzes the message scanner for
# 30 seconds.
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
# included, so the tests compile there too) and built. macOS and Windows
# have no runner here; this is what keeps their code compiling on every
# change. linux/amd64 was vetted above and builds from the same cache.
# GoReleaser's own check of .goreleaser.yaml is TestReleaseConfig (its
# schema): GoReleaser itself takes 11 to 24 minutes to build from the Go
# module proxy on a fresh machine. FreeBSD is no release target, but it is
# where the containment seam's portable fallback (stdio/contain_other.go,
# a process group per child) is built for: it stands for the Unix systems
# without a containment of their own.
echo "== go vet and go build for the release targets, and FreeBSD"
go build ./...
for target in linux/arm64 darwin/amd64 darwin/arm64 windows/amd64 freebsd/amd64; do
  echo "-- $target"
  GOOS=${target%/*} GOARCH=${target#*/} CGO_ENABLED=0 go vet ./...
  GOOS=${target%/*} GOARCH=${target#*/} CGO_ENABLED=0 go build ./...
done

echo "== go test -race"
go test -race -count=1 -timeout 40m ./...

# The race detector's own memory grows with every goroutine ever started,
# so what the bridge gives back is measured without it: 10,000 principals
# leave no state and no memory behind (RSS within 10%).
echo "== memory by principal, without the race detector"
go test -count=1 -run 'TestPrincipalsForgotten' ./bridge/

# The message scanner against encoding/json (bridge/keys_test.go): what the
# bridge reads of a message is what a Go server reads, or the message is
# refused. A short, fixed run on top of the seed corpus the tests above ran.
# The runs are counted in executions, not seconds: Go 1.26's fuzzing
# coordinator can fail a run whose -fuzztime is a duration with a bare
# "context deadline exceeded" as the time runs out on a loaded machine
# (golang/go#75804, fixed in Go 1.27), and a count has no deadline to race.
# 200,000 executions are about 20 s on the 2-core CI machine.
echo "== fuzz FuzzParseBody (200,000 executions)"
go test -run '^$' -fuzz '^FuzzParseBody$' -fuzztime 200000x -fuzzminimizetime 1000x ./bridge
echo "== fuzz FuzzEachMember (150,000 executions)"
go test -run '^$' -fuzz '^FuzzEachMember$' -fuzztime 150000x -fuzzminimizetime 1000x ./aggregate
