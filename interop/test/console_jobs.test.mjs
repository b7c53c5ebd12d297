// The console's playground and jobs pages in a real browser (headless Chromium): an image model
// run from the playground shows its picture, an audio model's output plays, the jobs list
// shows both and its filters narrow it, and a job's page shows its charge. The price is shown
// (and kept up to date by the page's script) before anything is sent. Each page is
// screenshotted.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";

import { API_URL, SMALL, newAccount } from "../lib/env.mjs";
import { consoleUser, launch, openPage, screenshot, signIn, skipWithoutChromium } from "../lib/browser.mjs";

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

// runFromPlayground opens the playground on a model, fills the fields, waits for the live
// price, runs it and waits for the job's page to show it settled; it answers the job id.
async function runFromPlayground(page, model, fields, shot) {
  await page.goto(API_URL + "/console/playground");
  // Picking a model opens its form, without a separate "Choose" click.
  await Promise.all([page.waitForURL((u) => u.searchParams.get("model") === model), page.selectOption("#model-select", model)]);
  for (const [name, value] of Object.entries(fields)) {
    const el = page.locator(`[name="in.${name}"]`);
    if ((await el.evaluate((e) => e.tagName)) === "SELECT") {
      await el.selectOption(String(value));
    } else {
      await el.fill(String(value));
    }
  }
  // The price comes from the quote endpoint as the fields change, before anything is charged.
  await page.locator("#quote-credits").waitFor({ timeout: 10_000 });
  const credits = Number((await page.locator("#quote-credits").innerText()).replace(/,/g, ""));
  assert.ok(credits > 0, `${model}: a price is shown before submitting`);
  await screenshot(page, `${shot}-playground`);
  // Buttons are pressed with the keyboard after a full-page screenshot: Chromium's viewport,
  // resized for the screenshot and restored, can leave a mouse click off its target.
  // The run stays on the playground: the job is followed there and its outputs are shown
  // beside the fields, with a link to the job's page.
  const balance = async () => Number((await page.locator("#balance").innerText()).replace(/,| credits?$/g, ""));
  const before = await balance();
  await page.locator("#run").press("Enter");
  await page.locator("#run-output a.job-link").waitFor({ timeout: 60_000 });
  assert.equal(await page.locator("#run-state").innerText(), "succeeded");
  // The balance beside the form is the one the run left (charged as quoted).
  assert.equal(await balance(), before - credits, `${model}: the balance shown after the run`);
  const outputs = await page.locator("#run-output figure.output").count();
  assert.ok(outputs > 0, `${model}: the outputs are shown beside the fields`);
  await screenshot(page, `${shot}-playground-output`);
  await Promise.all([page.waitForURL(/\/console\/jobs\/[^/]+\?submitted=1$/), page.locator("#run-output a.job-link").press("Enter")]);
  const id = decodeURIComponent(new URL(page.url()).pathname.split("/").pop());
  await page.locator('#job[data-settled="true"]').waitFor({ timeout: 60_000 });
  assert.equal(await page.locator("#job-state").innerText(), "succeeded");
  return { id, credits };
}

