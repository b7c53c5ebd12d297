// The Vercel AI SDK (`ai` with `@ai-sdk/openai`) against /compat/v1 (DESIGN.md "Interop"; issue
// 28 "Done when"): generateText and streamText over chat completions (`openai.chat(...)`),
// streamText over the Responses protocol (the provider's default `openai(...)` model), embeddings
// (embedMany), and a failure surfacing as the SDK's own error. Each answer's job is read back:
// charged once, never above its quote.
//
// Each test takes its own key (mintKey) on an account of this file's own.
import { test, describe } from "node:test";
import assert from "node:assert/strict";
import { createOpenAI } from "@ai-sdk/openai";
import { generateText, streamText, embedMany, APICallError } from "ai";

import { API_URL, mintKey, newAccount } from "../lib/env.mjs";

const ACCOUNT = newAccount();

// provider answers an AI SDK provider on /compat/v1 with a fresh key, and a reader of the job
// behind each answer (its id is the X-Job-Id header, recorded by a wrapping fetch).
function provider() {
  const key = mintKey({ account: ACCOUNT });
  const jobs = [];
  const fetchJobs = async (url, init) => {
    const res = await fetch(url, init);
    if (res.headers.get("x-job-id")) jobs.push(res.headers.get("x-job-id"));
    return res;
  };
  const openai = createOpenAI({ apiKey: key, baseURL: `${API_URL}/compat/v1`, fetch: fetchJobs });
  const job = async (id) => {
    const r = await fetch(`${API_URL}/v1/jobs/${id}`, { headers: { Authorization: `Bearer ${key}` } });
    assert.equal(r.status, 200, `GET /v1/jobs/${id}`);
    return r.json();
  };
  return { openai, jobs, job };
}

async function assertCharged(p, product) {
  assert.equal(p.jobs.length, 1, `one job behind the call: ${p.jobs}`);
  const j = await p.job(p.jobs[0]);
  assert.equal(j.product, product);
  assert.ok(j.credits_charged > 0 && j.credits_charged <= j.credits_quoted, `charged ${j.credits_charged} of ${j.credits_quoted}`);
}

describe("Vercel AI SDK against /compat/v1", () => {
  test("generateText over chat completions", async () => {
    const p = provider();
    const r = await generateText({ model: p.openai.chat("qwen"), system: "You are terse.", prompt: "Name a colour.", maxOutputTokens: 200 });
    assert.match(r.text, /reference model/);
    assert.equal(r.finishReason, "stop");
    assert.ok(r.usage.outputTokens > 0 && r.usage.inputTokens > 0, JSON.stringify(r.usage));
    await assertCharged(p, "chat");
  });

  test("streamText over chat completions", async () => {
    const p = provider();
    const r = streamText({ model: p.openai.chat("qwen"), prompt: "Stream a few words." });
    const pieces = [];
    for await (const piece of r.textStream) pieces.push(piece);
    assert.ok(pieces.length > 1, `streamed in ${pieces.length} pieces`);
    assert.equal(pieces.join(""), await r.text);
    assert.match(await r.text, /reference model/);
    assert.equal(await r.finishReason, "stop");
    assert.ok((await r.usage).outputTokens > 0);
    await assertCharged(p, "chat");
  });

  test("streamText over the Responses protocol (the default model)", async () => {
    const p = provider();
    const r = streamText({ model: p.openai("qwen"), system: "Be brief.", prompt: "Stream over responses." });
    const pieces = [];
    for await (const piece of r.textStream) pieces.push(piece);
    assert.ok(pieces.length > 1, `streamed in ${pieces.length} pieces`);
    assert.match(pieces.join(""), /reference model/);
    assert.equal(await r.finishReason, "stop");
    const u = await r.usage;
    assert.ok(u.outputTokens > 0 && u.inputTokens > 0, JSON.stringify(u));
    assert.match((await r.response).id, /^resp_chat_/);
    await assertCharged(p, "chat");
  });

  test("generateText over the Responses protocol, out of output budget", async () => {
    const p = provider();
    const r = await generateText({ model: p.openai("qwen"), prompt: "Write at length.", maxOutputTokens: 3 });
    assert.equal(r.finishReason, "length");
    assert.ok(r.text.length > 0);
    await assertCharged(p, "chat");
  });

  test("embedMany", async () => {
    const p = provider();
    const r = await embedMany({ model: p.openai.embedding("embed-small"), values: ["the cat sat", "a cat sat down", "stock prices fell"] });
    assert.equal(r.embeddings.length, 3);
    const dot = (a, b) => a.reduce((s, x, i) => s + x * b[i], 0);
    assert.equal(r.embeddings[0].length, 256);
    assert.ok(dot(r.embeddings[0], r.embeddings[1]) > dot(r.embeddings[0], r.embeddings[2]));
    await assertCharged(p, "embeddings");
  });

  test("a setting the models do not honour is the SDK's APICallError with the service's code", async () => {
    const p = provider();
    await assert.rejects(
      generateText({ model: p.openai.chat("qwen"), prompt: "hi", maxRetries: 0, providerOptions: { openai: { logitBias: { 50256: -100 } } } }),
      (err) => {
        assert.ok(APICallError.isInstance(err), `${err}`);
        assert.equal(err.statusCode, 400);
        assert.match(err.responseBody, /"param":"logit_bias"/);
        return true;
      },
    );
  });
});
