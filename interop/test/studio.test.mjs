// The real yjs and y-websocket packages from npm against the studio routes (DESIGN.md
// "Interop", decision 35; issue 12): two yjs documents edit at once through the brief state
// route and converge; a seeded brief refuses a second seed and hands back the first; y-websocket
// providers in Node sync live with each other and with the state route.
import { test, describe, after, beforeEach } from "node:test";
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import * as Y from "yjs";
import { WebsocketProvider } from "y-websocket";
import WebSocket from "ws";

import { API_URL, mintKey, newAccount } from "../lib/env.mjs";

// The studio keys live on an account of this file's own, so the shared one keeps room.
const ACCOUNT = newAccount();

// studioKey mints a key with the studio scopes (unticked by default, spec 02 Scopes).
function studioKey(scopes = "studio:write") {
  return mintKey({ account: ACCOUNT, scopes });
}

// Each test writes with a key of its own: the per-instance fuse (10 writes a second per key)
// counts live updates too, and one test's open providers must not pace the next.
let KEY = studioKey();
beforeEach(() => {
  KEY = studioKey();
});
const b64 = (u8) => Buffer.from(u8).toString("base64");
const unb64 = (s) => new Uint8Array(Buffer.from(s, "base64"));
const project = () => `interop-${randomUUID()}`;