test("playground: an image model's output is shown as an image, charged as quoted", { skip }, async () => {
  const { context, page } = await openPage(browser);
  try {
    await signIn(page, user);
    const { id, credits } = await runFromPlayground(page, "image-4b", SMALL, "console-image");
    const img = page.locator("img.preview-image");
    await img.waitFor();
    await page.waitForFunction(() => {
      const i = document.querySelector("img.preview-image");
      return i && i.complete;
    });
    const size = await img.evaluate((i) => ({ w: i.naturalWidth, h: i.naturalHeight }));
    assert.ok(size.w > 0 && size.h > 0, `the image loads: ${JSON.stringify(size)}`);
    assert.deepEqual(size, { w: SMALL.width, h: SMALL.height });
    assert.equal(await page.locator("#job-charged").innerText(), `${credits.toLocaleString("en-US")} credit${credits === 1 ? "" : "s"}`);
    assert.match(await page.locator("#job-input").innerText(), /a lighthouse at dusk/);
    assert.match(await page.locator("#job-event").innerText(), new RegExp(`^evt_${id}_succeeded$`));
    // The download link serves the file.
    const href = await page.locator("a.download").first().getAttribute("href");
    const res = await fetch(new URL(href, API_URL));
    assert.equal(res.status, 200);
    assert.match(res.headers.get("content-type"), /^image\//);
    await screenshot(page, "console-image-job");
  } finally {
    await context.close();
  }
});

test("playground: an audio model's output plays in an audio player", { skip }, async () => {
  const { context, page } = await openPage(browser);
  try {
    await signIn(page, user);
    await runFromPlayground(page, "music-turbo", { positivePrompt: "a calm piano piece", duration: 30, steps: 1, outputFormat: "WAV" }, "console-audio");
    const audio = page.locator("audio.player-audio");
    await audio.waitFor();
    const played = await audio.evaluate(async (a) => {
      if (a.readyState < 2) {
        await new Promise((ok, fail) => {
          a.addEventListener("loadeddata", ok, { once: true });
          a.addEventListener("error", () => fail(new Error("audio error " + (a.error && a.error.code))), { once: true });
          a.load();
        });
      }
      a.muted = true; // headless has no sound card; a muted player may start without a gesture
      await a.play();
      const out = { readyState: a.readyState, duration: a.duration, paused: a.paused };
      a.pause();
      return out;
    });
    assert.ok(played.readyState >= 2, `the audio has data: ${JSON.stringify(played)}`);
    assert.ok(played.duration > 0, `the audio has a duration: ${JSON.stringify(played)}`);
    assert.equal(played.paused, false, "play() resolved and the player ran");
    await screenshot(page, "console-audio-job");
  } finally {
    await context.close();
  }
});

test("jobs list: both runs are listed, filters by model and status narrow it, a job's page shows its charge", { skip }, async () => {
  const { context, page } = await openPage(browser);
  try {
    await signIn(page, user);
    await page.goto(API_URL + "/console/jobs");
    const models = async () => page.locator("#jobs tbody tr[data-job]").evaluateAll((rows) => rows.map((r) => r.dataset.model));
    assert.deepEqual((await models()).sort(), ["image-4b", "music-turbo"]);
    await screenshot(page, "console-jobs");

    await page.selectOption("#filter-model", "music-turbo");
    await Promise.all([page.waitForURL(/model=music-turbo/), page.locator("#filter").press("Enter")]);
    assert.deepEqual(await models(), ["music-turbo"]);

    await page.selectOption("#filter-model", "");
    await page.selectOption("#filter-status", "failed");
    await Promise.all([page.waitForURL(/status=failed/), page.locator("#filter").press("Enter")]);
    assert.deepEqual(await models(), []);
    assert.match(await page.locator("#jobs tbody").innerText(), /No job matches these filters/);

    await page.selectOption("#filter-status", "succeeded");
    await page.fill("#filter-from", new Date().toISOString().slice(0, 10));
    await Promise.all([page.waitForURL(/status=succeeded/), page.locator("#filter").press("Enter")]);
    assert.deepEqual((await models()).sort(), ["image-4b", "music-turbo"]);
    await screenshot(page, "console-jobs-filtered");

    await Promise.all([page.waitForURL(/\/console\/jobs\/[^/?]+$/), page.locator('#jobs tr[data-model="image-4b"] a').press("Enter")]);
    assert.match(await page.locator("#job-charged").innerText(), /^[1-9][0-9,]* credits?\b/);
    assert.equal(await page.locator("#job-state").innerText(), "succeeded");
  } finally {
    await context.close();
  }
});

test("the model picker from the keyboard: arrow keys move through the models, Enter opens one", { skip }, async () => {
  const { context, page } = await openPage(browser);
  try {
    await signIn(page, user);
    await page.goto(API_URL + "/console/playground");
    await page.focus("#model-select");
    await page.keyboard.press("ArrowDown");
    await page.keyboard.press("ArrowDown");
    assert.equal(new URL(page.url()).searchParams.get("model"), null, "an arrow key loads no page");
    assert.equal(await page.evaluate(() => document.activeElement.id), "model-select", "the focus stays on the picker");
    assert.equal(await page.locator("#choose-model").isVisible(), true, "the Choose button shows for keyboard users");
    const picked = await page.locator("#model-select").inputValue();
    await Promise.all([page.waitForURL((u) => u.searchParams.get("model") === picked), page.keyboard.press("Enter")]);
  } finally {
    await context.close();
  }
});
