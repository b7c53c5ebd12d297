// The web console in a real browser (headless Chromium): sign-in and its session cookie, a key
// minted in the console and used against /v1/me, revoked in the console and refused, the
// session token refused by the API (KEY-15), sign-out ending the session (KEY-29), and forms
// refused without their CSRF token or from another origin. Each page is screenshotted.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import http from "node:http";

import { API_URL, newAccount } from "../lib/env.mjs";
import { consoleUser, launch, openPage, screenshot, sessionToken, signIn, skipWithoutChromium, SESSION_COOKIE } from "../lib/browser.mjs";

const skip = skipWithoutChromium();

// One account of its own: the tests mint and revoke keys and must not crowd the shared one.
let browser;
let account;
before(async () => {
  if (skip) return;
  browser = await launch();
  account = newAccount();
});
after(async () => {
  await browser?.close();
});

async function me(token) {
  const res = await fetch(API_URL + "/v1/me", { headers: { Authorization: `Bearer ${token}` } });
  const body = await res.json();
  return { status: res.status, body };
}

// KEY-29 / cookie flags: the session lives in an HttpOnly, SameSite=Lax cookie scoped to the
// console, that lasts the session's 12 hours.
test("KEY-29: sign-in sets an HttpOnly, SameSite=Lax session cookie on /console lasting 12 hours", { skip }, async () => {
  const { context, page } = await openPage(browser);
  try {
    await page.goto(API_URL + "/console/sign-in");
    await screenshot(page, "console-sign-in");
    // A wrong password answers the form again with 401 and says so.
    const user = consoleUser({ account });
    await page.fill('input[name="email"]', user.email);
    await page.fill('input[name="password"]', user.password + "x");
    const [wrong] = await Promise.all([page.waitForResponse((r) => r.request().method() === "POST"), page.click("#sign-in")]);
    assert.equal(wrong.status(), 401);
    assert.match(await page.locator('[role="alert"]').innerText(), /Wrong email or password/);
    assert.equal(await sessionToken(context), undefined, "no session after a wrong password");

    const before = Date.now();
    await signIn(page, user);
    assert.equal(new URL(page.url()).pathname, "/console/");
    assert.equal(await page.locator("#balance").innerText(), "100,000");
    await screenshot(page, "console-overview");

    const c = (await context.cookies(API_URL + "/console/")).find((c) => c.name === SESSION_COOKIE);
    assert.ok(c, "a session cookie is set");
    assert.match(c.value, /^svc_ss_/);
    assert.equal(c.httpOnly, true, "HttpOnly: page scripts cannot read the session");
    assert.equal(c.sameSite, "Lax");
    assert.equal(c.path, "/console");
    const lifetime = c.expires * 1000 - before;
    assert.ok(Math.abs(lifetime - 12 * 3600 * 1000) < 5 * 60 * 1000, `cookie lasts 12 hours, got ${lifetime / 3600000} h`);
    // Scripts on the page do not see it either.
    assert.doesNotMatch(await page.evaluate(() => document.cookie), /modelexec_session/);
  } finally {
    await context.close();
  }
});

test("KEY-23: a key minted in the console (scopes, 30 days, fixed ceiling) is shown once, works on /v1/me, is listed, and once revoked in the console is refused", { skip }, async () => {
  const { context, page } = await openPage(browser);
  try {
    await signIn(page, consoleUser({ account }));
    await page.goto(API_URL + "/console/keys");
    await screenshot(page, "console-keys");

    // Only image:write and webhooks:write of the optional scopes; the always-on ones stay.
    for (const box of await page.locator('#mint input[name="scope"]:not([disabled])').all()) {
      const want = ["image:write", "webhooks:write"].includes(await box.getAttribute("value"));
      await box.setChecked(want);
    }
    await page.selectOption('#mint select[name="expires_days"]', "30");
    await page.check('#mint input[name="ceiling_mode"][value="fixed"]');
    await page.fill('#mint input[name="ceiling"]', "1500");
    const [minted] = await Promise.all([page.waitForResponse((r) => r.request().method() === "POST"), page.click("#mint-key")]);
    await page.waitForLoadState("load");
    const alert = page.locator('[role="alert"]');
    assert.equal(minted.status(), 303, (await alert.count()) ? await alert.innerText() : "mint refused");
    await screenshot(page, "console-keys-minted");

    const key = (await page.locator("#new-key").innerText()).trim();
    assert.match(key, /^svc_sk_/);

    const got = await me(key);
    assert.equal(got.status, 200, JSON.stringify(got.body));
    assert.equal(got.body.id, account);
    const id = got.body.key.id;
    assert.deepEqual([...got.body.key.scopes].sort(), ["assets:read", "image:write", "jobs:read", "webhooks:write"]);
    assert.equal(got.body.key.credit_ceiling, 1500);

    // The list marks it: live, its ceiling, 30 days; a fresh 30-day key is not marked as
    // expiring (KEY-23 marks fewer than 14 days left).
    const row = page.locator(`#keys tr[data-key="${id}"]`);
    assert.equal(await row.count(), 1, "the new key is listed");
    assert.match((await row.getAttribute("class")) ?? "", /\blive\b/);
    assert.doesNotMatch((await row.getAttribute("class")) ?? "", /expiring/);
    assert.match(await row.innerText(), /1,500/);
    // Scopes are shown as words, each with its name as a tooltip.
    assert.match(await row.innerText(), /Make images/);
    assert.equal(await row.locator('li[title="image:write"]').count(), 1);
    const expires = new Date(Date.now() + 30 * 86400 * 1000).toISOString().slice(0, 10);
    assert.match(await row.innerText(), new RegExp(expires));

    // Shown once: the keys page read again does not carry it.
    await page.goto(API_URL + "/console/keys");
    assert.equal(await page.locator("#new-key").count(), 0);
    assert.ok(!(await page.content()).includes(key), "the key is not on the page again");

    // Revoke it from the page (the confirmation dialog is accepted).
    await Promise.all([
      page.waitForURL((u) => u.pathname === "/console/keys", { waitUntil: "load" }),
      page.locator(`#keys tr[data-key="${id}"] button.danger`).click(),
    ]);
    assert.match(await page.locator('[role="status"]').innerText(), new RegExp(`Key ${id} revoked`));
    assert.match((await page.locator(`#keys tr[data-key="${id}"]`).getAttribute("class")) ?? "", /\brevoked\b/);
    await screenshot(page, "console-keys-revoked");

    const refused = await me(key);
    assert.equal(refused.status, 401);
    assert.equal(refused.body.error, "key_revoked");
  } finally {
    await context.close();
  }
});