async function call(method, path, body, key = KEY) {
  const res = await fetch(API_URL + path, {
    method,
    headers: { Authorization: `Bearer ${key}`, ...(body ? { "Content-Type": "application/json" } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  return { status: res.status, body: await res.json() };
}

// sendChanges posts what doc holds beyond the state vector it last synced at.
async function sendChanges(path, doc, since, extra = {}) {
  const update = Y.encodeStateAsUpdate(doc, since);
  return call("POST", `${path}/state`, { update: b64(update), ...extra });
}

function sameStateVector(a, b) {
  const ma = Y.decodeStateVector(a);
  const mb = Y.decodeStateVector(b);
  assert.deepEqual([...ma.entries()].sort(), [...mb.entries()].sort());
}

describe("yjs against the brief state route", () => {
  test("two windows edit at once and converge", async () => {
    const path = `/v1/studio/projects/${project()}/brief`;
    const a = new Y.Doc();
    const b = new Y.Doc();
    const empty = Y.encodeStateVector(new Y.Doc());
    a.getText("body").insert(0, "Launch plan");
    a.getMap("meta").set("owner", "ana");
    b.getText("body").insert(0, "Budget: 3 weeks");
    b.getMap("meta").set("status", "draft");

    // Both write without having seen the other's edit.
    const [ra, rb] = await Promise.all([sendChanges(path, a, empty), sendChanges(path, b, empty)]);
    for (const r of [ra, rb]) {
      assert.equal(r.status, 200, JSON.stringify(r.body));
      assert.deepEqual(Object.keys(r.body).sort(), ["bytes", "doc", "object", "request_id", "rev", "state_vector"]);
      assert.equal(r.body.object, "crdt_ack");
      assert.equal(r.body.doc, "brief");
      assert.ok(Number.isInteger(r.body.rev) && r.body.rev >= 1);
      assert.ok(r.body.bytes > 0 && r.body.bytes <= 2097152);
    }
    assert.deepEqual([ra.body.rev, rb.body.rev].sort(), [1, 2]);

    // Each window asks for what it lacks with its state vector and applies it.
    for (const doc of [a, b]) {
      const r = await call("GET", `${path}?state_vector=${encodeURIComponent(b64(Y.encodeStateVector(doc)))}`);
      assert.equal(r.status, 200, JSON.stringify(r.body));
      assert.equal(r.body.object, "crdt_state");
      Y.applyUpdate(doc, unb64(r.body.update));
    }
    assert.equal(a.getText("body").toString(), b.getText("body").toString());
    assert.match(a.getText("body").toString(), /Launch plan/);
    assert.match(a.getText("body").toString(), /Budget: 3 weeks/);
    assert.deepEqual(a.getMap("meta").toJSON(), { owner: "ana", status: "draft" });
    assert.deepEqual(b.getMap("meta").toJSON(), a.getMap("meta").toJSON());

    // The server's state vector is the converged document's; its bytes load the same document.
    const full = await call("GET", path);
    sameStateVector(unb64(full.body.state_vector), Y.encodeStateVector(a));
    const c = new Y.Doc();
    Y.applyUpdate(c, unb64(full.body.update));
    assert.equal(c.getText("body").toString(), a.getText("body").toString());
    assert.equal(full.body.bytes, unb64(full.body.update).length);

    // A second round of concurrent edits, this time deletes and inserts in the same text.
    const sa = Y.encodeStateVector(a);
    const sb = Y.encodeStateVector(b);
    const before = a.getText("body").toString();
    a.getText("body").delete(0, 6);
    b.getText("body").insert(b.getText("body").length, " — approved");
    for (const r of await Promise.all([sendChanges(path, a, sa), sendChanges(path, b, sb)])) {
      assert.equal(r.status, 200, JSON.stringify(r.body));
    }
    for (const doc of [a, b]) {
      const r = await call("GET", `${path}?state_vector=${encodeURIComponent(b64(Y.encodeStateVector(doc)))}`);
      Y.applyUpdate(doc, unb64(r.body.update));
    }
    assert.equal(a.getText("body").toString(), b.getText("body").toString());
    assert.equal(a.getText("body").toString(), before.slice(6) + " — approved");
  });

  test("a seeded brief refuses a second seed and hands back the first", async () => {
    const path = `/v1/studio/projects/${project()}/brief`;
    const first = new Y.Doc();
    first.getText("body").insert(0, "written before sharing");
    const r1 = await call("POST", `${path}/state`, { update: b64(Y.encodeStateAsUpdate(first)), seed: true });
    assert.equal(r1.status, 200, JSON.stringify(r1.body));
    assert.equal(r1.body.rev, 1);

    const second = new Y.Doc();
    second.getText("body").insert(0, "another window's copy");
    const r2 = await call("POST", `${path}/state`, { update: b64(Y.encodeStateAsUpdate(second)), seed: true });
    assert.equal(r2.status, 409, JSON.stringify(r2.body));
    assert.equal(r2.body.error, "revision_conflict");
    assert.equal(r2.body.rev, 1);
    const loaded = new Y.Doc();
    Y.applyUpdate(loaded, unb64(r2.body.update));
    assert.equal(loaded.getText("body").toString(), "written before sharing");

    const now = await call("GET", path);
    assert.equal(now.body.rev, 1, "the refused seed changed nothing");
  });

  test("refusals: a malformed update is 400, a read-only key is 403, nothing changes", async () => {
    const path = `/v1/studio/projects/${project()}/brief`;
    const d = new Y.Doc();
    d.getText("body").insert(0, "kept");
    assert.equal((await sendChanges(path, d, Y.encodeStateVector(new Y.Doc()))).status, 200);
    const bad = await call("POST", `${path}/state`, { update: b64(new Uint8Array([1, 1, 5, 0, 4, 9])) });
    assert.equal(bad.status, 400);
    assert.equal(bad.body.error, "invalid_body");
    const ro = await call("POST", `${path}/state`, { update: b64(Y.encodeStateAsUpdate(d)) }, studioKey("studio:read"));
    assert.equal(ro.status, 403);
    assert.equal(ro.body.error, "insufficient_scope");
    assert.equal((await call("GET", path)).body.rev, 1);
  });
});

// providers are closed after the suite, whatever failed.
const providers = [];
// Awareness keeps an interval per document: destroying the documents ends them, so node exits.
after(() =>
  providers.forEach((p) => {
    p.destroy();
    p.awareness.destroy();
    p.doc.destroy();
  }),
);

function provider(projectId, doc, key = KEY) {
  const serverUrl = API_URL.replace(/^http/, "ws") + `/v1/studio/projects/${projectId}`;
  // Room "brief/live": the provider dials {serverUrl}/brief/live?key=… (a browser cannot send
  // an Authorization header on a WebSocket, so the route takes the key as a query parameter).
  const p = new WebsocketProvider(serverUrl, "brief/live", doc, { WebSocketPolyfill: WebSocket, params: { key }, disableBc: true });
  providers.push(p);
  return p;
}

function until(what, check, ms = 10000) {
  return new Promise((resolve, reject) => {
    const started = Date.now();
    const tick = () => {
      if (check()) return resolve();
      if (Date.now() - started > ms) return reject(new Error(`timed out waiting for ${what}`));
      setTimeout(tick, 20);
    };
    tick();
  });
}

describe("y-websocket against the live route", () => {
  test("providers sync live with each other and with the state route", async () => {
    const id = project();
    const path = `/v1/studio/projects/${id}/brief`;
    // Something written over HTTP first: a provider's first sync loads it.
    const seed = new Y.Doc();
    seed.getText("body").insert(0, "from http.");
    assert.equal((await call("POST", `${path}/state`, { update: b64(Y.encodeStateAsUpdate(seed)), seed: true })).status, 200);

    const a = new Y.Doc();
    const b = new Y.Doc();
    const pa = provider(id, a);
    const pb = provider(id, b);
    await until("both providers synced", () => pa.synced && pb.synced);
    assert.equal(a.getText("body").toString(), "from http.");
    assert.equal(b.getText("body").toString(), "from http.");

    // Live edits travel between providers.
    a.getText("body").insert(0, "A says hi. ");
    await until("b sees a's edit", () => b.getText("body").toString().startsWith("A says hi. "));
    b.getText("body").insert(b.getText("body").length, " B agrees.");
    await until("a sees b's edit", () => a.getText("body").toString().endsWith(" B agrees."));

    // Each merge is stored before it is sent on: the state route already reads it.
    const stored = await call("GET", path);
    const s = new Y.Doc();
    Y.applyUpdate(s, unb64(stored.body.update));
    assert.equal(s.getText("body").toString(), a.getText("body").toString());

    // A write through the state route reaches the live providers.
    const sv = Y.encodeStateVector(s);
    s.getMap("meta").set("reviewed", true);
    assert.equal((await sendChanges(path, s, sv)).status, 200);
    await until("providers see the HTTP write", () => a.getMap("meta").get("reviewed") === true && b.getMap("meta").get("reviewed") === true);

    // Awareness (cursors, names) is relayed between providers.
    pa.awareness.setLocalStateField("user", { name: "ana" });
    await until("b sees a's awareness", () => [...pb.awareness.getStates().values()].some((st) => st.user?.name === "ana"));
  });

  test("a studio:read key syncs but its edits are refused", async () => {
    const id = project();
    const path = `/v1/studio/projects/${id}/brief`;
    const w = new Y.Doc();
    w.getText("body").insert(0, "read me");
    assert.equal((await sendChanges(path, w, Y.encodeStateVector(new Y.Doc()))).status, 200);
    const r = new Y.Doc();
    const pr = provider(id, r, studioKey("studio:read"));
    await until("read-only provider synced", () => pr.synced);
    assert.equal(r.getText("body").toString(), "read me");
    // y-websocket reports the protocol's permission-denied message with console.warn.
    const denials = [];
    const warn = console.warn;
    console.warn = (...args) => denials.push(args.join(" "));
    try {
      r.getText("body").insert(0, "sneaky ");
      await until("permission denied", () => denials.some((d) => d.includes("Permission denied")));
    } finally {
      console.warn = warn;
    }
    assert.match(denials.join("\n"), /studio:read only/);
    assert.equal((await call("GET", path)).body.rev, 1, "a read-only edit is not stored");
  });
});
