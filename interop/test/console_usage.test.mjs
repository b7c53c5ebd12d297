// The console's usage page in a real browser (headless Chromium): a fresh account runs a job
// through the queue API with a key of its own, then its console user signs in, opens the usage
// page, sees the day's bar in the chart and the model's total, agreeing with GET /v1/usage, and
// downloads the CSV export: the header row and a row for the model, the same file the API
// answers. Screenshots of the page.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";

import { API_URL, MODEL, SMALL, falClient, mintKey, newAccount } from "../lib/env.mjs";
import { consoleUser, launch, openPage, screenshot, signIn, skipWithoutChromium } from "../lib/browser.mjs";

const HEADER = "date,key_id,model,jobs,credits_charged,credits_refunded,credits_net";

async function apiGet(path, key) {
  const res = await fetch(API_URL + path, { headers: { Authorization: `Bearer ${key}` } });
  assert.equal(res.status, 200, `${path} answered ${res.status}`);
  return res;
}

// figure reads a number the page shows with grouping commas.
const figure = (s) => Number(s.trim().replaceAll(",", ""));

test("console usage: a job's charge in the day chart and the model's total, and the CSV export downloaded", { skip: skipWithoutChromium() }, async () => {
  const account = newAccount();
  const key = mintKey({ account });
  const user = consoleUser({ account });
  const { client } = falClient({ credentials: key });
  const result = await client.subscribe(MODEL, { input: SMALL, mode: "polling", pollInterval: 50 });
  assert.ok(result.data.images?.length, "the job made an image");
  const slug = MODEL.split("/").at(-1);
  const usage = await (await apiGet("/v1/usage", key)).json();
  assert.equal(usage.total.jobs, 1, `GET /v1/usage: ${JSON.stringify(usage)}`);
  const net = usage.total.net;
  assert.ok(net > 0, "the job was charged");

  const browser = await launch();
  try {
    const { page } = await openPage(browser);
    await signIn(page, user);
    await page.click('header nav a[href="/console/usage"]');
    await page.waitForURL((u) => u.pathname === "/console/usage");
    assert.equal(await page.locator('header nav a[aria-current="page"]').innerText(), "Usage");

    // The day's bar in the chart, carrying the day's net.
    const today = new Date().toISOString().slice(0, 10);
    const bar = page.locator(`#usage-chart rect.day-bar[data-day="${today}"]`);
    assert.equal(await bar.count(), 1, "a bar for today");
    assert.equal(Number(await bar.getAttribute("data-net")), net);
    assert.ok(Number(await bar.getAttribute("height")) > 0, "the bar has a height");
    assert.equal(await page.locator("#usage-chart rect.day-bar").count(), 1, "no other day has spend");

    // The model's and the window's totals, as GET /v1/usage counts them.
    const row = page.locator(`#usage-models tr[data-name="${slug}"]`);
    assert.equal(await row.count(), 1, `a row for ${slug}`);
    assert.equal(figure(await row.locator("td.net").innerText()), net);
    assert.equal(figure(await page.locator("#total-net").innerText()), net);
    assert.equal(figure(await page.locator("#usage-models tfoot td.net").innerText()), net);
    assert.equal(await page.locator("#usage-keys tbody tr").count(), 1, "one key spent");
    await screenshot(page, "console-usage");

    // The export downloads the API's file.
    const [download] = await Promise.all([page.waitForEvent("download"), page.click("#export-day")]);
    assert.equal(download.suggestedFilename(), `usage-${account}-month.csv`);
    const csv = await readFile(await download.path(), "utf8");
    const lines = csv.trim().split("\n");
    assert.equal(lines[0], HEADER);
    assert.equal(lines.length, 2, csv);
    const cells = lines[1].split(",");
    assert.deepEqual([cells[0], cells[2], cells[3], Number(cells[6])], [today, slug, "1", net]);
    assert.equal(csv, await (await apiGet("/v1/usage/export?window=month", key)).text(), "the console's file is the API's");

    // Other windows: last month has nothing, and says what to do.
    // Changing the window shows it at once, without a "Show" click.
    await Promise.all([page.waitForURL((u) => u.searchParams.get("window") === "last_month"), page.selectOption("#window", "last_month")]);
    assert.equal(await page.locator("#usage-empty").count(), 1, "last month is empty");
    await screenshot(page, "console-usage-empty");
  } finally {
    await browser.close();
  }
});
