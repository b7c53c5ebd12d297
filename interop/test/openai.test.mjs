// The official `openai` npm client against /compat/v1 (DESIGN.md "Interop"; issue 11 "Done
// when"): models, chat (plain and streamed, usage in the last chunk), responses, completions,
// embeddings, and the surface's error mapping surfacing as the client's own error classes.
//
// Each test takes its own key (mintKey): the interactive bucket and the per-second fuse are
// per key, so the tests never pace one another.
import { test, describe } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import OpenAI from "openai";

import { API_URL, BIN, DATA, SECRET, mintKey, newAccount } from "../lib/env.mjs";

const BASE = `${API_URL}/compat/v1`;
// This file mints a key per test: on an account of its own, so the shared one keeps room.
const ACCOUNT = newAccount();

function client(key = mintKey({ account: ACCOUNT }), opts = {}) {
  return new OpenAI({ apiKey: key, baseURL: BASE, ...opts });
}

// A pro account with no credits, and a key on it.
function emptyWalletKey() {
  const acct = JSON.parse(
    execFileSync(BIN, ["accounts", "create", "--data", DATA, "--secret", SECRET, "--plan", "pro", "--credits", "0", "--json"], { encoding: "utf8" }),
  ).id;
  return JSON.parse(execFileSync(BIN, ["keys", "mint", "--data", DATA, "--secret", SECRET, "--account", acct, "--json"], { encoding: "utf8" })).key;
}

