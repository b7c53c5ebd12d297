// The reference receiver of docs/webhooks.md (interop/lib/receiver.mjs) against real
// deliveries signed with the keys the running server publishes (captured by
// interop/webhookdeliveries, as in jose.test.mjs). Proves WH-44: the receiver rejects a `t`
// older than its tolerance, compares `account` / X-Alt-Webhook-User-Id with its own account,
// looks keys up by kid and refetches the set on an unknown kid at most once a minute, takes a
// job's state from its own status rather than arrival, and answers another account's
// challenge with 4xx.
import { test, describe, before } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";

import { API_URL } from "../lib/env.mjs";
import { Receiver, Rejected, parseSignature } from "../lib/receiver.mjs";

const JWKS_URL = new URL("/.well-known/jwks.json", API_URL);

function captured() {
  const path = process.env.INTEROP_DELIVERIES;
  assert.ok(path, "INTEROP_DELIVERIES is not set: run through interop/run.sh");
  const out = JSON.parse(readFileSync(path, "utf8"));
  for (const d of out.deliveries) d.body = Buffer.from(d.body_b64, "base64");
  return out;
}

// countingFetch counts the requests a receiver makes for the key set.
function countingFetch() {
  const f = async (url, init) => {
    f.calls++;
    return fetch(url, init);
  };
  f.calls = 0;
  return f;
}

async function rejects(promise, reason) {
  await assert.rejects(promise, (err) => {
    assert.ok(err instanceof Rejected, `Rejected, got ${err}`);
    assert.equal(err.reason, reason, err.message);
    return true;
  });
}

