// The browser harness of the console tests: Debian's Chromium driven headless by
// playwright-core (no browser download: the package is the protocol client only), console
// users made with the CLI, sign-in, and screenshots of each page for the record.
//
//   import { launch, consoleUser, signIn, screenshot, skipWithoutChromium } from "../lib/browser.mjs";
//   test("…", { skip: skipWithoutChromium() }, async () => { const browser = await launch(); … });
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { randomUUID } from "node:crypto";
import { existsSync, mkdirSync } from "node:fs";
import path from "node:path";
import { chromium } from "playwright-core";

import { ACCOUNT, API_URL, BIN, DATA, SECRET } from "./env.mjs";

export const CHROMIUM = "/usr/bin/chromium";

// The console's session cookie (internal/console).
export const SESSION_COOKIE = "modelexec_session";

// skipWithoutChromium is the `skip` option of a browser test: false when Chromium is
// installed; without it a reason to skip on a developer's machine, and a failure under CI=true,
// where .ci/run installs it and its absence means the browser tests would silently not run.
export function skipWithoutChromium() {
  if (existsSync(CHROMIUM)) {
    return false;
  }
  if (process.env.CI === "true") {
    throw new Error(`${CHROMIUM} is missing under CI=true: .ci/run installs Debian's chromium; the console browser tests cannot run`);
  }
  return `${CHROMIUM} is missing: the console browser tests are skipped (apt-get install chromium to run them)`;
}

// launch starts headless Chromium. playwright-core gives every launch a fresh temporary
// profile (user data dir) that it removes on close, so no test sees another's cookies.
export function launch() {
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
      "--no-first-run",
      "--disable-quic",
    ],
  });
}

// openPage opens a page in a new context (its own cookie jar) on the console's host. The
// console asks window.confirm before destructive forms (revoke, delete); the page accepts
// those dialogs, as a person clicking OK would.
export async function openPage(browser) {
  const context = await browser.newContext({ baseURL: API_URL });
  const page = await context.newPage();
  page.on("dialog", (d) => d.accept());
  return { context, page };
}

// consoleUser creates a console user with the CLI (`modelexec users create`) for an account
// (the shared test account unless another is named), or an operator with {operator: true},
// and answers {id, email, password}.
export function consoleUser({ account = ACCOUNT, operator = false } = {}) {
  const email = `${operator ? "operator" : "user"}-${randomUUID()}@example.test`;
  const args = ["users", "create", "--data", DATA, "--secret", SECRET, "--email", email, "--json"];
  args.push(...(operator ? ["--operator"] : ["--account", account]));
  const out = JSON.parse(execFileSync(BIN, args, { encoding: "utf8" }));
  assert.equal(typeof out.password, "string", "users create prints the random password once");
  return { id: out.id, email: out.email, password: out.password };
}

// signIn fills the sign-in form and waits for the page it leads to: the overview for an
// account's user, the account list for an operator.
export async function signIn(page, { email, password }) {
  await page.goto(API_URL + "/console/sign-in");
  await page.fill('input[name="email"]', email);
  await page.fill('input[name="password"]', password);
  await Promise.all([
    page.waitForURL((u) => !u.pathname.startsWith("/console/sign-in"), { waitUntil: "load" }),
    page.click("#sign-in"),
  ]);
  assert.ok(await page.locator("#sign-out").count(), `signed in as ${email}: the page shows a sign-out button`);
}

// sessionToken answers the session cookie's value in a browser context (svc_ss_…), or
// undefined when there is none.
export async function sessionToken(context) {
  const c = (await context.cookies(API_URL + "/console/")).find((c) => c.name === SESSION_COOKIE);
  return c?.value;
}

// screenshot saves a full-page PNG as NAME.png in $INTEROP_SCREENSHOTS when it is set
// (.ci/run sets it); otherwise it does nothing.
export async function screenshot(page, name) {
  const dir = process.env.INTEROP_SCREENSHOTS;
  if (!dir) {
    return;
  }
  mkdirSync(dir, { recursive: true });
  await page.screenshot({ path: path.join(dir, `${name.replace(/[^A-Za-z0-9._-]+/g, "-")}.png`), fullPage: true });
}