test("KEY-15: the browser's session token sent to /v1/me is refused with 401 invalid_api_key", { skip }, async () => {
  const { context, page } = await openPage(browser);
  try {
    await signIn(page, consoleUser({ account }));
    const token = await sessionToken(context);
    assert.match(token, /^svc_ss_/);
    for (const auth of [`Bearer ${token}`, `Key ${token}`]) {
      const res = await fetch(API_URL + "/v1/me", { headers: { Authorization: auth } });
      assert.equal(res.status, 401, auth.split(" ")[0]);
      const body = await res.json();
      assert.equal(body.error, "invalid_api_key");
      assert.match(body.message, /console session/);
    }
    // Still a live session: the console itself goes on working.
    await page.goto(API_URL + "/console/keys");
    assert.equal(new URL(page.url()).pathname, "/console/keys");
  } finally {
    await context.close();
  }
});

test("KEY-29: sign-out revokes the session: the old cookie is sent to sign-in and the token stays refused", { skip }, async () => {
  const { context, page } = await openPage(browser);
  let token;
  try {
    await signIn(page, consoleUser({ account }));
    token = await sessionToken(context);
    await Promise.all([page.waitForURL((u) => u.pathname === "/console/sign-in", { waitUntil: "load" }), page.click("#sign-out")]);
    assert.equal(await sessionToken(context), undefined, "the cookie is cleared");
    await screenshot(page, "console-signed-out");
  } finally {
    await context.close();
  }

  // A copy of the old cookie, replayed in a fresh browser context, gets the sign-in page.
  const { context: replay, page: again } = await openPage(browser);
  try {
    await replay.addCookies([{ name: SESSION_COOKIE, value: token, url: API_URL + "/console/", httpOnly: true, sameSite: "Lax" }]);
    await again.goto(API_URL + "/console/keys");
    const u = new URL(again.url());
    assert.equal(u.pathname, "/console/sign-in");
    assert.equal(u.searchParams.get("next"), "/console/keys");
  } finally {
    await replay.close();
  }
  // And from outside a browser: 303 to sign-in, never the page.
  const res = await fetch(API_URL + "/console/", { headers: { Cookie: `${SESSION_COOKIE}=${token}` }, redirect: "manual" });
  assert.equal(res.status, 303);
  assert.match(res.headers.get("location") ?? "", /^\/console\/sign-in/);

  const refused = await me(token);
  assert.equal(refused.status, 401);
  assert.equal(refused.body.error, "invalid_api_key");
});

test("a console form POST without its csrf field, or sent from another origin, is refused with 403", { skip }, async () => {
  const { context, page } = await openPage(browser);
  // A page on another origin (another port of 127.0.0.1) holding a copy of the mint form.
  let formHTML = "";
  const other = http.createServer((req, res) => {
    res.writeHead(200, { "Content-Type": "text/html; charset=utf-8" });
    res.end(`<!doctype html><title>elsewhere</title>${formHTML}`);
  });
  await new Promise((ok) => other.listen(0, "127.0.0.1", ok));
  try {
    await signIn(page, consoleUser({ account }));
    await page.goto(API_URL + "/console/keys");
    const before = await page.locator("#keys tbody tr[data-key]").count();

    // The same form with its csrf field taken out.
    await page.evaluate(() => document.querySelector('#mint input[name="csrf"]').remove());
    const [noToken] = await Promise.all([page.waitForResponse((r) => r.request().method() === "POST"), page.click("#mint-key")]);
    assert.equal(noToken.status(), 403);
    assert.match(await page.locator('[role="alert"]').innerText(), /did not come from this console/);
    await screenshot(page, "console-csrf-refused");

    // The whole form, valid csrf field included, submitted from another origin.
    await page.goto(API_URL + "/console/keys");
    const csrf = await page.locator('#mint input[name="csrf"]').getAttribute("value");
    formHTML = `<form method="post" action="${API_URL}/console/keys"><input type="hidden" name="csrf" value="${csrf}">` +
      `<input type="hidden" name="expires_days" value="30"><button id="go">go</button></form>`;
    await page.goto(`http://127.0.0.1:${other.address().port}/`);
    const [crossOrigin] = await Promise.all([page.waitForResponse((r) => r.request().method() === "POST"), page.click("#go")]);
    assert.equal(crossOrigin.status(), 403);
    assert.match(await page.locator('[role="alert"]').innerText(), /another site/);
    await screenshot(page, "console-cross-origin-refused");

    // Neither minted a key.
    await page.goto(API_URL + "/console/keys");
    assert.equal(await page.locator("#keys tbody tr[data-key]").count(), before);
  } finally {
    other.close();
    await context.close();
  }
});
