#!/usr/bin/env bash
# The deployment test: HAProxy in front of two front processes (--roles api,queue,sync) and two
# workers (--roles worker,webhooks), on one PostgreSQL database, one Redis and one S3-compatible
# bucket, every port a free loopback one. Through the balancer it runs the real npm clients
# (@fal-ai/client's queue flows, the openai client's chat, a signed webhook delivery to a local
# receiver), then load while one front and one worker are killed with SIGKILL, and checks with
# SQL that nothing was lost or charged twice: every accepted job settled, one event per settled
# job, each account's balance the sum of its ledger entries.
#
#   bash deploy/test.sh
#
# Needs haproxy, psql, node, redis and PostgreSQL (MODELEXEC_TEST_POSTGRES, MODELEXEC_TEST_REDIS,
# defaults as in .ci/run), and an S3-compatible server: MODELEXEC_TEST_S3
# (http://ACCESS:SECRET@host:port), else versitygw from the Go bin folder is started here.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/.." && pwd)"
pg_admin="${MODELEXEC_TEST_POSTGRES:-postgres://postgres@127.0.0.1:5432/test?sslmode=disable}"
redis_url="${MODELEXEC_TEST_REDIS:-redis://127.0.0.1:6379/0}"
started=$SECONDS

for tool in haproxy psql node; do
  command -v "$tool" >/dev/null 2>&1 || { echo "deploy: $tool is missing (.ci/run installs haproxy)" >&2; exit 1; }
done

tmp="$(mktemp -d "${TMPDIR:-/tmp}/modelexec-deploy.XXXXXX")"
pids=()
db_name=""
cleanup() {
  status=$?
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
  done
  if [ "$status" -ne 0 ]; then
    for log in "$tmp"/*.log; do
      [ -s "$log" ] || continue
      echo "deploy: $(basename "$log") (last 25 lines):" >&2
      tail -n 25 "$log" >&2 || true
    done
  fi
  if [ -n "$db_name" ]; then psql -q "$pg_admin" -c "DROP DATABASE IF EXISTS $db_name WITH (FORCE)" >/dev/null 2>&1 || true; fi
  rm -rf "$tmp"
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# free_ports N prints N distinct free loopback ports (bound to port 0, read back, released).
free_ports() {
  node -e '
    const net = require("net");
    (async () => {
      const held = [];
      for (let i = 0; i < Number(process.argv[1]); i++) {
        const s = net.createServer();
        await new Promise((ok) => s.listen(0, "127.0.0.1", ok));
        held.push(s);
      }
      console.log(held.map((s) => s.address().port).join(" "));
      held.forEach((s) => s.close());
    })();' "$1"
}

# wait_for WHAT SECONDS COMMAND...: polls COMMAND every 0.1 s until it succeeds.
wait_for() {
  local what="$1" limit="$2"; shift 2
  local end=$((SECONDS + limit))
  until "$@" >/dev/null 2>&1; do
    [ "$SECONDS" -lt "$end" ] || { echo "deploy: $what not within ${limit}s" >&2; return 1; }
    sleep 0.1
  done
}

echo "deploy: go build"
(cd "$root" && go build -o "$tmp/modelexec" ./cmd/modelexec && go build -o "$tmp/mkbucket" ./deploy/mkbucket)
bin="$tmp/modelexec"

echo "deploy: npm ci"
(cd "$root/interop" && npm ci --no-audit --no-fund --loglevel=error)

# The S3-compatible store: the one named, else a versitygw of this test's own.
s3="${MODELEXEC_TEST_S3:-}"
if [ -z "$s3" ]; then
  gobin="$(go env GOBIN)"; gobin="${gobin:-$(go env GOPATH)/bin}"
  [ -x "$gobin/versitygw" ] || { echo "deploy: no MODELEXEC_TEST_S3 and no $gobin/versitygw (.ci/run builds it)" >&2; exit 1; }
  read -r s3_port < <(free_ports 1)
  mkdir -p "$tmp/s3"
  "$gobin/versitygw" --access deploy-access --secret deploy-secret-key --port "127.0.0.1:$s3_port" posix "$tmp/s3" >"$tmp/versitygw.log" 2>&1 &
  pids+=($!)
  s3="http://deploy-access:deploy-secret-key@127.0.0.1:$s3_port"
  wait_for "versitygw" 20 curl -s -o /dev/null "http://127.0.0.1:$s3_port/"
fi
suffix="$(node -e 'console.log(require("crypto").randomBytes(5).toString("hex"))')"
blobs="$("$tmp/mkbucket" "$s3" "modelexec-deploy-$suffix")"
s3_user="${s3#*//}"; s3_user="${s3_user%@*}"
export AWS_ACCESS_KEY_ID="${s3_user%%:*}" AWS_SECRET_ACCESS_KEY="${s3_user#*:}"
export AWS_CONFIG_FILE="$tmp/no-aws-config" AWS_SHARED_CREDENTIALS_FILE="$tmp/no-aws-credentials"

