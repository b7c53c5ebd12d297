// The operator listener's Prometheus /metrics (serve --metrics-addr), read after a few jobs
// through the fal client: the exposition parses as Prometheus text format 0.0.4 and counts
// the requests by surface, route and status, jobs by model and outcome, credits charged,
// rate-limit refusals by bucket, queue depth and seats in use. The server's log (JSON lines
// at info) carries one access line per request, naming the key's public id, never the key.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";

import { falClient, mintKey, MODEL, QUEUE_URL, SMALL } from "../lib/env.mjs";

const METRICS_URL = process.env.INTEROP_METRICS_URL;
const SERVER_LOG = process.env.INTEROP_SERVER_LOG;

async function scrape() {
  const res = await fetch(METRICS_URL);
  assert.equal(res.status, 200);
  assert.match(res.headers.get("content-type") ?? "", /^text\/plain/);
  return parse(await res.text());
}

function value(samples, name, labels = {}) {
  const found = samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
  assert.ok(found.length > 0, `no ${name} ${JSON.stringify(labels)}`);
  return found.reduce((sum, s) => sum + s.value, 0);
}

// parse reads Prometheus text format: # HELP / # TYPE lines and samples
// `name{label="value",…} value`, checking each line is well formed.
function parse(text) {
  const types = new Map();
  const samples = [];
  for (const line of text.split("\n")) {
    if (line === "") continue;
    if (line.startsWith("# TYPE ")) {
      const [name, type] = line.slice(7).split(" ");
      assert.match(type, /^(counter|gauge|histogram|summary|untyped)$/, line);
      types.set(name, type);
      continue;
    }
    if (line.startsWith("#")) continue;
    const m = line.match(/^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)( \d+)?$/);
    assert.ok(m, `not a sample line: ${line}`);
    const labels = {};
    if (m[3]) {
      for (const [, k, v] of m[3].matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[k] = v;
    }
    const value = Number(m[4]);
    assert.ok(!Number.isNaN(value) || m[4] === "NaN", line);
    samples.push({ name: m[1], labels, value });
  }
  return { types, samples };
}

test("/metrics after a few jobs counts requests by surface, route and status", { skip: !METRICS_URL && "INTEROP_METRICS_URL not set" }, async () => {
  const { client } = falClient();
  for (let i = 0; i < 2; i++) {
    const r = await client.subscribe(MODEL, { input: SMALL, mode: "polling", pollInterval: 50 });
    assert.ok(r.data.images.length > 0);
  }
  const res = await fetch(METRICS_URL);
  assert.equal(res.status, 200);
  assert.match(res.headers.get("content-type") ?? "", /^text\/plain/);
  const { types, samples } = parse(await res.text());
  assert.equal(types.get("modelexec_http_requests_total"), "counter");
  assert.equal(types.get("modelexec_http_request_duration_seconds"), "histogram");
  const submits = samples.filter(
    (s) => s.name === "modelexec_http_requests_total" && s.labels.surface === "queue" && s.labels.route === "/svc-serverless/image-4b" && s.labels.status === "200",
  );
  assert.equal(submits.length, 1, "one series for the submit route");
  assert.ok(submits[0].value >= 2, `submits counted ${submits[0].value}`);
  const statuses = samples.filter((s) => s.name === "modelexec_http_requests_total" && s.labels.route === "/svc-serverless/image-4b/requests/{id}/status");
  assert.ok(statuses.length > 0, "status polls counted under one templated route");
  assert.ok(samples.some((s) => s.name === "go_goroutines"), "Go runtime series");
  for (const s of samples) {
    assert.ok(!/[0-9a-f]{16}/.test(s.labels.route ?? ""), `a raw id became a label: ${s.labels.route}`);
  }
});

