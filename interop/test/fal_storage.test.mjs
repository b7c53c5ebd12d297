// @fal-ai/client's storage and webhook paths against our hosts (issue 14 item 4):
// fal.storage.upload (POST {rest}/storage/upload/initiate, then the signed PUT), the
// automatic upload of Blob inputs by subscribe, and webhookUrl (sent as fal_webhook).
// The rest host https://rest.fal.ai is rewritten to the account API like the others.
import { test, describe } from "node:test";
import assert from "node:assert/strict";
import { ApiError } from "@fal-ai/client";

import { API_URL, falClient, png, pngSize, MODEL, SMALL } from "../lib/env.mjs";

function paths(seen) {
  return seen.map((s) => `${s.method} ${new URL(s.url).pathname}`);
}

describe("@fal-ai/client storage and webhooks", () => {
  test("fal.storage.upload stores the blob and answers a URL that reads it back", async () => {
    const { client, seen, answers } = falClient();
    const bytes = png(12, 8);
    const url = await client.storage.upload(new Blob([bytes], { type: "image/png" }));
    assert.equal(typeof url, "string");
    assert.ok(url.startsWith(API_URL + "/files/uploads/"), `file_url ${url}`);
    assert.deepEqual(paths(seen), ["POST /storage/upload/initiate"]);
    const put = answers.find((a) => a.method === "PUT");
    assert.ok(put && put.status === 200, `the signed PUT answered ${put?.status}`);

    const res = await fetch(url);
    assert.equal(res.status, 200);
    assert.equal(res.headers.get("content-type"), "image/png");
    assert.deepEqual(Buffer.from(await res.arrayBuffer()), bytes);

    // The upload link writes once: a second PUT to it is refused, 410 expired (link_used).
    const again = await fetch(put.url, { method: "PUT", body: bytes, headers: { "Content-Type": "image/png" } });
    assert.equal(again.status, 410);
    const refusal = await again.json();
    assert.equal(refusal.error, "expired");
    assert.equal(refusal.reason, "link_used");
  });

  test("a type outside png, jpeg and webp is refused with the accepted list", async () => {
    const { client } = falClient();
    await assert.rejects(
      client.storage.upload(new Blob(["plain text"], { type: "text/plain" })),
      (err) => {
        assert.ok(err instanceof ApiError);
        assert.equal(err.status, 400);
        assert.equal(err.body.error, "unknown_content_type");
        assert.deepEqual(err.body.accepted, ["image/png", "image/jpeg", "image/webp"]);
        return true;
      },
    );
  });

  test("bytes that are not the declared type are refused at the PUT", async () => {
    const { client } = falClient();
    await assert.rejects(client.storage.upload(new Blob(["<html>not an image</html>"], { type: "image/png" })), (err) => {
      assert.equal(err.status, 400);
      return true;
    });
    // A PNG signature followed by HTML: the whole file is decoded before it is kept.
    const polyglot = new Blob([new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), "<html><script>alert(1)</script></html>"], { type: "image/png" });
    await assert.rejects(client.storage.upload(polyglot), (err) => {
      assert.equal(err.status, 400);
      return true;
    });
  });

  test("subscribe uploads a Blob input first and the model reads it", async () => {
    const { client, seen } = falClient();
    const input = { upscaleFactor: 2, outputFormat: "PNG", inputs: { image: new Blob([png(20, 14)], { type: "image/png" }) } };
    const result = await client.subscribe("svc-serverless/upscale", { input, mode: "polling", pollInterval: 50 });
    const p = paths(seen);
    assert.equal(p[0], "POST /storage/upload/initiate", "the Blob is uploaded before the submit");
    assert.equal(p[1], "POST /svc-serverless/upscale");
    const image = result.data.images?.[0] ?? result.data.image;
    assert.ok(image && typeof image.url === "string", `result ${JSON.stringify(result.data)}`);
    const res = await fetch(image.url);
    assert.equal(res.status, 200);
    assert.deepEqual(pngSize(await res.arrayBuffer()), { width: 40, height: 28 });
  });

  test("webhookUrl travels as fal_webhook and is checked like webhook, not ignored", async () => {
    const { client, seen } = falClient();
    // A loopback receiver is refused as any webhook would be (https only, no private hosts).
    await assert.rejects(
      client.queue.submit(MODEL, { input: SMALL, webhookUrl: "http://127.0.0.1:9/hook" }),
      (err) => {
        assert.ok(err instanceof ApiError);
        assert.equal(err.status, 422);
        assert.equal(err.body.error, "invalid_url");
        return true;
      },
    );
    assert.ok(new URL(seen[0].url).searchParams.get("fal_webhook"), "the client sent fal_webhook");
  });
});
