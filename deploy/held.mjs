// Synchronous runs held through the load balancer while deploy/test.sh drains a front process
// (SIGTERM): each must be answered with its result, none cut. Meanwhile, once HELD_PROBE_FILE
// appears, light requests go through the balancer every 50 ms until the held runs are all
// answered: none may be refused while a front drains.
//
// Reads HELD_SYNC_URL, HELD_API_URL, HELD_KEY, HELD_RUNS and HELD_PROBE_FILE; prints one line
// of figures and exits 1 on any failure.
import { existsSync } from "node:fs";

const SYNC = process.env.HELD_SYNC_URL.replace(/\/+$/, "");
const API = process.env.HELD_API_URL.replace(/\/+$/, "");
const KEY = process.env.HELD_KEY;
const RUNS = Number(process.env.HELD_RUNS || "4");
// About two seconds of work on the built-in runner: held across the drain.
const INPUT = { positivePrompt: "a lighthouse at dusk", width: 1536, height: 1536, steps: 30 };
const headers = { Authorization: `Key ${KEY}`, "Content-Type": "application/json" };
const pause = (ms) => new Promise((ok) => setTimeout(ok, ms));

// run holds one synchronous run. A run refused 429 before it started (four sent at once may
// meet the key's rate limit) is sent again after its Retry-After, as a client does: it was never
// held, and the drain must still answer it.
async function run(i) {
  const started = Date.now();
  for (let attempt = 0; ; attempt++) {
    try {
      const res = await fetch(`${SYNC}/svc-serverless/image-4b`, { method: "POST", headers, body: JSON.stringify(INPUT), signal: AbortSignal.timeout(60000) });
      const body = await res.json().catch(() => null);
      if (res.status === 429 && attempt < 3) {
        await pause(1000 * Number(res.headers.get("retry-after") || "1"));
        continue;
      }
      return { i, status: res.status, ok: res.status === 200 && body?.images?.length === 1, ms: Date.now() - started, error: body?.error };
    } catch (err) {
      return { i, status: 0, ok: false, ms: Date.now() - started, error: String(err) };
    }
  }
}

let answered = false;
const probes = { sent: 0, failed: [] };
async function probe() {
  while (!answered && !existsSync(process.env.HELD_PROBE_FILE)) await pause(20);
  while (!answered) {
    probes.sent++;
    try {
      const res = await fetch(`${API}/v1/me`, { headers, signal: AbortSignal.timeout(10000) });
      await res.arrayBuffer();
      if (res.status !== 200) probes.failed.push(res.status);
    } catch (err) {
      probes.failed.push(String(err));
    }
    await pause(50);
  }
}

const prober = probe();
const results = await Promise.all(Array.from({ length: RUNS }, (_, i) => run(i)));
answered = true;
await prober;
const bad = results.filter((r) => !r.ok);
console.log(`held: ${RUNS - bad.length} of ${RUNS} held runs answered with their result (${results.map((r) => r.ms).join(", ")} ms); ` +
  `${probes.sent} requests during the drain, ${probes.failed.length} refused`);
if (bad.length > 0 || probes.failed.length > 0) {
  console.error(`held: failed runs ${JSON.stringify(bad)}; refused requests ${JSON.stringify(probes.failed.slice(0, 10))}`);
  process.exit(1);
}
