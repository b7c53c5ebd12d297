// Shared setup for the interop tests: the running server's URLs and key (exported by run.sh),
// a fal client pointed at our hosts, and a JPEG header reader.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import zlib from "node:zlib";
import { createFalClient } from "@fal-ai/client";

function need(name) {
  const v = process.env[name];
  if (!v) {
    throw new Error(`${name} is not set: run the interop tests through interop/run.sh`);
  }
  return v.replace(/\/+$/, "");
}

export const API_URL = need("INTEROP_API_URL");
export const QUEUE_URL = need("INTEROP_QUEUE_URL");
export const SYNC_URL = need("INTEROP_SYNC_URL");
export const KEY = need("INTEROP_KEY");
export const ACCOUNT = need("INTEROP_ACCOUNT");
export const DATA = need("INTEROP_DATA");
export const BIN = need("INTEROP_BIN");
export const ROOT = need("INTEROP_ROOT");
export const SECRET = need("MODELEXEC_SECRET");

// mintKey mints a fresh key with the operator console (the only place keys are minted), on
// the shared test account unless another is named. Rate buckets and the per-second fuse (3
// generates a second) are per key, so each test that generates takes its own key and the tests
// do not pace one another. A paid account holds at most 25 live keys: a test file that mints
// many takes an account of its own (newAccount).
export function mintKey({ account = ACCOUNT, scopes } = {}) {
  const args = ["keys", "mint", "--data", DATA, "--secret", SECRET, "--account", account, "--json"];
  if (scopes) {
    args.push("--scopes", scopes);
  }
  return JSON.parse(execFileSync(BIN, args, { encoding: "utf8" })).key;
}

// newAccount creates a pro account with credits, made two days ago so the new-account limits
// (a fifth of the plan's for 24 hours) do not apply, and answers its id.
export function newAccount({ credits = 100000 } = {}) {
  const createdAt = new Date(Date.now() - 48 * 3600 * 1000).toISOString().replace(/\.\d+Z$/, "Z");
  const out = execFileSync(
    BIN,
    ["accounts", "create", "--data", DATA, "--secret", SECRET, "--plan", "pro", "--credits", String(credits), "--created-at", createdAt, "--json"],
    { encoding: "utf8" },
  );
  return JSON.parse(out).id;
}

// The model and a small, fast input for it (256x256, 2 steps: a few milliseconds).
export const MODEL = "svc-serverless/image-4b";
export const SMALL = { positivePrompt: "a lighthouse at dusk", width: 256, height: 256, steps: 2 };
// A slower input (2048x2048, 50 steps: about a second) for a job still running when cancelled.
export const SLOW = { positivePrompt: "a lighthouse at dusk", width: 2048, height: 2048, steps: 50 };

// rewrite maps the URLs the fal client builds onto our hosts; anything else is a test failure,
// so a request can never leave the machine.
export function rewrite(url) {
  for (const [from, to] of [
    ["https://queue.fal.run/", QUEUE_URL + "/"],
    ["https://fal.run/", SYNC_URL + "/"],
    ["https://rest.fal.ai/", API_URL + "/"], // storage uploads (fal.storage.upload, Blob inputs)
  ]) {
    if (url.startsWith(from)) {
      return to + url.slice(from.length);
    }
  }
  throw new Error(`fal client asked for an unexpected URL: ${url}`);
}

// middleware returns a requestMiddleware that rewrites every URL and records what was sent.
export function middleware(seen = []) {
  return async (req) => {
    const url = rewrite(req.url);
    seen.push({ method: req.method, url });
    return { ...req, url };
  };
}

// recordingFetch is a fetch for the fal client's config that records each answer's status.
export function recordingFetch(answers = []) {
  return async (url, init) => {
    const res = await fetch(url, init);
    const a = { method: init?.method ?? "GET", url: String(url), status: res.status, retryAfter: res.headers.get("retry-after") };
    if (!res.ok && (res.headers.get("content-type") ?? "").includes("json")) {
      const body = await res.clone().json();
      a.error = body.error;
      a.reason = body.reason;
    }
    answers.push(a);
    return res;
  };
}