# A database of this test's own on the PostgreSQL server, dropped at exit.
db_name="modelexec_deploy_$suffix"
psql -q "$pg_admin" -c "CREATE DATABASE $db_name" >/dev/null
database="$(node -e 'const u = new URL(process.argv[1]); u.pathname = "/" + process.argv[2]; console.log(u.toString())' "$pg_admin" "$db_name")"

read -r lb_api lb_queue lb_sync f1_api f1_queue f1_sync f2_api f2_queue f2_sync < <(free_ports 9)
# HAProxy connects to the processes (and checks them) from an address of its own, the one the
# processes trust for X-Forwarded-For; the test's clients connect from 127.0.0.1.
lb_source=127.0.0.2
secret="$(node -e 'console.log(require("crypto").randomBytes(32).toString("hex"))')"
# Every process and every console command reads these (MODELEXEC_<FLAG>).
export MODELEXEC_SECRET="$secret" MODELEXEC_DATABASE="$database" MODELEXEC_REDIS="$redis_url" MODELEXEC_BLOBS="$blobs"
export MODELEXEC_PUBLIC_URL_API="http://127.0.0.1:$lb_api" MODELEXEC_PUBLIC_URL_QUEUE="http://127.0.0.1:$lb_queue"
export MODELEXEC_PUBLIC_URL_SYNC="http://127.0.0.1:$lb_sync" MODELEXEC_LOG_FORMAT=json MODELEXEC_SHUTDOWN_GRACE=15s

# The webhook receiver is https on 127.0.0.1 with a self-signed certificate the processes trust.
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj "/CN=127.0.0.1" \
  -addext "subjectAltName=IP:127.0.0.1" -keyout "$tmp/receiver-key.pem" -out "$tmp/receiver-cert.pem" 2>/dev/null
export INTEROP_TLS_KEY="$tmp/receiver-key.pem" INTEROP_TLS_CERT="$tmp/receiver-cert.pem"

"$bin" migrate --data "$tmp/console" >/dev/null

# start NAME ARGS...: one serve process, its log in $tmp/NAME.log, its pid in pid_NAME. The
# reference language models are turned on: the openai client's tests chat with them.
start() {
  local name="$1"; shift
  SSL_CERT_FILE="$tmp/receiver-cert.pem" "$bin" serve --data "$tmp/$name" --webhook-allow-private 127.0.0.1 \
    --reference-models --trusted-proxies "$lb_source" "$@" >"$tmp/$name.log" 2>&1 &
  pids+=($!)
  printf -v "pid_$name" '%s' "$!"
}
start front1 --roles api,queue,sync --api-addr "127.0.0.1:$f1_api" --queue-addr "127.0.0.1:$f1_queue" --sync-addr "127.0.0.1:$f1_sync"
start front2 --roles api,queue,sync --api-addr "127.0.0.1:$f2_api" --queue-addr "127.0.0.1:$f2_queue" --sync-addr "127.0.0.1:$f2_sync"
start worker1 --roles worker,webhooks
start worker2 --roles worker,webhooks

