#!/bin/bash
# measure-tries.sh BIN PORT: four quick tries of server-everything through
# the bridge BIN (three as the Inspector's CLI makes them, one as
# mcp-remote, which leaves a second session), each a TypeScript SDK client
# that ends without DELETE (testdata/node/trynodelete.mjs); then the count
# and memory of the processes under the bridge, 2 s and 72 s later. Linux
# (/proc), from the repository root, after npm ci --prefix testdata/node.
# The sleeps are the measurement's points in time.
BIN=$1; PORT=$2
ND=$(pwd)/testdata/node
$BIN --port $PORT --log-level warn --cwd $ND -- npx --no-install mcp-server-everything 2>/tmp/nc/measure-$PORT.log &
BP=$!
sleep 1
URL=http://127.0.0.1:$PORT/mcp
for mode in "" "" "" abandon; do node $ND/trynodelete.mjs $URL $mode >/dev/null || echo try failed; done
tree() { # descendants of $1
  local kids=$(ps -o pid= --ppid $1)
  for k in $kids; do echo $k; tree $k; done
}
report() {
  local pids=$(tree $BP); local n=0 rss=0 pss=0
  for p in $pids; do
    r=$(awk '/^VmRSS/{print $2}' /proc/$p/status 2>/dev/null); [ -n "$r" ] || continue
    s=$(awk '/^Pss:/{print $2}' /proc/$p/smaps_rollup 2>/dev/null)
    n=$((n+1)); rss=$((rss+r)); pss=$((pss+${s:-0}))
  done
  echo "$1: $n processes under the bridge, RSS $((rss/1024)) MiB, PSS $((pss/1024)) MiB"
}
sleep 2
report "after the 4 tries"
sleep 70
report "70 s later"
kill -TERM $BP; wait $BP
