// The operator listener's Prometheus /metrics (serve --metrics-addr), read after a few jobs
// through the fal client: the exposition parses as Prometheus text format 0.0.4 and counts
// the requests by surface, route and status.
import { test } from "node:test";
import assert from "node:assert/strict";

import { falClient, MODEL, SMALL } from "../lib/env.mjs";

const METRICS_URL = process.env.INTEROP_METRICS_URL;

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