describe("openai client against /compat/v1", () => {
  test("models.list", async () => {
    const ids = [];
    for await (const m of client().models.list()) {
      assert.equal(m.object, "model");
      ids.push(m.id);
    }
    for (const want of ["qwen", "kimi", "embed-small"]) {
      assert.ok(ids.includes(want), `models.list: ${ids}`);
    }
  });

  test("chat.completions.create", async () => {
    const c = await client().chat.completions.create({
      model: "qwen",
      messages: [
        { role: "system", content: "You are terse." },
        { role: "user", content: "Name a colour." },
      ],
      max_tokens: 200,
    });
    assert.equal(c.object, "chat.completion");
    assert.equal(c.choices.length, 1);
    assert.equal(c.choices[0].message.role, "assistant");
    assert.match(c.choices[0].message.content, /reference model/);
    assert.equal(c.choices[0].finish_reason, "stop");
    assert.equal(c.usage.total_tokens, c.usage.prompt_tokens + c.usage.completion_tokens);
    assert.ok(c.usage.completion_tokens > 0);
  });

  // Token by token only when the process that took the request runs the turn (the README's
  // "not done yet"); behind a balancer (deploy/test.sh) a front process answers the turn whole.
  const balanced = process.env.INTEROP_BALANCED ? "a front process without the worker role streams the turn whole, not token by token" : false;
  test("chat.completions.create stream with include_usage", { skip: balanced }, async () => {
    const stream = await client().chat.completions.create({
      model: "qwen",
      messages: [{ role: "user", content: "Stream a sentence to me." }],
      stream: true,
      stream_options: { include_usage: true },
    });
    let text = "";
    let chunks = 0;
    let last;
    let finish;
    for await (const chunk of stream) {
      chunks++;
      assert.equal(chunk.object, "chat.completion.chunk");
      for (const ch of chunk.choices) {
        text += ch.delta?.content ?? "";
        finish = ch.finish_reason ?? finish;
      }
      last = chunk;
    }
    assert.ok(chunks > 5, `only ${chunks} chunks`);
    assert.match(text, /reference model/);
    assert.equal(finish, "stop");
    assert.deepEqual(last.choices, []);
    assert.ok(last.usage.completion_tokens > 0, JSON.stringify(last));
    assert.equal(last.usage.total_tokens, last.usage.prompt_tokens + last.usage.completion_tokens);
  });

  test("responses.create", async () => {
    const r = await client().responses.create({ model: "kimi", input: "Say something short.", instructions: "Be brief." });
    assert.equal(r.object, "response");
    assert.equal(r.status, "completed");
    assert.match(r.output_text, /kimi reference model/);
    assert.ok(r.usage.output_tokens > 0);
  });

  test("responses.create stream: the protocol's events, then an error event for a refusal", async () => {
    const stream = await client().responses.create({ model: "qwen", input: "Stream over responses.", stream: true });
    const types = [];
    let text = "";
    let done;
    for await (const ev of stream) {
      types.push(ev.type);
      assert.equal(ev.sequence_number, types.length - 1);
      if (ev.type === "response.output_text.delta") text += ev.delta;
      if (ev.type === "response.completed") done = ev.response;
    }
    assert.deepEqual(types.slice(0, 4), ["response.created", "response.in_progress", "response.output_item.added", "response.content_part.added"]);
    assert.deepEqual(types.slice(-4), ["response.output_text.done", "response.content_part.done", "response.output_item.done", "response.completed"]);
    assert.match(text, /reference model/);
    assert.equal(done.output_text ?? done.output[0].content[0].text, text);
    assert.ok(done.usage.output_tokens > 0);

    const refused = await client().responses.create({ model: "qwen", input: "Please [refuse] this.", stream: true });
    const events = [];
    for await (const ev of refused) events.push(ev);
    const last = events.at(-1);
    assert.equal(last.type, "error");
    assert.equal(last.code, "content_policy");
    assert.ok(!events.some((e) => e.type === "response.completed"));
  });

  test("completions.create", async () => {
    const c = await client().completions.create({ model: "qwen", prompt: "Once upon a time", max_tokens: 8 });
    assert.equal(c.object, "text_completion");
    assert.equal(c.choices[0].finish_reason, "length");
    assert.equal(c.usage.completion_tokens, 8);
    assert.ok(c.choices[0].text.length > 0);
  });

  test("embeddings.create (the client asks for base64 and decodes it)", async () => {
    const e = await client().embeddings.create({ model: "embed-small", input: ["the cat sat on the mat", "a cat sat on a mat", "interest rates rose"] });
    assert.equal(e.data.length, 3);
    const [a, b, c] = e.data.map((d) => d.embedding);
    assert.equal(a.length, 256);
    const dot = (x, y) => x.reduce((s, v, i) => s + v * y[i], 0);
    assert.ok(Math.abs(dot(a, a) - 1) < 1e-5, `norm ${dot(a, a)}`);
    assert.ok(dot(a, b) > dot(a, c), `similar ${dot(a, b)} <= unrelated ${dot(a, c)}`);
    assert.ok(e.usage.prompt_tokens > 0);
  });

  test("401 is AuthenticationError", async () => {
    await assert.rejects(client("svc_sk_not_a_real_key").models.list(), (err) => {
      assert.ok(err instanceof OpenAI.AuthenticationError, err.constructor.name);
      assert.equal(err.status, 401);
      return true;
    });
  });

  test("400 is BadRequestError: unknown model, output limit, the model's refusal", async () => {
    const c = client();
    for (const [body, code] of [
      [{ model: "gpt-4o", messages: [{ role: "user", content: "hi" }] }, "unknown_model"],
      [{ model: "qwen", messages: [{ role: "user", content: "hi" }], max_tokens: 1000000 }, "output_limit_reached"],
      [{ model: "qwen", messages: [{ role: "user", content: "[refuse] please" }] }, "content_policy"],
    ]) {
      await assert.rejects(c.chat.completions.create(body), (err) => {
        assert.ok(err instanceof OpenAI.BadRequestError, `${code}: ${err.constructor.name}`);
        assert.equal(err.status, 400);
        assert.equal(err.code, code);
        return true;
      });
    }
  });

  test("an empty wallet is 429 insufficient_quota, RateLimitError, not retried", async () => {
    let calls = 0;
    const counting = async (url, init) => {
      calls++;
      return fetch(url, init);
    };
    const c = client(emptyWalletKey(), { fetch: counting, maxRetries: 2 });
    await assert.rejects(c.chat.completions.create({ model: "qwen", messages: [{ role: "user", content: "hi" }] }), (err) => {
      assert.ok(err instanceof OpenAI.RateLimitError, err.constructor.name);
      assert.equal(err.status, 429);
      assert.equal(err.code, "insufficient_quota");
      assert.equal(err.type, "insufficient_quota");
      return true;
    });
    assert.equal(calls, 1, "x-should-retry: false must stop the client's retries");
  });

  test("a refusal after the streamed 200 arrives inside the stream", async () => {
    const stream = await client().chat.completions.create({
      model: "qwen",
      messages: [{ role: "user", content: "[refuse] in a stream" }],
      stream: true,
    });
    await assert.rejects(
      (async () => {
        for await (const _ of stream) {
          // the first chunk opens the answer; the refusal follows
        }
      })(),
      (err) => {
        assert.ok(err instanceof OpenAI.APIError, err.constructor.name);
        assert.match(String(err.message), /declined/);
        return true;
      },
    );
  });
});
