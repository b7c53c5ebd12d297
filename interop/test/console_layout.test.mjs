// The console as a person meets it on a phone and on a laptop (headless Chromium): every page
// fits the viewport at 390x844 and at 1280x800 (no sideways scrolling; wide tables scroll in
// their own box), with a screenshot of each; a reload after minting a key mints nothing; the
// API's warnings reach the playground's price and the job page; a failed job's page shows its
// code and a sentence, not the runner's error chain; the key form's ceiling has a label of its
// own; and a skip link is the first stop of the keyboard.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";

import { ACCOUNT, API_URL, SMALL, newAccount } from "../lib/env.mjs";
import { consoleUser, launch, openPage, screenshot, signIn, skipWithoutChromium } from "../lib/browser.mjs";

const skip = skipWithoutChromium();
const SIZES = [
  { name: "phone", width: 390, height: 844 },
  { name: "laptop", width: 1280, height: 800 },
];

let browser;
let account;
let user;
let operator;
const jobs = {}; // ok and failed job ids, made by the tests below and visited by the last one

before(async () => {
  if (skip) return;
  browser = await launch();
  account = newAccount();
  user = consoleUser({ account });
  operator = consoleUser({ operator: true });
});
after(async () => {
  await browser?.close();
});

// fill sets the playground's model fields by name (in.<name>).
async function fill(page, fields) {
  for (const [name, value] of Object.entries(fields)) {
    const el = page.locator(`[name="in.${name}"]`);
    if ((await el.evaluate((e) => e.tagName)) === "SELECT") {
      await el.selectOption(String(value));
    } else {
      await el.fill(String(value));
    }
  }
}

// run sends the playground's form, waits for the run to settle beside the fields, and opens
// the job's page.
async function run(page) {
  await page.locator("#run").press("Enter");
  await page.locator("#run-output a.job-link").waitFor({ timeout: 60_000 });
  await Promise.all([page.waitForURL(/\/console\/jobs\/[^/]+\?submitted=1$/), page.locator("#run-output a.job-link").press("Enter")]);
  const id = decodeURIComponent(new URL(page.url()).pathname.split("/").pop());
  await page.locator('#job[data-settled="true"]').waitFor({ timeout: 60_000 });
  return id;
}

async function liveKeyRows(page) {
  return page.locator('#keys tbody tr.live:not(.console)').count();
}

test("a reload after minting a key mints nothing and does not show the key again", { skip }, async () => {
  const { context, page } = await openPage(browser);
  try {
    await signIn(page, user);
    await page.goto(API_URL + "/console/keys");
    const before = await liveKeyRows(page);
    await Promise.all([page.waitForURL(API_URL + "/console/keys"), page.locator("#mint-key").press("Enter")]);
    const key = (await page.locator("#new-key").innerText()).trim();
    assert.match(key, /\S{20,}/, "the new key is shown once");
    assert.equal(await liveKeyRows(page), before + 1);
    await page.reload({ waitUntil: "load" });
    assert.equal(await liveKeyRows(page), before + 1, "the reload minted no second key");
    assert.equal(await page.locator("#new-key").count(), 0, "the key is not shown again");
    assert.ok(!(await page.content()).includes(key));
  } finally {
    await context.close();
  }
});

test("the key form's credit ceiling input has a label of its own", { skip }, async () => {
  const { context, page } = await openPage(browser);
  try {
    await signIn(page, user);
    await page.goto(API_URL + "/console/keys");
    const input = page.getByLabel("Ceiling in credits a month", { exact: true });
    assert.equal(await input.count(), 1);
    assert.equal(await input.getAttribute("name"), "ceiling");
    assert.deepEqual(await unnamedControls(page), [], "every control of the page has an accessible name");
  } finally {
    await context.close();
  }
});

test("Tab reaches every control of the keys page and the playground, each with a visible focus", { skip }, async () => {
  const { context, page } = await openPage(browser);
  try {
    await signIn(page, user);
    for (const path of ["/console/keys", "/console/playground?model=image-4b"]) {
      await page.goto(API_URL + path);
      // The controls a person can reach: not hidden, not disabled, not inside a closed <details>;
      // a group of radio buttons is one stop (the arrows move within it).
      const reachable = await page.locator("a[href], input:not([type=hidden]), select, textarea, button, summary").evaluateAll((els) => {
        const radios = new Set();
        return els.filter((e) => {
          if (e.disabled || e.getClientRects().length === 0 || e.closest("details:not([open]) > :not(summary)")) return false;
          if (e.type === "radio") {
            if (radios.has(e.name)) return false;
            radios.add(e.name);
          }
          return true;
        }).length;
      });
      const seen = new Set();
      const dull = [];
      for (let i = 0; i < reachable + 5 && seen.size < reachable; i++) {
        await page.keyboard.press("Tab");
        const f = await page.evaluate(() => {
          const e = document.activeElement;
          if (!e || e === document.body) return null;
          const st = getComputedStyle(e);
          const key = e.outerHTML.slice(0, 80) + "#" + [...document.querySelectorAll("*")].indexOf(e);
          return { key, visible: st.outlineStyle !== "none" && parseFloat(st.outlineWidth) > 0 };
        });
        if (!f) continue;
        seen.add(f.key);
        if (!f.visible) dull.push(f.key);
      }
      assert.equal(seen.size, reachable, `${path}: Tab reached ${seen.size} of ${reachable} controls`);
      assert.deepEqual(dull, [], `${path}: controls without a visible focus`);
    }
  } finally {
    await context.close();
  }
});

