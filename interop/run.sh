#!/usr/bin/env bash
# Interop tests with real npm clients (DESIGN.md "Interop"): builds modelexec, starts it on free
# loopback ports over a fresh data directory, makes an account and a key with the operator
# console, and runs `node --test` in interop/ against it. The server is always stopped at exit;
# the exit status is node's (non-zero when any test fails).
#
#   bash interop/run.sh              # every test file in interop/test
#   bash interop/run.sh test/fal.test.mjs
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/.." && pwd)"

tmp="$(mktemp -d "${TMPDIR:-/tmp}/modelexec-interop.XXXXXX")"
server_pid=""
cleanup() {
  status=$?
  if [ -n "$server_pid" ] && kill -0 "$server_pid" 2>/dev/null; then
    kill "$server_pid" 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 "$server_pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$server_pid" 2>/dev/null || true
  fi
  if [ "$status" -ne 0 ] && [ -s "$tmp/server.log" ]; then
    echo "interop: server log (last 40 lines):" >&2
    tail -n 40 "$tmp/server.log" >&2 || true
  fi
  rm -rf "$tmp"
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "interop: npm ci"
(cd "$here" && npm ci --no-audit --no-fund --loglevel=error)

echo "interop: go build"
(cd "$root" && go build -o "$tmp/modelexec" ./cmd/modelexec)
bin="$tmp/modelexec"

# Four distinct free loopback ports (api, queue, sync, operator /metrics), asked of the kernel (bind to port 0, read it back, release).
read -r api_port queue_port sync_port metrics_port < <(node -e '
  const net = require("net");
  const held = [];
  (async () => {
    for (let i = 0; i < 4; i++) {
      const s = net.createServer();
      await new Promise((ok) => s.listen(0, "127.0.0.1", ok));
      held.push(s);
    }
    console.log(held.map((s) => s.address().port).join(" "));
    held.forEach((s) => s.close());
  })();
')

data="$tmp/data"
secret="$(node -e 'console.log(require("crypto").randomBytes(32).toString("hex"))')"
export MODELEXEC_SECRET="$secret"

created_at="$(date -u -d '48 hours ago' +%Y-%m-%dT%H:%M:%SZ 2>/dev/null || date -u -v-48H +%Y-%m-%dT%H:%M:%SZ)"
"$bin" migrate --data "$data" --secret "$secret" >/dev/null
account="$("$bin" accounts create --data "$data" --secret "$secret" --plan pro --credits 100000 --created-at "$created_at" --json |
  node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>console.log(JSON.parse(s).id))')"
key="$("$bin" keys mint --data "$data" --secret "$secret" --account "$account" --json |
  node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>console.log(JSON.parse(s).key))')"

# A self-signed certificate for 127.0.0.1: the fal webhookUrl test receives real deliveries on
# an https receiver of its own. The server trusts it as its only root (SSL_CERT_FILE) and is
# allowed to reach 127.0.0.1 (--webhook-allow-private): webhooks still go over https.
tls_env=()
allow_private=()
if command -v openssl >/dev/null 2>&1; then
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj "/CN=127.0.0.1" \
    -addext "subjectAltName=IP:127.0.0.1" -keyout "$tmp/receiver-key.pem" -out "$tmp/receiver-cert.pem" 2>/dev/null
  export INTEROP_TLS_KEY="$tmp/receiver-key.pem" INTEROP_TLS_CERT="$tmp/receiver-cert.pem"
  tls_env=(env "SSL_CERT_FILE=$tmp/receiver-cert.pem")
  allow_private=(--webhook-allow-private 127.0.0.1)
else
  echo "interop: no openssl: the webhookUrl delivery test is skipped" >&2
fi

# The one origin whose pages may open the studio live route with a ticket (studio.test.mjs).
export INTEROP_STUDIO_ORIGIN="http://studio.interop.test"

echo "interop: starting modelexec (api :$api_port, queue :$queue_port, sync :$sync_port)"
"${tls_env[@]}" "$bin" serve --data "$data" --secret "$secret" --log-level info --log-format json "${allow_private[@]}" \
  --studio-origins "$INTEROP_STUDIO_ORIGIN" \
  --api-addr "127.0.0.1:$api_port" --queue-addr "127.0.0.1:$queue_port" --sync-addr "127.0.0.1:$sync_port" \
  --metrics-addr "127.0.0.1:$metrics_port" --reference-models >"$tmp/server.log" 2>&1 &
server_pid=$!

# What the node tests read (INTEROP_*, so none of it is taken for a modelexec flag: the binary
# reads every MODELEXEC_<FLAG> from the environment). MODELEXEC_SECRET is exported above on purpose.
export INTEROP_API_URL="http://127.0.0.1:$api_port"
export INTEROP_QUEUE_URL="http://127.0.0.1:$queue_port"
export INTEROP_SYNC_URL="http://127.0.0.1:$sync_port"
export INTEROP_METRICS_URL="http://127.0.0.1:$metrics_port/metrics"
export INTEROP_KEY="$key"
export INTEROP_ACCOUNT="$account"
export INTEROP_DATA="$data"
export INTEROP_BIN="$bin"
export INTEROP_SERVER_LOG="$tmp/server.log" # JSON lines at info: the access log is read by metrics.test.mjs
export INTEROP_ROOT="$root"

ready=""
for _ in $(seq 1 100); do
  if ! kill -0 "$server_pid" 2>/dev/null; then
    echo "interop: modelexec exited before it was ready" >&2
    exit 1
  fi
  if node -e '
    const urls = process.argv.slice(1).map((u) => u + "/healthz");
    Promise.all(urls.map((u) => fetch(u).then((r) => { if (!r.ok) throw new Error(u + " " + r.status); })))
      .then(() => process.exit(0), () => process.exit(1));
  ' "$INTEROP_API_URL" "$INTEROP_QUEUE_URL" "$INTEROP_SYNC_URL" 2>/dev/null; then
    ready=1
    break
  fi
  sleep 0.1
done
[ -n "$ready" ] || { echo "interop: modelexec not healthy after 10s" >&2; exit 1; }

# Real webhook deliveries signed with the server's own keys (see interop/webhookdeliveries),
# captured for the jose tests.
echo "interop: capturing webhook deliveries"
export INTEROP_DELIVERIES="$tmp/deliveries.json"
(cd "$root" && INTEROP_DELIVERIES_OUT="$INTEROP_DELIVERIES" go test -count=1 -run '^TestInteropCaptureDeliveries$' ./interop/webhookdeliveries)

echo "interop: node --test"
cd "$here"
if [ "$#" -gt 0 ]; then
  node --test --test-concurrency=1 "$@"
else
  node --test --test-concurrency=1
fi
