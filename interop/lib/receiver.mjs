// The reference webhook receiver of docs/webhooks.md: what a receiver must check before it
// trusts a delivery, written with jose from npm and node's crypto. The interop tests run it
// against real deliveries signed with the keys the server publishes.
//
//   const receiver = new Receiver({ account: "acct_…", jwksUrl: "https://api…/.well-known/jwks.json" });
//   const { status, body } = await receiver.handle(headers, rawBodyBytes);
//
// Checks, in order: the signature header parses; its `t` is within the tolerance (5 minutes);
// the Ed25519 `v2` signature over "t.body" verifies with the published key named by `kid`
// (looked up by kid, never by position; an unknown kid refetches the set at most once a
// minute), or the earlier HMAC `v1` under the endpoint's whsec_ secret; X-Alt-Webhook-Signature
// verifies when present; the account (`account`, X-Alt-Webhook-User-Id) is this receiver's
// own, since one key signs for every account. Then a challenge is answered with its nonce,
// a delivery already seen (event id or Svc-Delivery) is acknowledged without being applied
// again, and a job's state is taken from the job's own status, never from arrival order.
import * as jose from "jose";
import { createHash, createHmac, timingSafeEqual } from "node:crypto";

/** A delivery the receiver refuses; reason is a short machine-readable word. */
export class Rejected extends Error {
  constructor(reason, message) {
    super(message ?? reason);
    this.reason = reason;
  }
}

const TERMINAL = new Set(["succeeded", "failed", "cancelled"]);

/** parseSignature splits "t=..,v2=..,kid=.." (or "t=..,v1=..") into its parts. */
export function parseSignature(header) {
  if (typeof header !== "string" || header === "") {
    throw new Rejected("missing_signature", "no Svc-Signature header");
  }
  const p = { v1: [], v2: [] };
  for (const part of header.split(",")) {
    const i = part.indexOf("=");
    if (i <= 0) throw new Rejected("malformed_signature", `malformed signature part ${JSON.stringify(part)}`);
    const [k, v] = [part.slice(0, i).trim(), part.slice(i + 1).trim()];
    if (k === "v1" || k === "v2") p[k].push(v);
    else p[k] = v;
  }
  if (!/^\d+$/.test(p.t ?? "")) throw new Rejected("malformed_signature", "the signature has no t");
  p.t = Number(p.t);
  return p;
}

function header(headers, name) {
  if (typeof headers?.get === "function") return headers.get(name) ?? undefined;
  return headers?.[name] ?? headers?.[name.toLowerCase()];
}

export class Receiver {
  #account;
  #jwksUrl;
  #secret;
  #tolerance;
  #refetchAfter;
  #now;
  #fetch;
  #jwks = null; // the key set document as last fetched
  #fetchedAt = -Infinity;
  #imported = new Map(); // kid -> CryptoKey
  #seen = new Set(); // event ids and Svc-Delivery ids applied

  /** jobs maps a job id to the latest job data applied (the job's own status decides). */
  jobs = new Map();
  /** jwksFetches counts key-set fetches (the refetch policy is observable). */
  jwksFetches = 0;

  /**
   * @param {object} o
   * @param {string} o.account        this receiver's own account id (GET /v1/me `id`)
   * @param {string|URL} [o.jwksUrl]  {base_url}/.well-known/jwks.json (Ed25519 scheme)
   * @param {string} [o.secret]       the endpoint's whsec_ secret (earlier HMAC v1 scheme)
   * @param {number} [o.toleranceSeconds=300]
   * @param {number} [o.refetchAfterMs=60000] the least time between two key-set fetches
   * @param {() => number} [o.now]    milliseconds since the epoch
   * @param {typeof fetch} [o.fetch]
   */
  constructor({ account, jwksUrl, secret, toleranceSeconds = 300, refetchAfterMs = 60_000, now = Date.now, fetch = globalThis.fetch }) {
    if (!account) throw new TypeError("Receiver needs its own account id");
    this.#account = account;
    this.#jwksUrl = jwksUrl;
    this.#secret = secret;
    this.#tolerance = toleranceSeconds;
    this.#refetchAfter = refetchAfterMs;
    this.#now = now;
    this.#fetch = fetch;
  }

  async #refetch() {
    const at = this.#now();
    if (at - this.#fetchedAt < this.#refetchAfter) return false;
    this.#fetchedAt = at;
    this.jwksFetches++;
    const res = await this.#fetch(this.#jwksUrl);
    if (!res.ok) throw new Rejected("jwks_unavailable", `key set answered ${res.status}`);
    this.#jwks = await res.json();
    this.#imported.clear();
    return true;
  }

