// The playground's script in a real browser (headless Chromium) when things go wrong: a lost
// progress poll, a form sent again, a session that ended while the form was being filled, and
// field problems shown beside their fields.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";

import { API_URL, newAccount } from "../lib/env.mjs";
import { consoleUser, launch, openPage, signIn, skipWithoutChromium } from "../lib/browser.mjs";

const skip = skipWithoutChromium();

let browser;
let user;
before(async () => {
  if (skip) return;
  browser = await launch();
  user = consoleUser({ account: newAccount() });
});
after(async () => {
  await browser?.close();
});

// runAndWait presses Run and waits for the output box to link a job page other than the one it
// linked before (previous); it answers that link's path.
async function runAndWait(page, previous) {
  await page.locator("#run").press("Enter");
  const handle = await page.waitForFunction(
    (prev) => {
      const a = document.querySelector("#run-output a.job-link");
      const path = a && new URL(a.href).pathname;
      return path && path !== prev ? path : null;
    },
    previous,
    { timeout: 60_000 },
  );
  return handle.jsonValue();
}

test("playground: a lost progress poll is tried again, and the next run is a new job with the new prompt", { skip }, async () => {
  const { context, page } = await openPage(browser);
  try {
    await signIn(page, user);
    await page.goto(API_URL + "/console/playground?model=image-lite");
    await page.fill('[name="in.positivePrompt"]', "a red bicycle");
    await page.locator("#quote-credits").waitFor({ timeout: 10_000 });
    // The first poll of the live view is lost, as on a network drop.
    let dropped = 0;
    await page.route("**/console/jobs/*/live", (route) => (dropped++ === 0 ? route.abort("internetdisconnected") : route.continue()));
    const first = await runAndWait(page, null);
    assert.ok(dropped >= 2, `the lost poll was tried again (${dropped} polls)`);
    assert.equal(await page.locator("#run-state").innerText(), "succeeded");

    await page.fill('[name="in.positivePrompt"]', "a blue whale");
    const spentKey = await page.inputValue('[name="idempotency_key"]');
    const second = await runAndWait(page, first);
    assert.notEqual(second, first, "the second run is a new job");
    assert.equal(await page.locator("#run-replayed").count(), 0, "a new run does not say it was already sent");
    const input = await page.evaluate(async (p) => (await fetch(p)).text(), second);
    assert.match(input, /a blue whale/, "the second job ran the new prompt");

    // The same form sent again (its key put back) answers the run it started, and says so.
    await page.evaluate((k) => {
      document.querySelector('[name="idempotency_key"]').value = k;
    }, spentKey);
    await page.locator("#run").press("Enter");
    await page.locator("#run-replayed").waitFor({ timeout: 10_000 });
    assert.match(await page.locator("#run-replayed").innerText(), /This form was already sent: showing the run it started/);
    await page.locator("#run-output a.job-link").waitFor({ timeout: 60_000 });
    assert.equal(new URL(await page.locator("#run-output a.job-link").evaluate((a) => a.href)).pathname, second);
  } finally {
    await context.close();
  }
});

test("playground: when the session ends, the page stays, says so, and what was typed comes back after signing in again", { skip }, async () => {
  const { context, page } = await openPage(browser);
  try {
    await signIn(page, user);
    await page.goto(API_URL + "/console/playground?model=image-lite");
    await page.fill('[name="in.positivePrompt"]', "a green kite over the sea");
    await page.locator("#quote-credits").waitFor({ timeout: 10_000 });
    const playground = page.url();

    // The session ends elsewhere: signed out from another tab.
    const other = await context.newPage();
    await other.goto(API_URL + "/console/");
    await Promise.all([other.waitForURL(/\/console\/sign-in/), other.locator("#sign-out").click()]);
    await other.close();

    // A field changed: the price box says the session ended; the tab does not move.
    await page.fill('[name="in.negativePrompt"]', "no clouds");
    await page.locator("#quote .session-ended").waitFor({ timeout: 10_000 });
    assert.match(await page.locator("#quote .session-ended").innerText(), /Your session ended/);
    assert.equal(page.url(), playground, "the tab stays on the playground");
    assert.equal(await page.inputValue('[name="in.positivePrompt"]'), "a green kite over the sea");
    // Run says the same and sends nothing.
    await page.locator("#run").press("Enter");
    await page.locator("#run-output .session-ended").waitFor({ timeout: 10_000 });
    assert.match(await page.locator("#run-output .session-ended").innerText(), /the run was not sent/);
    assert.equal(page.url(), playground, "Run does not leave the playground either");

    // Signing in again from the link leads back here with the fields as they were.
    await Promise.all([page.waitForURL(/\/console\/sign-in/), page.locator("#quote a.sign-in-again").click()]);
    await page.fill('input[name="email"]', user.email);
    await page.fill('input[name="password"]', user.password);
    await Promise.all([page.waitForURL((u) => u.pathname === "/console/playground"), page.click("#sign-in")]);
    assert.equal(await page.inputValue('[name="in.positivePrompt"]'), "a green kite over the sea");
    assert.equal(await page.inputValue('[name="in.negativePrompt"]'), "no clouds");
    await page.locator("#quote-credits").waitFor({ timeout: 10_000 });
  } finally {
    await context.close();
  }
});
