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
import { execFileSync } from "node:child_process";

import { API_URL, BIN, DATA, SECRET, mintKey, newAccount } from "../lib/env.mjs";

// The origin serve was told to allow (--studio-origins in run.sh).
const ORIGIN = process.env.INTEROP_STUDIO_ORIGIN;

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

const wsBase = (projectId) => API_URL.replace(/^http/, "ws") + `/v1/studio/projects/${projectId}`;

// provider is a server-side client (Node): room "brief/live", the key in the Authorization
// header of every handshake, as docs/studio.md shows.
function provider(projectId, doc, key = KEY) {
  const WS = class extends WebSocket {
    constructor(u, p) {
      super(u, p, { headers: { Authorization: `Bearer ${key}` } });
    }
  };
  const p = new WebsocketProvider(wsBase(projectId), "brief/live", doc, { WebSocketPolyfill: WS, disableBc: true });
  providers.push(p);
  return p;
}

async function mintTicket(projectId, key = KEY) {
  const r = await call("POST", `/v1/studio/projects/${projectId}/tickets`, undefined, key);
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return r.body.ticket;
}

// browserProvider is what a page does (docs/studio.md): its handshakes carry its origin, as a
// browser's do, and it asks its backend (here: mintTicket) for a fresh ticket before every
// connection, reconnects included, holding the provider's own retry meanwhile.
function browserProvider(projectId, doc, { origin = ORIGIN, minted = [] } = {}) {
  const WS = class extends WebSocket {
    constructor(u, p) {
      super(u, p, { origin });
    }
  };
  const p = new WebsocketProvider(wsBase(projectId), "brief/live", doc, { WebSocketPolyfill: WS, disableBc: true, connect: false });
  const connect = async () => {
    const ticket = await mintTicket(projectId);
    minted.push(ticket);
    p.params = { ticket };
    p.connect();
  };
  p.on("connection-close", () => {
    if (!p.shouldConnect) return; // closed on purpose
    p.shouldConnect = false;
    setTimeout(connect, Math.min(100 * 2 ** p.wsUnsuccessfulReconnects, 2500));
  });
  providers.push(p);
  connect();
  return p;
}

// handshake dials url with ws and answers the status: 101, or the refusal's status and body.
function handshake(url, options = {}) {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, options);
    ws.on("open", () => {
      ws.close();
      resolve({ status: 101 });
    });
    ws.on("unexpected-response", (req, res) => {
      let body = "";
      res.on("data", (d) => (body += d)).on("end", () => resolve({ status: res.statusCode, body: JSON.parse(body) }));
    });
    ws.on("error", (err) => reject(err));
  });
}

async function storedText(path, key = KEY) {
  const r = await call("GET", path, undefined, key);
  assert.equal(r.status, 200, JSON.stringify(r.body));
  const d = new Y.Doc();
  Y.applyUpdate(d, unb64(r.body.update));
  return { text: d.getText("body").toString(), doc: d, body: r.body };
}

async function untilStored(path, want, key = KEY) {
  let last;
  await until(`stored text ${JSON.stringify(want)}`, () => last === want, 10000, async () => (last = (await storedText(path, key)).text));
}

// keyWithID mints a studio key and answers it with its public id (for revocation).
function keyWithID(scopes = "studio:write") {
  const out = execFileSync(BIN, ["keys", "mint", "--data", DATA, "--secret", SECRET, "--account", ACCOUNT, "--scopes", scopes, "--json"], { encoding: "utf8" });
  return JSON.parse(out);
}