sed -e "s/@LB_SOURCE@/$lb_source/" -e "s/@LB_API@/127.0.0.1:$lb_api/; s/@LB_QUEUE@/127.0.0.1:$lb_queue/; s/@LB_SYNC@/127.0.0.1:$lb_sync/" \
  -e "s/@F1_API@/127.0.0.1:$f1_api/; s/@F1_QUEUE@/127.0.0.1:$f1_queue/; s/@F1_SYNC@/127.0.0.1:$f1_sync/; s/@F1_API_PORT@/$f1_api/" \
  -e "s/@F2_API@/127.0.0.1:$f2_api/; s/@F2_QUEUE@/127.0.0.1:$f2_queue/; s/@F2_SYNC@/127.0.0.1:$f2_sync/; s/@F2_API_PORT@/$f2_api/" \
  -e "s#@DOCS@#$MODELEXEC_PUBLIC_URL_API/docs/errors/service_busy#" \
  "$here/haproxy.cfg.in" >"$tmp/haproxy.cfg"
haproxy -c -q -f "$tmp/haproxy.cfg"
haproxy -db -f "$tmp/haproxy.cfg" >"$tmp/haproxy.log" 2>&1 &
pids+=($!)

ready() { curl -sf -o /dev/null "$1/readyz"; }
wait_for "front1 ready" 30 ready "http://127.0.0.1:$f1_api"
wait_for "front2 ready" 30 ready "http://127.0.0.1:$f2_api"
for u in "$MODELEXEC_PUBLIC_URL_API" "$MODELEXEC_PUBLIC_URL_QUEUE" "$MODELEXEC_PUBLIC_URL_SYNC"; do
  wait_for "the balancer at $u" 30 curl -sf -o /dev/null "$u/healthz"
done
echo "deploy: 2 fronts, 2 workers and haproxy up after $((SECONDS - started))s (api $MODELEXEC_PUBLIC_URL_API)"

# The balancer's health checks (15 a second) spend its own keyless read bucket, not its
# clients': a client's first keyless answer through it has tokens left.
left="$(curl -s -D - -o /dev/null "$MODELEXEC_PUBLIC_URL_API/healthz" | tr -d '\r' | sed -n 's/^[Rr]ate[Ll]imit-[Rr]emaining: //p')"
[ -n "$left" ] && [ "$left" -gt 0 ] || { echo "deploy: a client's keyless answer through the balancer says RateLimit-Remaining '$left': its bucket is the balancer's" >&2; exit 1; }

created_at="$(date -u -d '48 hours ago' +%Y-%m-%dT%H:%M:%SZ)"
# new_account PLAN: an account made two days ago (the new-account limits do not apply).
# field NAME: the field NAME of the JSON object on stdin.
field() { node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>console.log(JSON.parse(s)[process.argv[1]]))' "$1"; }
new_account() { "$bin" accounts create --data "$tmp/console" --plan "$1" --credits 100000 --created-at "$created_at" --json | field id; }
mint() { "$bin" keys mint --data "$tmp/console" --account "$1" --json | field key; }

# The real clients through the balancer (the interop tests, pointed at its URLs).
account="$(new_account pro)"
export INTEROP_API_URL="$MODELEXEC_PUBLIC_URL_API" INTEROP_QUEUE_URL="$MODELEXEC_PUBLIC_URL_QUEUE" INTEROP_SYNC_URL="$MODELEXEC_PUBLIC_URL_SYNC"
export INTEROP_KEY="$(mint "$account")" INTEROP_ACCOUNT="$account" INTEROP_DATA="$tmp/console" INTEROP_BIN="$bin" INTEROP_ROOT="$root" INTEROP_BALANCED=1
echo "deploy: real clients through the balancer"
(cd "$root/interop" && node --test --test-concurrency=1 test/fal.test.mjs test/openai.test.mjs test/fal_webhook.test.mjs)