  /** keyFor returns the published key named kid, refetching the set (at most once a minute) when it is unknown. */
  async keyFor(kid) {
    let jwk = this.#jwks?.keys?.find((k) => k.kid === kid);
    if (!jwk && (await this.#refetch())) {
      jwk = this.#jwks?.keys?.find((k) => k.kid === kid);
    }
    if (!jwk) throw new Rejected("unknown_kid", `no published key has kid ${kid}`);
    let key = this.#imported.get(kid);
    if (!key) {
      key = await jose.importJWK(jwk, "EdDSA");
      this.#imported.set(kid, key);
    }
    return key;
  }

  async #publishedKeys() {
    if (!this.#jwks) await this.#refetch();
    return Promise.all((this.#jwks?.keys ?? []).map((k) => this.keyFor(k.kid)));
  }

  /**
   * verify checks a delivery's signatures, timestamp and account and returns its parsed body.
   * body must be the raw request bytes, read before any JSON parsing.
   */
  async verify(headers, body) {
    const raw = Buffer.from(body);
    const sig = parseSignature(header(headers, "svc-signature"));
    const age = this.#now() / 1000 - sig.t;
    if (Math.abs(age) > this.#tolerance) {
      throw new Rejected("stale_timestamp", `t is ${Math.round(age)} s from this receiver's clock`);
    }
    const signed = Buffer.concat([Buffer.from(`${sig.t}.`), raw]);
    if (sig.v2.length > 0) {
      if (!sig.kid) throw new Rejected("malformed_signature", "v2 without kid");
      const key = await this.keyFor(sig.kid);
      let ok = false;
      for (const v of sig.v2) {
        ok ||= await crypto.subtle.verify({ name: "Ed25519" }, key, jose.base64url.decode(v), signed);
      }
      if (!ok) throw new Rejected("bad_signature", "no v2 signature verifies");
    } else if (sig.v1.length > 0) {
      if (!this.#secret) throw new Rejected("bad_signature", "a v1 signature and no whsec_ secret to check it");
      const expected = createHmac("sha256", this.#secret).update(signed).digest();
      const ok = sig.v1.some((v) => {
        const given = Buffer.from(v, "hex");
        return given.length === expected.length && timingSafeEqual(given, expected);
      });
      if (!ok) throw new Rejected("bad_signature", "no v1 signature verifies");
    } else {
      throw new Rejected("malformed_signature", "neither v2 nor v1");
    }

    // The queue-protocol signature rides on every delivery; it is checked against the
    // published keys whenever this receiver knows where they are.
    const altSignature = header(headers, "x-alt-webhook-signature");
    if (altSignature && this.#jwksUrl) {
      const message = Buffer.from(
        [
          header(headers, "x-alt-webhook-request-id"),
          header(headers, "x-alt-webhook-user-id"),
          header(headers, "x-alt-webhook-timestamp"),
          createHash("sha256").update(raw).digest("hex"),
        ].join("\n"),
      );
      const signature = Buffer.from(altSignature, "hex");
      let ok = false;
      for (const key of await this.#publishedKeys()) {
        ok ||= await crypto.subtle.verify({ name: "Ed25519" }, key, signature, message);
      }
      if (!ok) throw new Rejected("bad_signature", "X-Alt-Webhook-Signature does not verify");
    }
    const altUser = header(headers, "x-alt-webhook-user-id");
    if (altUser !== undefined && altUser !== this.#account) {
      throw new Rejected("wrong_account", `X-Alt-Webhook-User-Id is ${altUser}`);
    }
    let envelope;
    try {
      envelope = JSON.parse(raw.toString("utf8"));
    } catch {
      throw new Rejected("malformed_body", "the body is not JSON");
    }
    if (envelope?.account !== this.#account) {
      throw new Rejected("wrong_account", `the delivery is for ${envelope?.account}`);
    }
    return envelope;
  }

  /**
   * handle is a whole endpoint: it answers what the service should be told. A refused
   * delivery gets 4xx (403 for another account's, including its challenge); a challenge
   * gets 200 with its nonce; a duplicate is acknowledged and not applied again.
   */
  async handle(headers, body) {
    let envelope;
    try {
      envelope = await this.verify(headers, body);
    } catch (err) {
      if (!(err instanceof Rejected)) throw err;
      return { status: err.reason === "wrong_account" ? 403 : 400, body: { error: err.reason } };
    }
    if (envelope.type === "webhook.challenge") {
      return { status: 200, body: { nonce: envelope.data?.nonce } };
    }
    const id = envelope.id ?? header(headers, "svc-delivery");
    if (id && this.#seen.has(id)) return { status: 200, body: { duplicate: true } };
    if (id) this.#seen.add(id);
    this.record(envelope);
    return { status: 200, body: { ok: true } };
  }

  /**
   * record applies the job carried by an event (`data`) or a per-request body (`payload`).
   * The job's own status decides, never the order of arrival: once a job is settled
   * (succeeded, failed, cancelled) nothing arriving later about it as unsettled replaces that.
   */
  record(envelope) {
    const job = envelope.data ?? envelope.payload;
    if (!job?.id) return;
    const prev = this.jobs.get(job.id);
    if (prev && TERMINAL.has(prev.status) && !TERMINAL.has(job.status)) return;
    this.jobs.set(job.id, job);
  }
}
