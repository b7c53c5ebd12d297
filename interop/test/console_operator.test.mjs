// The operator pages in a real browser: an operator creates an account, grants it credits and
// a pass, changes its status, creates its console user (the password shown once); that user
// signs in and sees the balance. Every change is read back with the CLI, which reads the same
// ledger. Other users are told the operator pages do not exist.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";

import { API_URL, BIN, DATA, SECRET } from "../lib/env.mjs";
import { consoleUser, launch, openPage, screenshot, signIn, skipWithoutChromium } from "../lib/browser.mjs";

const skip = skipWithoutChromium();

let browser;
before(async () => {
  if (!skip) browser = await launch();
});
after(async () => {
  await browser?.close();
});

function showAccount(id) {
  return JSON.parse(execFileSync(BIN, ["accounts", "show", id, "--data", DATA, "--secret", SECRET, "--json"], { encoding: "utf8" }));
}

// submit clicks a form's button and waits for the page the answer leads to.
async function submit(page, form) {
  const [res] = await Promise.all([
    page.waitForResponse((r) => r.request().method() === "POST"),
    page.locator(`${form} button[type="submit"]`).click(),
  ]);
  await page.waitForLoadState("load");
  return res;
}

test("an operator creates an account and its user and grants credits; the user signs in and sees the balance", { skip }, async () => {
  const { context, page } = await openPage(browser);
  let account;
  let user;
  try {
    await signIn(page, consoleUser({ operator: true }));
    assert.equal(new URL(page.url()).pathname, "/console/operator/accounts", "an operator's home is the account list");
    await screenshot(page, "operator-accounts");

    // Create: max plan, 1,234 opening credits, the plan's allowance.
    await page.selectOption('#create-account select[name="plan"]', "max");
    await page.fill('#create-account input[name="credits"]', "1,234");
    const created = await submit(page, "#create-account");
    assert.equal(created.status(), 303);
    const m = new URL(page.url()).pathname.match(/^\/console\/operator\/accounts\/(acct_[a-z0-9]+)$/);
    assert.ok(m, `lands on the new account's page, got ${page.url()}`);
    account = m[1];
    assert.match(await page.locator('[role="status"]').innerText(), /created on the max plan with 1,234 credits/);
    assert.equal(await page.locator("#balance").innerText(), "1,234");
    assert.equal(await page.locator("#plan").innerText(), "max");
    assert.equal(await page.locator("#allowance").innerText(), "6,000");
    assert.equal(await page.locator("#status").innerText(), "live");

    // Grant 5,000 credits, then remove 34.
    await page.fill('#grant-credits input[name="amount"]', "5000");
    await submit(page, "#grant-credits");
    assert.match(await page.locator('[role="status"]').innerText(), /Granted 5,000 credits; the balance is now 6,234/);
    await page.fill('#grant-credits input[name="amount"]', "-34");
    await submit(page, "#grant-credits");
    assert.match(await page.locator('[role="status"]').innerText(), /Removed 34 credits; the balance is now 6,200/);
    assert.equal(await page.locator("#balance").innerText(), "6,200");

    // A zero grant is refused on the page, and changes nothing.
    await page.fill('#grant-credits input[name="amount"]', "0");
    assert.equal((await submit(page, "#grant-credits")).status(), 400);
    assert.match(await page.locator('[role="alert"]').innerText(), /other than zero/);

    // A pass for one model (named by its address, as the CLI takes it too), ten uses, a
    // week; a promotion for every model.
    await page.fill('#grant-pass input[name="name"]', "launch week");
    await page.fill('#grant-pass input[name="models"]', "svc-serverless/image-4b");
    await page.fill('#grant-pass input[name="uses"]', "10");
    await page.fill('#grant-pass input[name="expires_days"]', "7");
    await submit(page, "#grant-pass");
    assert.match(await page.locator('[role="status"]').innerText(), /Pass "launch week" \(pass_[a-z0-9]+\) granted/);
    const row = page.locator("#passes tbody tr[data-pass]");
    assert.equal(await row.count(), 1);
    assert.match(await row.innerText(), /launch week[\s\S]*image-4b[\s\S]*10[\s\S]*active/);
    await page.fill('#grant-pass input[name="name"]', "spring");
    await page.selectOption('#grant-pass select[name="kind"]', "promotion");
    await submit(page, "#grant-pass");
    assert.equal(await page.locator("#passes tbody tr[data-pass]").count(), 2);
    // A forged kind, or a use count of -1 typed in, grants nothing.
    await page.fill('#grant-pass input[name="name"]', "forged");
    await page.locator('#grant-pass select[name="kind"]').evaluate((s) => { s.options[0].value = "bogus"; s.value = "bogus"; });
    assert.equal((await submit(page, "#grant-pass")).status(), 400);
    assert.match(await page.locator('[role="alert"]').innerText(), /pass or promotion/);
    await page.fill('#grant-pass input[name="name"]', "forged");
    await page.selectOption('#grant-pass select[name="kind"]', "promotion");
    await page.fill('#grant-pass input[name="uses"]', "-1");
    assert.equal((await submit(page, "#grant-pass")).status(), 400);
    assert.equal(await page.locator("#passes tbody tr[data-pass]").count(), 2);

    // Status: limited, then live again (the change asks for confirmation, accepted).
    await page.selectOption('#set-status select[name="status"]', "limited");
    await submit(page, "#set-status");
    assert.equal(await page.locator("#status").innerText(), "limited");
    assert.equal(showAccount(account).status, "limited");
    await page.selectOption('#set-status select[name="status"]', "live");
    await submit(page, "#set-status");
    assert.equal(await page.locator("#status").innerText(), "live");

    // Plan and allowance.
    await page.selectOption('#set-plan select[name="plan"]', "pro");
    await submit(page, "#set-plan");
    assert.equal(await page.locator("#plan").innerText(), "pro");
    assert.equal(await page.locator("#allowance").innerText(), "2,000");
    await page.fill('#set-allowance input[name="allowance"]', "2500");
    await submit(page, "#set-allowance");
    assert.equal(await page.locator("#allowance").innerText(), "2,500");

    // Its console user: a random password, shown once.
    const email = `owner-${account}@example.test`;
    await page.fill('#create-user input[name="email"]', email);
    const made = await submit(page, "#create-user");
    assert.equal(made.status(), 303, "post/redirect/get: the account page shows the password once");
    const password = (await page.locator("#new-password").innerText()).trim();
    assert.ok(password.length >= 10, "a random password is shown");
    assert.match(await page.locator("#users").innerText(), new RegExp(email.replace(/[.]/g, "\\.")));
    await screenshot(page, "operator-account");
    user = { email, password };
    await page.goto(API_URL + `/console/operator/accounts/${account}`);
    assert.equal(await page.locator("#new-password").count(), 0, "the password is not shown again");
    assert.ok(!(await page.content()).includes(password));

    // The same email again is refused.
    await page.fill('#create-user input[name="email"]', email);
    assert.equal((await submit(page, "#create-user")).status(), 409);

    // The new account heads the list (newest first).
    await page.goto(API_URL + "/console/operator/accounts");
    assert.equal(await page.locator("#accounts tbody tr[data-account]").first().getAttribute("data-account"), account);
  } finally {
    await context.close();
  }

  // The CLI reads the same ledger.
  const shown = showAccount(account);
  assert.equal(shown.balance, 6200);
  assert.equal(shown.plan, "pro");
  assert.equal(shown.monthly_allowance, 2500);
  assert.equal(shown.status, "live");

  // The account's user signs in and sees the balance; the operator pages do not exist for them.
  const { context: theirs, page: their } = await openPage(browser);
  try {
    await signIn(their, user);
    assert.equal(new URL(their.url()).pathname, "/console/");
    assert.equal(await their.locator("#balance").innerText(), "6,200");
    assert.match(await their.locator(".who .account").innerText(), new RegExp(account));
    await screenshot(their, "operator-created-user-overview");
    const res = await their.goto(API_URL + "/console/operator/accounts");
    assert.equal(res.status(), 404);
    const detail = await their.goto(API_URL + `/console/operator/accounts/${account}`);
    assert.equal(detail.status(), 404);
  } finally {
    await theirs.close();
  }
});

test("an unknown account on the operator pages is 404, a grant to it too", { skip }, async () => {
  const { context, page } = await openPage(browser);
  try {
    await signIn(page, consoleUser({ operator: true }));
    const res = await page.goto(API_URL + "/console/operator/accounts/acct_doesnotexist0000");
    assert.equal(res.status(), 404);
    // A well-formed grant (the session's own csrf token) to it is 404 as well.
    const csrf = await page.locator('header input[name="csrf"]').getAttribute("value");
    const grant = await page.request.post(API_URL + "/console/operator/accounts/acct_doesnotexist0000/credits", {
      form: { csrf, amount: "5" },
      maxRedirects: 0,
    });
    assert.equal(grant.status(), 404);
  } finally {
    await context.close();
  }
});