test("image-4b with only a width: the price box and the job page show the width_height_pair warning", { skip }, async () => {
  const { context, page } = await openPage(browser);
  try {
    await signIn(page, user);
    await page.goto(API_URL + "/console/playground?model=image-4b");
    await fill(page, { positivePrompt: "a lighthouse at dusk", width: 256, steps: 1 });
    await page.locator("#quote .quote-warning").waitFor({ timeout: 10_000 });
    assert.match(await page.locator("#quote").innerText(), /width_height_pair/);
    await page.locator("#run").press("Enter");
    await page.locator("#run-output a.job-link").waitFor({ timeout: 60_000 });
    assert.match(await page.locator("#run-output .run-warning").innerText(), /width_height_pair/, "the warning beside the output");
    await screenshot(page, "playground-warning-output");
    await Promise.all([page.waitForURL(/\/console\/jobs\/[^/]+\?submitted=1$/), page.locator("#run-output a.job-link").press("Enter")]);
    jobs.ok = decodeURIComponent(new URL(page.url()).pathname.split("/").pop());
    // The job's page shows the warning once; a later visit does not (it belongs to the run's
    // answer).
    assert.match(await page.locator("#job-warnings").innerText(), /width_height_pair/);
    await page.reload();
    assert.equal(await page.locator("#job-warnings").count(), 0);
  } finally {
    await context.close();
  }
});

test("a failed job's page shows the error code and a sentence, not the error chain, and fits 1280", { skip }, async () => {
  const { context, page } = await openPage(browser);
  try {
    await signIn(page, user);
    await page.goto(API_URL + "/console/playground?model=image-edit");
    await fill(page, {
      positivePrompt: "a red door",
      width: 256,
      height: 256,
      steps: 1,
      "inputs.referenceImages": "https://127.0.0.1:1/missing.png",
    });
    jobs.failed = await run(page);
    assert.equal(await page.locator("#job-state").innerText(), "failed");
    const code = await page.locator("#job-error-code").innerText();
    assert.match(code, /^[a-z_]+$/);
    const sentence = await page.locator("#job-error .error-sentence").innerText();
    assert.match(sentence, /^[A-Z].*\.$/, "a sentence for a person");
    assert.equal(await page.locator("#job-error pre").count(), 0, "no raw error block");
    await page.setViewportSize({ width: 1280, height: 800 });
    const w = await page.evaluate(() => [document.documentElement.scrollWidth, window.innerWidth]);
    assert.ok(w[0] <= w[1], `the failed job's page is ${w[0]} px wide at ${w[1]}`);
  } finally {
    await context.close();
  }
});

// unnamedControls lists the page's form controls that have no accessible name (no label, no
// aria-label, no text of their own).
function unnamedControls(page) {
  return page.locator("input:not([type=hidden]), select, textarea, button").evaluateAll((els) =>
    els
      .filter((e) => !(e.labels?.length || e.getAttribute("aria-label") || e.getAttribute("aria-labelledby") || (e.tagName === "BUTTON" && e.textContent.trim())))
      .map((e) => e.outerHTML.slice(0, 120)),
  );
}

// fits measures the page against the viewport, checks its controls are named, and keeps a
// screenshot of it.
async function fits(page, name, size, wide) {
  for (const c of await unnamedControls(page)) {
    wide.push(`${name}: a control without a name: ${c}`);
  }
  const [scroll, inner] = await page.evaluate(() => [document.documentElement.scrollWidth, window.innerWidth]);
  await screenshot(page, `layout-${size.name}-${name}`);
  if (scroll > inner) {
    wide.push(`${name} at ${size.width}: ${scroll} px`);
  }
}

test("every page fits the viewport at 390x844 and at 1280x800, and the skip link comes first", { skip }, async () => {
  assert.ok(jobs.ok && jobs.failed, "the tests above made a finished and a failed job");
  const pages = {
    overview: "/console/",
    keys: "/console/keys",
    webhooks: "/console/webhooks",
    jobs: "/console/jobs",
    "job-succeeded": `/console/jobs/${jobs.ok}`,
    "job-failed": `/console/jobs/${jobs.failed}`,
    usage: "/console/usage",
    playground: "/console/playground",
    "playground-image-4b": "/console/playground?model=image-4b",
    "not-found": "/console/no-such-page",
  };
  const operatorPages = { "operator-accounts": "/console/operator/accounts", "operator-account": `/console/operator/accounts/${ACCOUNT}` };
  const wide = [];
  const firstStops = []; // what the first Tab reaches on each signed-in page
  for (const size of SIZES) {
    const anon = await browser.newContext({ baseURL: API_URL, viewport: { width: size.width, height: size.height } });
    const signInPage = await anon.newPage();
    await signInPage.goto(API_URL + "/console/sign-in");
    await fits(signInPage, "sign-in", size, wide);
    await anon.close();
    for (const [who, list] of [[user, pages], [operator, operatorPages]]) {
      const context = await browser.newContext({ baseURL: API_URL, viewport: { width: size.width, height: size.height } });
      const page = await context.newPage();
      try {
        await signIn(page, who);
        for (const [name, path] of Object.entries(list)) {
          await page.goto(API_URL + path, { waitUntil: "load" });
          await fits(page, name, size, wide);
        }
        await page.goto(API_URL + "/console/");
        await page.keyboard.press("Tab");
        firstStops.push(await page.evaluate(() => document.activeElement?.textContent?.trim()));
      } finally {
        await context.close();
      }
    }
  }
  assert.deepEqual(wide, [], "pages wider than the viewport, or with controls without a name");
  assert.deepEqual(new Set(firstStops), new Set(["Skip to the content"]), "the first Tab stop is the skip link");
});