// until waits, at most ms, for check to hold; poll (optional) refreshes what check reads.
function until(what, check, ms = 10000, poll = async () => {}) {
  return new Promise((resolve, reject) => {
    const started = Date.now();
    const tick = async () => {
      await poll();
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

// closes records the close codes and reasons a provider's connections end with.
function closes(p) {
  const seen = [];
  p.on("connection-close", (event) => event && seen.push({ code: event.code, reason: String(event.reason ?? "") }));
  return seen;
}

describe("issue 27: the live route for real editors", () => {
  test("a browser page connects with a fresh ticket on every connection, from the allowed origin only", async () => {
    const id = project();
    const path = `/v1/studio/projects/${id}/brief`;
    const live = `${wsBase(id)}/brief/live`;
    const minted = [];
    const doc = new Y.Doc();
    const p = browserProvider(id, doc, { minted });
    await until("the page's provider synced", () => p.synced);
    doc.getText("body").insert(0, "typed in a page");
    await untilStored(path, "typed in a page");

    // The connection drops; the page reconnects with a new ticket and keeps editing.
    p.ws.close();
    await until("reconnected", () => minted.length >= 2 && p.synced);
    doc.getText("body").insert(doc.getText("body").length, ", again");
    await untilStored(path, "typed in a page, again");

    // A ticket opens one connection; an origin off the list, a key in the URL and a key from a
    // browser are refused.
    const used = await handshake(`${live}?ticket=${encodeURIComponent(minted[0])}`, { origin: ORIGIN });
    assert.equal(used.status, 401);
    assert.equal(used.body.error, "invalid_api_key");
    assert.match(used.body.message, /already used/);
    const evil = await handshake(`${live}?ticket=${encodeURIComponent(await mintTicket(id))}`, { origin: "https://evil.example" });
    assert.equal(evil.status, 403);
    assert.equal(evil.body.error, "browser_origin_refused");
    const inURL = await handshake(`${live}?key=${encodeURIComponent(KEY)}`);
    assert.equal(inURL.status, 400);
    assert.equal(inURL.body.error, "invalid_body");
    const keyed = await handshake(live, { origin: ORIGIN, headers: { Authorization: `Bearer ${KEY}` } });
    assert.equal(keyed.status, 403);
    assert.equal(keyed.body.error, "browser_origin_refused");
  });

  test("revoking the key closes its open socket with 4001 within 2 s, and later edits are not stored", async (t) => {
    const id = project();
    const path = `/v1/studio/projects/${id}/brief`;
    const { key, id: keyID } = keyWithID();
    const doc = new Y.Doc();
    const p = provider(id, doc, key);
    const seen = closes(p);
    await until("synced", () => p.synced);
    doc.getText("body").insert(0, "before");
    await untilStored(path, "before");

    const started = Date.now();
    execFileSync(BIN, ["keys", "revoke", "--data", DATA, "--secret", SECRET, keyID]);
    doc.getText("body").insert(6, " after");
    await until("closed with 4001", () => seen.some((c) => c.code === 4001), 2000);
    assert.ok(Date.now() - started <= 2000);
    t.diagnostic(`closed ${Date.now() - started} ms after the revocation command returned`);
    assert.match(seen.find((c) => c.code === 4001).reason, /^key_revoked/);
    p.destroy();
    assert.equal((await storedText(path)).text, "before");
  });

  test("after a whole-document save, a provider's pre-save copy never comes back", async () => {
    const id = project();
    const path = `/v1/studio/projects/${id}/brief`;
    const seed = new Y.Doc();
    seed.getText("body").insert(0, "old draft");
    assert.equal((await call("POST", `${path}/state`, { update: b64(Y.encodeStateAsUpdate(seed)), seed: true })).status, 200);

    // A: a stock provider left to itself. B: an editor that, as docs/studio.md shows, loads
    // the saved document into a new Y.Doc when its connection closes with 4000 or 4002.
    const a = new Y.Doc();
    const pa = provider(id, a);
    const seenA = closes(pa);
    let b = new Y.Doc();
    let pb = provider(id, b);
    const reload = (event) => {
      if (event?.code === 4000 || event?.code === 4002) {
        pb.destroy();
        b = new Y.Doc();
        pb = provider(id, b);
        pb.on("connection-close", reload);
      }
    };
    pb.on("connection-close", reload);
    await until("synced", () => pa.synced && pb.synced);
    a.getText("body").insert(9, ", edited");
    await untilStored(path, "old draft, edited");

    const restored = new Y.Doc();
    restored.getText("body").insert(0, "restored");
    const { body } = await storedText(path);
    const saved = await call("POST", path, { update: b64(Y.encodeStateAsUpdate(restored)), rev: body.rev });
    assert.equal(saved.status, 200, JSON.stringify(saved.body));

    // A is closed (4000), reconnects with its old copy and is refused (4002) before any of it
    // is merged; B loads the saved document and edits it.
    await until("A refused as an older generation", () => seenA.some((c) => c.code === 4002));
    assert.ok(seenA.some((c) => c.code === 4000));
    await until("B loaded the saved document", () => pb.synced && b.getText("body").toString() === "restored");
    b.getText("body").insert(8, " and kept");
    await untilStored(path, "restored and kept");
    const now = await storedText(path);
    assert.equal(now.body.generation, 1);
    pa.destroy();
  });

  test("a value nested 1,000 levels deep is stored and synced", async () => {
    const id = project();
    const path = `/v1/studio/projects/${id}/brief`;
    let deep = { leaf: "bottom" };
    for (let i = 1; i < 1000; i++) deep = { v: deep };
    const a = new Y.Doc();
    const pa = provider(id, a);
    const seen = closes(pa);
    const b = new Y.Doc();
    const pb = provider(id, b);
    await until("synced", () => pa.synced && pb.synced);
    a.getMap("meta").set("deep", deep);
    await until("b has the deep value", () => b.getMap("meta").get("deep") !== undefined);
    let v = (await storedText(path)).doc.getMap("meta").get("deep");
    let depth = 1;
    while (v.v) {
      v = v.v;
      depth++;
    }
    assert.equal(depth, 1000);
    assert.equal(v.leaf, "bottom");
    assert.deepEqual(seen, []);
  });

  test("typing 20 keys a second is never throttled", async (t) => {
    const id = project();
    const path = `/v1/studio/projects/${id}/brief`;
    const doc = new Y.Doc();
    const p = provider(id, doc);
    const seen = closes(p);
    await until("synced", () => p.synced);
    let typed = "";
    for (let i = 0; i < 100; i++) {
      const c = String.fromCharCode(97 + (i % 26));
      doc.getText("body").insert(typed.length, c);
      typed += c;
      await new Promise((r) => setTimeout(r, 50)); // a typist's pace: 20 keys a second
    }
    await untilStored(path, typed);
    assert.deepEqual(seen, []);
    t.diagnostic(`${typed.length} keys typed, ${seen.length} closes`);
  });
});