describe("the reference webhook receiver (WH-44)", () => {
  let out;
  let ed25519; // deliveries signed Svc-Signature v2 (Ed25519)
  let hmac; // deliveries signed with the earlier v1 (HMAC under whsec_)

  before(() => {
    out = captured();
    // Under the v1 deployment setting, per-request callbacks (no whsec_ secret) are still v2.
    ed25519 = out.deliveries.filter((d) => parseSignature(d.headers["svc-signature"]).v2.length > 0);
    hmac = out.deliveries.filter((d) => parseSignature(d.headers["svc-signature"]).v1.length > 0);
    assert.ok(ed25519.length >= 3 && hmac.length >= 2, JSON.stringify(out.deliveries.map((d) => `${d.scheme} ${d.kind}`)));
  });

  test("accepts every real delivery for its own account and answers the challenge with its nonce", async () => {
    const receiver = new Receiver({ account: out.account, jwksUrl: JWKS_URL });
    for (const d of ed25519) {
      const answer = await receiver.handle(d.headers, d.body);
      assert.equal(answer.status, 200, `${d.kind}: ${JSON.stringify(answer)}`);
      const body = JSON.parse(d.body);
      if (d.kind === "challenge") {
        assert.equal(answer.body.nonce, body.data.nonce);
      }
    }
    for (const d of hmac) {
      const secret = out.secrets[d.path];
      const v1 = new Receiver({ account: out.account, secret });
      assert.equal((await v1.handle(d.headers, d.body)).status, 200, `v1 ${d.kind}`);
      const both = new Receiver({ account: out.account, secret, jwksUrl: JWKS_URL });
      assert.equal((await both.handle(d.headers, d.body)).status, 200, `v1 ${d.kind} with X-Alt-Webhook-Signature checked`);
      const wrong = new Receiver({ account: out.account, secret: secret + "x" });
      await rejects(wrong.verify(d.headers, d.body), "bad_signature");
    }
    // A changed body fails, whatever the headers say.
    const d = ed25519.find((x) => x.kind === "event");
    const tampered = Buffer.from(d.body);
    tampered[tampered.length - 2] ^= 1;
    await rejects(receiver.verify(d.headers, tampered), "bad_signature");
  });

  test("rejects a t older than the five-minute tolerance", async () => {
    for (const d of ed25519) {
      const t = parseSignature(d.headers["svc-signature"]).t;
      const fresh = new Receiver({ account: out.account, jwksUrl: JWKS_URL, now: () => (t + 299) * 1000 });
      await fresh.verify(d.headers, d.body);
      const stale = new Receiver({ account: out.account, jwksUrl: JWKS_URL, now: () => (t + 301) * 1000 });
      await rejects(stale.verify(d.headers, d.body), "stale_timestamp");
      assert.equal(stale.jwksFetches, 0, "the timestamp is checked before any key is fetched");
    }
  });

  test("refuses another account's deliveries, and its challenge with 4xx", async () => {
    const other = new Receiver({ account: "acct_someone_else", jwksUrl: JWKS_URL });
    for (const d of ed25519) {
      await rejects(other.verify(d.headers, d.body), "wrong_account");
      const answer = await other.handle(d.headers, d.body);
      assert.equal(answer.status, 403, `${d.kind}: ${JSON.stringify(answer)}`);
      assert.equal(answer.body.nonce, undefined, "the nonce is never echoed to another account");
    }
    // A per-request callback is checked on X-Alt-Webhook-User-Id as well as the body.
    const callback = ed25519.find((d) => d.kind === "callback");
    assert.equal(callback.headers["x-alt-webhook-user-id"], out.account);
    const headers = { ...callback.headers, "x-alt-webhook-user-id": "acct_someone_else" };
    const own = new Receiver({ account: out.account, jwksUrl: JWKS_URL });
    // The user id is signed: changing it breaks X-Alt-Webhook-Signature before the comparison.
    await rejects(own.verify(headers, callback.body), "bad_signature");
  });

  test("looks keys up by kid and refetches the set on an unknown kid at most once a minute", async () => {
    let now = Date.now();
    const fetchCounted = countingFetch();
    // A long tolerance so the clock can move past the refetch interval with these deliveries.
    const receiver = new Receiver({ account: out.account, jwksUrl: JWKS_URL, fetch: fetchCounted, toleranceSeconds: 3600, now: () => now });
    const d = ed25519.find((x) => x.kind === "event");
    await receiver.verify(d.headers, d.body);
    assert.equal(receiver.jwksFetches, 1);
    await receiver.verify(d.headers, d.body);
    assert.equal(receiver.jwksFetches, 1, "a known kid is served from the cached set");

    const sig = parseSignature(d.headers["svc-signature"]);
    const unknown = { ...d.headers, "svc-signature": `t=${sig.t},v2=${sig.v2[0]},kid=${"A".repeat(43)}` };
    now += 30_000;
    await rejects(receiver.verify(unknown, d.body), "unknown_kid");
    assert.equal(receiver.jwksFetches, 1, "no refetch within a minute of the last fetch");
    now += 31_000;
    await rejects(receiver.verify(unknown, d.body), "unknown_kid");
    assert.equal(receiver.jwksFetches, 2, "an unknown kid a minute later refetches once");
    await rejects(receiver.verify(unknown, d.body), "unknown_kid");
    assert.equal(receiver.jwksFetches, 2, "and not again at once");
    assert.equal(fetchCounted.calls, receiver.jwksFetches);
  });

  test("deduplicates deliveries and takes a job's state from its own status, not arrival", async () => {
    const receiver = new Receiver({ account: out.account, jwksUrl: JWKS_URL });
    const d = ed25519.find((x) => x.kind === "event");
    assert.deepEqual((await receiver.handle(d.headers, d.body)).body, { ok: true });
    assert.deepEqual((await receiver.handle(d.headers, d.body)).body, { duplicate: true });
    const job = JSON.parse(d.body).data;
    assert.equal(receiver.jobs.get(job.id).status, job.status);

    // Something about the same job that says it is still running, arriving after it settled,
    // does not undo the settled status.
    receiver.record({ id: "evt_x", data: { ...job, status: "in_progress" } });
    assert.equal(receiver.jobs.get(job.id).status, job.status);
    // The other way round: a settled status replaces a running one whenever it arrives.
    receiver.record({ id: "evt_y", data: { id: "photo_other", status: "in_progress" } });
    receiver.record({ id: "evt_z", data: { id: "photo_other", status: "failed" } });
    assert.equal(receiver.jobs.get("photo_other").status, "failed");
  });
});
