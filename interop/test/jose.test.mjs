// Webhook signatures verified with jose from npm (DESIGN.md "Interop"; issue 6 "Done when").
// The deliveries are real: interop/webhookdeliveries drives the webhooks domain over the
// server's database and secret, so they are signed with the keys the running server publishes,
// and its TLS receiver captured the exact bytes. Here a receiver's point of view: only the
// published JWKS (fetched by jose from GET /.well-known/jwks.json, no key) for the Ed25519
// schemes, and a standard HMAC with the whsec_ secret shown at registration for the earlier v1.
import { test, describe, before } from "node:test";
import assert from "node:assert/strict";
import { createHash, createHmac, timingSafeEqual } from "node:crypto";
import { readFileSync } from "node:fs";
import * as jose from "jose";

import { API_URL } from "../lib/env.mjs";

const JWKS_URL = new URL("/.well-known/jwks.json", API_URL);
const TOLERANCE_S = 300; // what a receiver should accept around its own clock

function deliveries() {
  const path = process.env.INTEROP_DELIVERIES;
  assert.ok(path, "INTEROP_DELIVERIES is not set: run through interop/run.sh");
  const out = JSON.parse(readFileSync(path, "utf8"));
  for (const d of out.deliveries) {
    d.body = Buffer.from(d.body_b64, "base64");
  }
  return out;
}

// parseSignature splits "t=..,v2=..,kid=.." (or "t=..,v1=..") into its parts.
function parseSignature(h) {
  const p = { v1: [], v2: [] };
  for (const part of h.split(",")) {
    const i = part.indexOf("=");
    assert.ok(i > 0, `malformed signature part ${part}`);
    const [k, v] = [part.slice(0, i).trim(), part.slice(i + 1).trim()];
    if (k === "v1" || k === "v2") p[k].push(v);
    else p[k] = v;
  }
  assert.match(p.t ?? "", /^\d+$/, "signature has t");
  return p;
}

async function ed25519Verify(key, signature, message) {
  return crypto.subtle.verify({ name: "Ed25519" }, key, signature, message);
}