// falClient is a fresh @fal-ai/client pointed at our hosts with its own key (minted unless
// given), recording the requests it sends and the answers it gets.
export function falClient({ credentials = mintKey() } = {}) {
  const seen = [];
  const answers = [];
  const client = createFalClient({ credentials, requestMiddleware: middleware(seen), fetch: recordingFetch(answers) });
  return { client, seen, answers, key: credentials };
}

// png encodes a width x height RGB image (each pixel from rgb(x, y) => [r, g, b]) as a PNG.
export function png(width, height, rgb = () => [200, 40, 40]) {
  const raw = Buffer.alloc((width * 3 + 1) * height);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const [r, g, b] = rgb(x, y);
      raw.set([r, g, b], y * (width * 3 + 1) + 1 + x * 3);
    }
  }
  const chunk = (type, data) => {
    const len = Buffer.alloc(4);
    len.writeUInt32BE(data.length);
    const body = Buffer.concat([Buffer.from(type, "latin1"), data]);
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(zlib.crc32(body));
    return Buffer.concat([len, body, crc]);
  };
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr.set([8, 2, 0, 0, 0], 8); // 8-bit RGB
  return Buffer.concat([
    Buffer.from("\x89PNG\r\n\x1a\n", "latin1"),
    chunk("IHDR", ihdr),
    chunk("IDAT", zlib.deflateSync(raw)),
    chunk("IEND", Buffer.alloc(0)),
  ]);
}

// pngSize reads the width and height of a PNG's IHDR.
export function pngSize(buf) {
  const b = Buffer.from(buf);
  assert.equal(b.subarray(0, 8).toString("latin1"), "\x89PNG\r\n\x1a\n", "not a PNG");
  return { width: b.readUInt32BE(16), height: b.readUInt32BE(20) };
}

// jpegSize reads the frame header (SOFn) of a JPEG and returns its width and height.
export function jpegSize(buf) {
  const b = Buffer.from(buf);
  assert.ok(b.length > 4 && b[0] === 0xff && b[1] === 0xd8, "not a JPEG: no SOI marker");
  let i = 2;
  while (i + 4 <= b.length) {
    if (b[i] !== 0xff) {
      throw new Error(`JPEG: expected a marker at byte ${i}`);
    }
    const marker = b[i + 1];
    if (marker === 0xff) {
      i++; // fill byte
      continue;
    }
    if (marker === 0xd8 || marker === 0x01 || (marker >= 0xd0 && marker <= 0xd7)) {
      i += 2; // markers without a length
      continue;
    }
    const len = b.readUInt16BE(i + 2);
    const sof = marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc;
    if (sof) {
      return { height: b.readUInt16BE(i + 5), width: b.readUInt16BE(i + 7), components: b[i + 9] };
    }
    if (marker === 0xda || marker === 0xd9) {
      break; // start of scan or end of image before any frame header
    }
    i += 2 + len;
  }
  throw new Error("JPEG: no SOF frame header found");
}

// checkImage downloads an output image URL (signed; no key sent) and checks it is a complete
// JPEG of the asked size.
export async function checkImage(image, width, height) {
  assert.equal(typeof image.url, "string", "image has a url");
  const res = await fetch(image.url);
  assert.equal(res.status, 200, `GET ${image.url} answered ${res.status}`);
  assert.match(res.headers.get("content-type") ?? "", /^image\/jpeg/);
  const body = Buffer.from(await res.arrayBuffer());
  assert.equal(body[body.length - 2], 0xff, "JPEG ends with EOI");
  assert.equal(body[body.length - 1], 0xd9, "JPEG ends with EOI");
  if (image.file_size !== undefined) {
    assert.equal(body.length, image.file_size, "file_size matches the download");
  }
  const size = jpegSize(body);
  assert.deepEqual({ width: size.width, height: size.height }, { width, height });
  assert.equal(image.width, width);
  assert.equal(image.height, height);
  return body;
}
