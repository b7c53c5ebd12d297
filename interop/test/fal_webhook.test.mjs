// @fal-ai/client's webhookUrl, delivered for real (issue 14 item 4): a submit through the fal
// client names an https receiver of this test's own on 127.0.0.1 (run.sh starts the server
// trusting the receiver's self-signed certificate and allowing 127.0.0.1 with
// --webhook-allow-private); the job's delivery arrives signed, and the reference receiver
// verifies it against the keys the server publishes (JWKS) before it is believed.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import https from "node:https";

import { Receiver } from "../lib/receiver.mjs";
import { ACCOUNT, API_URL, falClient, MODEL, SMALL } from "../lib/env.mjs";

const TLS_KEY = process.env.INTEROP_TLS_KEY;
const TLS_CERT = process.env.INTEROP_TLS_CERT;

// listen starts an https receiver; each POST is answered by receiver.handle and reported.
async function listen(receiver) {
  const arrived = [];
  let notify = () => {};
  const server = https.createServer({ key: readFileSync(TLS_KEY), cert: readFileSync(TLS_CERT) }, (req, res) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", async () => {
      const body = Buffer.concat(chunks);
      const answer = await receiver.handle(req.headers, body);
      arrived.push({ path: req.url, headers: req.headers, body, answer });
      res.writeHead(answer.status, { "Content-Type": "application/json" });
      res.end(JSON.stringify(answer.body));
      notify();
    });
  });
  await new Promise((ok) => server.listen(0, "127.0.0.1", ok));
  const next = (ms) =>
    new Promise((ok, fail) => {
      if (arrived.length > 0) return ok(arrived.shift());
      const timer = setTimeout(() => fail(new Error(`no delivery within ${ms} ms`)), ms);
      notify = () => {
        clearTimeout(timer);
        ok(arrived.shift());
      };
    });
  return { url: `https://127.0.0.1:${server.address().port}/hook`, next, close: () => server.close() };
}

test("webhookUrl: the job's result is delivered to the receiver, signed and verified with the JWKS", { skip: !TLS_CERT && "no receiver certificate (openssl missing)" }, async () => {
  const receiver = new Receiver({ account: ACCOUNT, jwksUrl: `${API_URL}/.well-known/jwks.json` });
  const hook = await listen(receiver);
  try {
    const { client } = falClient();
    const { request_id: requestId } = await client.queue.submit(MODEL, { input: SMALL, webhookUrl: hook.url });
    assert.ok(requestId, "the submit answered a request id");
    const d = await hook.next(30_000);
    assert.equal(d.path, "/hook");
    assert.equal(d.answer.status, 200, `the receiver refused the delivery: ${JSON.stringify(d.answer.body)}`);
    assert.ok(d.headers["svc-signature"], "the delivery is signed");
    const envelope = JSON.parse(d.body.toString("utf8"));
    assert.equal(envelope.account, ACCOUNT);
    assert.ok(JSON.stringify(envelope).includes(requestId), `the delivery names the request: ${d.body}`);
    const job = envelope.data ?? envelope.payload;
    assert.ok(job, `the delivery carries the job: ${d.body}`);
    // A forged copy (one byte of the body changed) is refused by the same receiver.
    const forged = Buffer.from(d.body);
    forged[forged.length - 2] ^= 1;
    const refusal = await receiver.handle(d.headers, forged);
    assert.equal(refusal.status, 400);
  } finally {
    hook.close();
  }
});