describe("jose verifies webhook signatures from the published JWKS", () => {
  let captured;
  let jwks; // the document as served
  let remote; // jose's remote key set over the same URL

  before(async () => {
    captured = deliveries();
    const res = await fetch(JWKS_URL); // no Authorization: the JWKS is public
    assert.equal(res.status, 200);
    assert.match(res.headers.get("content-type") ?? "", /json/);
    jwks = await res.json();
    remote = jose.createRemoteJWKSet(JWKS_URL);
  });

  test("the JWKS holds Ed25519 signing keys whose kid is their RFC 7638 thumbprint", async () => {
    assert.ok(Array.isArray(jwks.keys) && jwks.keys.length >= 1, JSON.stringify(jwks));
    for (const jwk of jwks.keys) {
      assert.equal(jwk.kty, "OKP");
      assert.equal(jwk.crv, "Ed25519");
      assert.equal(jwk.alg, "EdDSA");
      assert.equal(jwk.use, "sig");
      assert.match(jwk.x, /^[A-Za-z0-9_-]{43}$/, "x is 32 bytes base64url");
      assert.equal(jwk.d, undefined, "no private part is published");
      assert.equal(jwk.kid, await jose.calculateJwkThumbprint(jwk, "sha256"));
      const key = await jose.importJWK(jwk, "EdDSA");
      assert.equal(key.type, "public");
    }
  });

  test("Svc-Signature v2 verifies over t.body with the key named by kid", async () => {
    const signed = captured.deliveries.filter((d) => parseSignature(d.headers["svc-signature"]).v2.length > 0);
    // Both v2 kinds of the Ed25519 scheme plus the per-request callback sent under v1.
    assert.deepEqual(signed.map((d) => `${d.scheme} ${d.kind}`).sort(), [
      "v1 callback",
      "v2 callback",
      "v2 challenge",
      "v2 event",
    ]);
    const now = Math.floor(Date.now() / 1000);
    for (const d of signed) {
      const sig = parseSignature(d.headers["svc-signature"]);
      assert.ok(Math.abs(now - Number(sig.t)) <= TOLERANCE_S, "t is current");
      assert.ok(jwks.keys.some((k) => k.kid === sig.kid), `kid ${sig.kid} is published`);
      const key = await remote({ alg: "EdDSA", kid: sig.kid }); // looked up by kid, never by position
      const message = Buffer.concat([Buffer.from(`${sig.t}.`), d.body]);
      const ok = await Promise.all(sig.v2.map((v) => ed25519Verify(key, jose.base64url.decode(v), message)));
      assert.ok(ok.includes(true), `${d.scheme} ${d.kind}: no v2 signature verifies`);

      // The same signature does not verify a changed body or another timestamp.
      const tampered = Buffer.from(message);
      tampered[tampered.length - 2] ^= 1;
      assert.equal(await ed25519Verify(key, jose.base64url.decode(sig.v2[0]), tampered), false);
      const later = Buffer.concat([Buffer.from(`${Number(sig.t) + 1}.`), d.body]);
      assert.equal(await ed25519Verify(key, jose.base64url.decode(sig.v2[0]), later), false);
    }
  });

  test("X-Alt-Webhook-Signature verifies on every delivery with a published key", async () => {
    const keys = await Promise.all(jwks.keys.map((jwk) => jose.importJWK(jwk, "EdDSA")));
    assert.equal(captured.deliveries.length, 6);
    for (const d of captured.deliveries) {
      const h = d.headers;
      for (const name of ["x-alt-webhook-request-id", "x-alt-webhook-user-id", "x-alt-webhook-timestamp", "x-alt-webhook-signature"]) {
        assert.ok(h[name], `${d.scheme} ${d.kind}: ${name} present`);
      }
      assert.equal(h["x-alt-webhook-user-id"], captured.account);
      assert.match(h["x-alt-webhook-signature"], /^[0-9a-f]{128}$/);
      const bodyHash = createHash("sha256").update(d.body).digest("hex");
      const message = Buffer.from(
        [h["x-alt-webhook-request-id"], h["x-alt-webhook-user-id"], h["x-alt-webhook-timestamp"], bodyHash].join("\n"),
      );
      const signature = Buffer.from(h["x-alt-webhook-signature"], "hex");
      const ok = await Promise.all(keys.map((k) => ed25519Verify(k, signature, message)));
      assert.ok(ok.includes(true), `${d.scheme} ${d.kind}: X-Alt-Webhook-Signature does not verify`);
      const other = Buffer.from(message);
      other[0] ^= 1; // another request id
      assert.ok(!(await Promise.all(keys.map((k) => ed25519Verify(k, signature, other)))).includes(true));
    }
  });

  test("the earlier v1 scheme verifies with a standard HMAC-SHA256 under the whsec_ secret", async () => {
    const v1 = captured.deliveries.filter((d) => parseSignature(d.headers["svc-signature"]).v1.length > 0);
    assert.deepEqual(v1.map((d) => d.kind).sort(), ["challenge", "event"]);
    for (const d of v1) {
      const sig = parseSignature(d.headers["svc-signature"]);
      assert.equal(sig.v2.length, 0, "v1 deliveries carry no v2");
      assert.equal(sig.kid, undefined);
      const secret = captured.secrets[d.path];
      assert.match(secret ?? "", /^whsec_/);
      const expected = createHmac("sha256", secret).update(`${sig.t}.`).update(d.body).digest();
      const ok = sig.v1.some((v) => {
        const given = Buffer.from(v, "hex");
        return given.length === expected.length && timingSafeEqual(given, expected);
      });
      assert.ok(ok, `${d.kind}: no v1 signature matches`);
      const wrong = createHmac("sha256", secret + "x").update(`${sig.t}.`).update(d.body).digest("hex");
      assert.ok(!sig.v1.includes(wrong));
    }
  });

  test("deliveries carry the event headers and an envelope for this account", () => {
    for (const d of captured.deliveries) {
      assert.match(d.headers["svc-delivery"], /^(evt_challenge_|dlv_)/);
      assert.equal(d.headers["svc-attempt"], "1");
      assert.equal(d.headers["content-type"], "application/json");
      const body = JSON.parse(d.body.toString("utf8"));
      assert.equal(body.account, captured.account);
      if (d.kind === "challenge") {
        assert.equal(d.headers["svc-event"], "webhook.challenge");
        assert.match(body.data.nonce, /^[0-9a-f]{32}$/);
      } else {
        assert.equal(d.headers["svc-event"], "job.succeeded");
      }
    }
  });
});
