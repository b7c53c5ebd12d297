// A live studio session whose clients sit on different processes (issue 26), run by
// deploy/test.sh with STUDIO_FRONT_URLS (the account API of two front processes, comma
// separated) and STUDIO_KEY (a key with studio:write): a stock y-websocket provider on each
// process, one types, the other sees every edit without a reconnect, through the notices the
// processes tell each other, and each sees the other's awareness. Skipped without them (interop/run.sh starts one process).
import { test } from "node:test";
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import * as Y from "yjs";
import { WebsocketProvider } from "y-websocket";
import WebSocket from "ws";

const FRONTS = (process.env.STUDIO_FRONT_URLS || "").split(",").filter(Boolean);
const KEY = process.env.STUDIO_KEY;

function until(what, check, ms) {
  return new Promise((resolve, reject) => {
    const started = Date.now();
    const tick = () => {
      if (check()) return resolve();
      if (Date.now() - started > ms) return reject(new Error(`timed out waiting for ${what}`));
      setTimeout(tick, 2);
    };
    tick();
  });
}

function provider(front, projectId, doc) {
  const WS = class extends WebSocket {
    constructor(u, p) {
      super(u, p, { headers: { Authorization: `Bearer ${KEY}` } });
    }
  };
  const base = front.replace(/\/+$/, "").replace(/^http/, "ws") + `/v1/studio/projects/${projectId}`;
  return new WebsocketProvider(base, "brief/live", doc, { WebSocketPolyfill: WS, disableBc: true });
}

test("edits typed on one process reach a live client on another", { skip: FRONTS.length < 2 && "needs two processes (deploy/test.sh)" }, async () => {
  const projectId = `deploy-${randomUUID()}`;
  const a = new Y.Doc();
  const b = new Y.Doc();
  const pa = provider(FRONTS[0], projectId, a);
  const pb = provider(FRONTS[1], projectId, b);
  try {
    await until("both providers synced", () => pa.synced && pb.synced, 10000);
    const ms = [];
    for (let i = 0; i < 30; i++) {
      const started = performance.now();
      a.getText("body").insert(a.getText("body").length, `edit ${i}; `);
      const want = a.getText("body").toString();
      await until(`edit ${i} on the other process`, () => b.getText("body").toString() === want, 5000);
      ms.push(performance.now() - started);
      await new Promise((ok) => setTimeout(ok, 50)); // typing, not a burst: 20 edits a second
    }
    ms.sort((x, y) => x - y);
    const at = (q) => ms[Math.min(ms.length - 1, Math.floor(q * ms.length))].toFixed(1);
    console.log(`studio across processes: an edit reached the other process's client in p50 ${at(0.5)} ms, p99 ${at(0.99)} ms (${ms.length} edits)`);
    assert.equal(b.getText("body").toString(), a.getText("body").toString());

    // Awareness (cursors, names) crosses the processes too, both ways.
    pa.awareness.setLocalStateField("user", { name: "ana" });
    pb.awareness.setLocalStateField("user", { name: "ben" });
    const names = (p) => [...p.awareness.getStates().values()].map((st) => st.user?.name);
    await until("b sees a's awareness", () => names(pb).includes("ana"), 5000);
    await until("a sees b's awareness", () => names(pa).includes("ben"), 5000);
  } finally {
    for (const p of [pa, pb]) {
      p.destroy();
      p.awareness.destroy(); // its timer would keep the process alive
      p.doc.destroy();
    }
  }
});
