// The console's webhooks page in a real browser (headless Chromium): register an endpoint
// whose receiver (an https server of this test's own on 127.0.0.1, trusted by the server
// through run.sh's SSL_CERT_FILE and allowed by --webhook-allow-private) answers the
// challenge, see it verified, send a test event and see the receiver get it with a signature
// that verifies against the published keys, see the delivery listed with its attempt and
// response code, then delete the endpoint. Screenshots of each step.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import https from "node:https";

import { API_URL, newAccount } from "../lib/env.mjs";
import { Receiver } from "../lib/receiver.mjs";
import { consoleUser, launch, openPage, screenshot, signIn, skipWithoutChromium } from "../lib/browser.mjs";

const TLS_KEY = process.env.INTEROP_TLS_KEY;
const TLS_CERT = process.env.INTEROP_TLS_CERT;

// listen starts an https endpoint answered by the reference receiver; every request is kept.
async function listen(receiver) {
  const arrived = [];
  const server = https.createServer({ key: readFileSync(TLS_KEY), cert: readFileSync(TLS_CERT) }, (req, res) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", async () => {
      const body = Buffer.concat(chunks);
      const answer = await receiver.handle(req.headers, body);
      arrived.push({ headers: req.headers, body, answer });
      res.writeHead(answer.status, { "Content-Type": "application/json" });
      res.end(JSON.stringify(answer.body));
    });
  });
  await new Promise((ok) => server.listen(0, "127.0.0.1", ok));
  return { url: `https://127.0.0.1:${server.address().port}/hooks/modelexec`, arrived, close: () => server.close() };
}

// submitAndWait clicks a form's button and waits for the page the form leads to.
async function submitAndWait(page, selector) {
  await Promise.all([page.waitForNavigation({ waitUntil: "load" }), page.click(selector)]);
}

const skip = skipWithoutChromium() || (!TLS_CERT && "no receiver certificate (openssl missing)");

test("console webhooks: add a verified endpoint, send a signed test event, see the delivery, delete it", { skip }, async () => {
  const account = newAccount();
  const user = consoleUser({ account });
  const receiver = new Receiver({ account, jwksUrl: `${API_URL}/.well-known/jwks.json` });
  const hook = await listen(receiver);
  const browser = await launch();
  try {
    const { page } = await openPage(browser);
    await signIn(page, user);
    await page.goto(API_URL + "/console/webhooks");
    assert.equal(await page.locator("#no-webhooks").count(), 1, "a new account has no endpoints");
    await screenshot(page, "console-webhooks-empty");

    // A URL the API would refuse is refused here too, with the reason.
    await page.fill('#add-webhook input[name="url"]', "http://example.com/hook");
    await submitAndWait(page, "#add-webhook-submit");
    assert.match(await page.locator("p.error").innerText(), /https/i);

    await page.fill('#add-webhook input[name="url"]', hook.url);
    await submitAndWait(page, "#add-webhook-submit");
    assert.match(await page.locator("p.flash").innerText(), /registered and verified/);
    const section = page.locator("section.webhook");
    assert.equal(await section.count(), 1);
    const id = await section.getAttribute("data-webhook");
    assert.match(id, /^wh_/);
    assert.equal(await section.locator(".status").innerText(), "active");
    assert.equal(await section.locator(".url").innerText(), hook.url);
    const challenge = hook.arrived.find((a) => a.headers["svc-event"] === "webhook.challenge");
    assert.ok(challenge, "the receiver was challenged");
    assert.equal(challenge.answer.status, 200, `the receiver refused the challenge: ${JSON.stringify(challenge.answer.body)}`);
    await screenshot(page, "console-webhooks-verified");

    await submitAndWait(page, `section[data-webhook="${id}"] button.send-test`);
    assert.match(await page.locator("p.flash").innerText(), new RegExp(`Test event delivered to ${id} \\(HTTP 200`));
    const test = hook.arrived.find((a) => a.headers["svc-event"] === "webhook.test");
    assert.ok(test, "the receiver got the test event");
    // The reference receiver checked the timestamp, the Ed25519 signature against the JWKS by
    // kid, X-Alt-Webhook-Signature and the account before answering 200.
    assert.equal(test.answer.status, 200, `the receiver refused the test event: ${JSON.stringify(test.answer.body)}`);
    const envelope = await receiver.verify(test.headers, test.body);
    assert.equal(envelope.type, "webhook.test");
    assert.equal(envelope.account, account);
    assert.equal(envelope.webhook_id, id);
    assert.match(envelope.id, /^evt_test_/);

    const delivery = test.headers["svc-delivery"];
    const row = page.locator(`tr[data-delivery="${delivery}"]`);
    assert.equal(await row.count(), 1, `delivery ${delivery} is listed`);
    assert.equal(await row.getAttribute("data-event"), "webhook.test");
    assert.equal(await row.locator(".attempts").innerText(), "1");
    assert.equal(await row.locator(".status-code").innerText(), "200");
    assert.match(await row.innerText(), /delivered/);
    await screenshot(page, "console-webhooks-test-event");

    await submitAndWait(page, `section[data-webhook="${id}"] button.delete`);
    assert.match(await page.locator("p.flash").innerText(), new RegExp(`Endpoint ${id} deleted`));
    assert.equal(await page.locator("section.webhook").count(), 0);
    assert.equal(await page.locator("#no-webhooks").count(), 1);
    await screenshot(page, "console-webhooks-deleted");
  } finally {
    await browser.close();
    hook.close();
  }
});