# A live studio session whose two clients sit on the two fronts (straight to each, so that they
# are on different processes): the edits typed on one reach the other through the notices.
echo "deploy: a live studio session across the two fronts"
studio_key="$("$bin" keys mint --data "$tmp/console" --account "$account" --scopes studio:write --json | field key)"
(cd "$root/interop" && STUDIO_FRONT_URLS="http://127.0.0.1:$f1_api,http://127.0.0.1:$f2_api" STUDIO_KEY="$studio_key" \
  node --test test/studio_processes.test.mjs)

# Graceful drain: synchronous runs held on both fronts while front1 is told to stop. The
# balancer sees /readyz answer 503 and takes front1 out while its listeners are still open;
# requests sent meanwhile go to front2; the held runs get their results; front1 exits 0.
echo "deploy: SIGTERM to front1 with runs held through the balancer"
drain_account="$(new_account ultimate)"
export HELD_SYNC_URL="$MODELEXEC_PUBLIC_URL_SYNC" HELD_API_URL="$MODELEXEC_PUBLIC_URL_API" HELD_KEY="$(mint "$drain_account")"
export HELD_RUNS=4 HELD_PROBE_FILE="$tmp/draining"
node "$here/held.mjs" &
held_pid=$!
pids+=($held_pid)
held_running() {
  [ "$(psql -At "$database" -c "SELECT count(*) FROM jobs WHERE account_id = '$drain_account' AND status = 'IN_PROGRESS'")" -ge 2 ]
}
wait_for "held runs running" 30 held_running
# haproxy_says TEXT: the balancer logged TEXT after the line count in $mark.
haproxy_says() { tail -n "+$((mark + 1))" "$tmp/haproxy.log" | grep -q "$1"; }
mark="$(wc -l <"$tmp/haproxy.log")"
kill -TERM "$pid_front1"
touch "$HELD_PROBE_FILE"
front1_down() { haproxy_says "front1 is DOWN"; }
wait_for "the balancer taking front1 out" 10 front1_down
front1_stopped() { ! kill -0 "$pid_front1"; }
wait_for "front1 to stop" 40 front1_stopped
front1_status=0
wait "$pid_front1" || front1_status=$?
[ "$front1_status" -eq 0 ] || { echo "deploy: front1 exited $front1_status after SIGTERM" >&2; exit 1; }
wait "$held_pid"
grep -q '"msg":"draining: /readyz answers 503 before the listeners close"' "$tmp/front1.log" || { echo "deploy: front1 did not drain" >&2; exit 1; }
mv "$tmp/front1.log" "$tmp/front1-drained.log"
mark="$(wc -l <"$tmp/haproxy.log")"
start front1 --roles api,queue,sync --api-addr "127.0.0.1:$f1_api" --queue-addr "127.0.0.1:$f1_queue" --sync-addr "127.0.0.1:$f1_sync"
front1_up() { haproxy_says "front1 is UP"; }
wait_for "front1 back in the balancer" 30 front1_up

# Load, and a front and a worker killed under it: twelve clients, each on a key of its own
# (rate buckets are per key) of three ultimate accounts (50 jobs in flight each).
keys=()
for _ in 1 2 3; do
  a="$(new_account ultimate)"
  for _ in 1 2 3 4; do keys+=("$(mint "$a")"); done
done
export LOAD_QUEUE_URL="$MODELEXEC_PUBLIC_URL_QUEUE" LOAD_KEYS="$(IFS=,; echo "${keys[*]}")" LOAD_SECONDS=20 LOAD_SETTLE_SECONDS=90
export LOAD_OUT="$tmp/load.json" LOAD_PROGRESS="$tmp/load.progress"
echo 0 >"$LOAD_PROGRESS"
echo "deploy: load through the balancer (${#keys[@]} clients, ${LOAD_SECONDS}s)"
node "$here/load.mjs" &
load_pid=$!
pids+=($load_pid)
progress_over() { [ "$(cat "$LOAD_PROGRESS")" -ge "$1" ]; }
running_on() {
  [ "$(psql -At "$database" -c "SELECT count(*) FROM jobs WHERE status = 'IN_PROGRESS' AND lease_owner <> ''")" -gt 0 ]
}
wait_for "40 accepted submits" 60 progress_over 40
wait_for "a job running" 30 running_on
echo "deploy: kill -9 front1 and worker1 after $(cat "$LOAD_PROGRESS") accepted submits"
kill -9 "$pid_front1" "$pid_worker1"
wait "$load_pid"

