// Load through the load balancer for the deployment test (deploy/test.sh): one client per key,
// each submitting jobs to the queue host one after another and following each to COMPLETED
// on its status route, while the test kills processes under it. Every submit names an
// idempotency key and is sent again with the same key after a cut connection, a 502/503/504
// from the balancer or a 429 refusal, so a submit whose answer was lost with a killed process
// is answered by the job it made, never charged twice.
//
//   node deploy/load.mjs
//
// Reads LOAD_QUEUE_URL, LOAD_KEYS (comma-separated), LOAD_SECONDS (how long new jobs are
// submitted), LOAD_OUT (a JSON file written at the end: every accepted request id with its
// idempotency key and final status) and LOAD_PROGRESS (a file holding the count of accepted
// submits, rewritten as they come, for the test to time its kills). Exits 1 when an accepted
// job does not reach COMPLETED within LOAD_SETTLE_SECONDS after submitting stops.
import { writeFileSync } from "node:fs";

const QUEUE = process.env.LOAD_QUEUE_URL.replace(/\/+$/, "");
const KEYS = process.env.LOAD_KEYS.split(",").filter(Boolean);
const SECONDS = Number(process.env.LOAD_SECONDS || "20");
const SETTLE_SECONDS = Number(process.env.LOAD_SETTLE_SECONDS || "90");
const MODEL = "svc-serverless/image-4b";
// About 50 ms of work a job on the built-in runner: long enough that a killed worker holds some.
const INPUT = { positivePrompt: "a lighthouse at dusk", width: 512, height: 512, steps: 6 };

const accepted = [];
const tally = { submits: 0, retries: 0, replayed: 0, refused: {}, cut: 0 };
const submitEnd = Date.now() + SECONDS * 1000;
const settleEnd = submitEnd + SETTLE_SECONDS * 1000;
const pause = (ms) => new Promise((ok) => setTimeout(ok, ms));

// call sends one request; a cut connection answers status 0.
async function call(method, url, key, body, headers = {}) {
  try {
    const res = await fetch(url, {
      method,
      headers: { Authorization: `Key ${key}`, "Content-Type": "application/json", ...headers },
      body: body && JSON.stringify(body),
      signal: AbortSignal.timeout(30000),
    });
    const text = await res.text();
    let json = null;
    try {
      json = JSON.parse(text);
    } catch {}
    return { status: res.status, json, text };
  } catch (err) {
    return { status: 0, text: String(err) };
  }
}

// submit sends one job until it is accepted (200), or answers null past the settle deadline.
async function submit(key, idem) {
  for (let attempt = 0; Date.now() < settleEnd; attempt++) {
    if (attempt > 0) tally.retries++;
    const r = await call("POST", `${QUEUE}/${MODEL}`, key, INPUT, { "Idempotency-Key": idem });
    if (r.status === 200 && r.json?.request_id) {
      if (r.json.replayed) tally.replayed++;
      return r.json.request_id;
    }
    const code = r.json?.error;
    if (r.status === 429 || (r.status === 503 && code)) {
      tally.refused[code ?? "429"] = (tally.refused[code ?? "429"] ?? 0) + 1; // the service's own refusal
    } else if (r.status === 0 || r.status === 502 || r.status === 503 || r.status === 504) {
      tally.cut++; // a cut connection, or the balancer's answer for a process gone
    } else {
      throw new Error(`submit ${idem}: unexpected answer ${r.status} ${r.text}`);
    }
    await pause(Math.min(1000, 50 * 2 ** attempt));
  }
  return null;
}

// follow polls a job's status until COMPLETED; answers the last status seen.
async function follow(key, id) {
  let last = "";
  while (Date.now() < settleEnd) {
    const r = await call("GET", `${QUEUE}/${MODEL}/requests/${id}/status`, key);
    if (r.status === 200 || r.status === 202) {
      last = r.json?.status ?? last;
      if (last === "COMPLETED") return last;
    }
    await pause(100);
  }
  return last;
}

async function client(key, k) {
  for (let i = 0; Date.now() < submitEnd; i++) {
    const idem = `load-${process.pid}-${k}-${i}`;
    const id = await submit(key, idem);
    if (!id) break;
    const job = { id, idem, key: k, status: "" };
    accepted.push(job);
    tally.submits++;
    writeFileSync(process.env.LOAD_PROGRESS, String(accepted.length));
    job.status = await follow(key, id);
  }
}

await Promise.all(KEYS.map((key, k) => client(key, k)));
writeFileSync(process.env.LOAD_OUT, JSON.stringify({ tally, accepted }, null, 1));
const unsettled = accepted.filter((j) => j.status !== "COMPLETED");
console.log(`load: ${accepted.length} jobs accepted, ${tally.retries} submits sent again (${tally.replayed} answered replayed), ` +
  `${tally.cut} cut or unavailable, refusals ${JSON.stringify(tally.refused)}; ${unsettled.length} not COMPLETED`);
if (unsettled.length > 0) {
  console.error(`load: not COMPLETED within ${SETTLE_SECONDS}s: ${JSON.stringify(unsettled.slice(0, 10))}`);
  process.exit(1);
}