test("/metrics counts jobs by model and outcome, credits, refusals by bucket, queue depth and seats", { skip: !METRICS_URL && "INTEROP_METRICS_URL not set" }, async () => {
  const before = await scrape();
  const jobsBefore = before.samples.some((s) => s.name === "modelexec_jobs_total")
    ? value(before.samples, "modelexec_jobs_total", { model: "image-4b", outcome: "succeeded" })
    : 0;
  const { client } = falClient();
  for (let i = 0; i < 2; i++) {
    const r = await client.subscribe(MODEL, { input: SMALL, mode: "polling", pollInterval: 50 });
    assert.ok(r.data.images.length > 0);
  }
  // A fresh key's per-second fuse lets 3 generates through: the next ones in the same
  // second are refused 429 on the generate bucket.
  const key = mintKey();
  const answers = await Promise.all(
    Array.from({ length: 8 }, () =>
      fetch(`${QUEUE_URL}/${MODEL}`, {
        method: "POST",
        headers: { Authorization: `Key ${key}`, "Content-Type": "application/json" },
        body: JSON.stringify(SMALL),
      }).then(async (r) => ({ status: r.status, body: await r.text() })),
    ),
  );
  const refused = answers.filter((a) => a.status === 429).length;
  assert.ok(refused > 0, `no refusal among ${answers.map((a) => a.status)}`);

  const { types, samples } = await scrape();
  assert.equal(types.get("modelexec_jobs_total"), "counter");
  assert.equal(types.get("modelexec_job_duration_seconds"), "histogram");
  assert.ok(value(samples, "modelexec_jobs_total", { model: "image-4b", outcome: "succeeded" }) >= jobsBefore + 2, "jobs counted by model and outcome");
  assert.ok(value(samples, "modelexec_job_duration_seconds_count", { model: "image-4b", outcome: "succeeded" }) >= 2, "job durations observed");
  assert.equal(types.get("modelexec_credits_charged_total"), "counter");
  assert.ok(samples.some((s) => s.name === "modelexec_credits_charged_total" && s.labels.product && s.value > 0), "credits charged by product");
  assert.equal(types.get("modelexec_rate_limited_total"), "counter");
  assert.ok(value(samples, "modelexec_rate_limited_total", { bucket: "generate" }) >= refused, "refusals by bucket");
  for (const g of ["modelexec_queue_depth", "modelexec_seats_in_use", "modelexec_jobs_running"]) {
    assert.equal(types.get(g), "gauge", g);
    assert.ok(value(samples, g) >= 0, `${g} reads`);
  }
});

test("one access line per request at info, with route, status, request id and key id", { skip: !SERVER_LOG && "INTEROP_SERVER_LOG not set" }, async () => {
  const key = mintKey();
  const res = await fetch(`${QUEUE_URL}/${MODEL}`, {
    method: "POST",
    headers: { Authorization: `Key ${key}`, "Content-Type": "application/json" },
    body: JSON.stringify(SMALL),
  });
  assert.equal(res.status, 200);
  const requestID = res.headers.get("x-request-id");
  assert.ok(requestID);
  // The line is written as the answer goes out; read the log until it is there.
  let line;
  for (let i = 0; i < 100 && !line; i++) {
    const lines = readFileSync(SERVER_LOG, "utf8").split("\n").filter((l) => l.startsWith("{"));
    line = lines.map((l) => JSON.parse(l)).find((l) => l.msg === "request" && l.request_id === requestID);
    if (!line) await new Promise((ok) => setTimeout(ok, 20));
  }
  assert.ok(line, `no access line for ${requestID}`);
  assert.equal(line.level, "INFO");
  assert.equal(line.surface, "queue");
  assert.equal(line.method, "POST");
  assert.equal(line.route, "POST /svc-serverless/{slug}");
  assert.equal(line.status, 200);
  assert.equal(typeof line.ms, "number");
  assert.match(line.key_id, /^[A-Za-z0-9]+$/);
  assert.ok(!readFileSync(SERVER_LOG, "utf8").includes(key), "the key reached the log");
  const settled = readFileSync(SERVER_LOG, "utf8").split("\n").filter((l) => l.includes('"job settled"')).map((l) => JSON.parse(l));
  assert.ok(settled.some((l) => l.model === "image-4b" && l.account && typeof l.duration_ms === "number" && typeof l.credits === "number"), "job lifecycle lines");
});