# The survivors have swept: every job settled, once, and the books balance.
unsettled() { [ "$(psql -At "$database" -c "SELECT count(*) FROM jobs WHERE status <> 'COMPLETED'")" -eq 0 ]; }
wait_for "every job settled" 60 unsettled
psql -At -v ON_ERROR_STOP=1 "$database" -f "$here/check.sql" >"$tmp/check.out"
if [ -s "$tmp/check.out" ]; then
  echo "deploy: the books do not hold:" >&2
  cat "$tmp/check.out" >&2
  exit 1
fi
accepted_ids="$(node -e 'for (const j of require(process.argv[1]).accepted) console.log(j.id)' "$LOAD_OUT" | sort -u)"
completed_ids="$(psql -At "$database" -c "SELECT request_id FROM jobs WHERE status = 'COMPLETED'" | sort -u)"
lost="$(comm -23 <(echo "$accepted_ids") <(echo "$completed_ids"))"
[ -z "$lost" ] || { echo "deploy: accepted jobs missing or unsettled: $lost" >&2; exit 1; }
read -r jobs_n events_n retried_n < <(psql -At -F ' ' "$database" -c \
  "SELECT (SELECT count(*) FROM jobs), (SELECT count(*) FROM events), (SELECT count(*) FROM jobs WHERE attempts > 1)")
echo "deploy: books hold: $jobs_n jobs settled once each ($events_n events), $retried_n taken over after the kill, $(echo "$accepted_ids" | wc -l) accepted under load, $((SECONDS - started))s in all"

# No front ready: the balancer answers as the service would, 503 service_busy in the error body
# of each surface (the OpenAI envelope on /compat/v1), with Retry-After and a request id.
echo "deploy: every front stopped: the balancer's own answer"
mark="$(wc -l <"$tmp/haproxy.log")"
kill -TERM "$pid_front2"
none_ready() { for b in api queue sync; do haproxy_says "backend '$b' has no server available" || return 1; done; }
wait_for "the balancer taking front2 out" 40 none_ready
# refused URL EXPECTED_CODE_EXPR: the answer through the balancer is a JSON 503 that node checks.
refused() {
  curl -s -D "$tmp/refused.h" -o "$tmp/refused.json" -X POST -H 'Content-Type: application/json' -d '{}' "$1"
  node -e '
    const fs = require("fs"), [h, b, want] = process.argv.slice(1);
    const head = fs.readFileSync(h, "utf8"), body = JSON.parse(fs.readFileSync(b, "utf8"));
    const fail = (m) => { console.error("deploy: " + m + "\n" + head + JSON.stringify(body)); process.exit(1); };
    if (!/^HTTP\/1\.1 503/.test(head)) fail("not a 503");
    if (!/\r\nretry-after: 5\r\n/i.test(head)) fail("no Retry-After: 5");
    const id = (head.match(/\r\nx-request-id: (\S+)\r\n/i) || [])[1];
    if (!id) fail("no X-Request-Id");
    const code = want === "envelope" ? body.error && body.error.code : body.error;
    if (code !== "service_busy") fail("code " + code);
    if (want !== "envelope" && (body.retry !== "after_retry_after" || body.charged !== "no" || body.request_id !== id)) fail("error body");
  ' "$tmp/refused.h" "$tmp/refused.json" "$2"
}
refused "$MODELEXEC_PUBLIC_URL_API/v1/jobs" body
refused "$MODELEXEC_PUBLIC_URL_API/compat/v1/chat/completions" envelope
refused "$MODELEXEC_PUBLIC_URL_QUEUE/svc-serverless/image-4b" body
refused "$INTEROP_SYNC_URL/svc-serverless/image-4b" body
echo "deploy: done in $((SECONDS - started))s"
