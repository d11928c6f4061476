import { test } from "node:test";
import assert from "node:assert/strict";
import OpenAI from "openai";
import * as errors from "@openrouter/sdk/models/errors";
import { client, env, rejects } from "./common.mjs";

const sdk = client(env("SB_KEY"));

async function readAll(stream) {
  const chunks = [];
  for await (const c of stream) chunks.push(c);
  return Buffer.concat(chunks);
}

test("tts.createSpeech streams PCM from the local engine (the SDK sends response_format pcm)", async () => {
  const stream = await sdk.tts.createSpeech({
    speechRequest: { model: "local/espeak", input: "Hello from the TypeScript SDK.", voice: "en" },
  });
  const pcm = await readAll(stream);
  assert.ok(pcm.length > 24000, `only ${pcm.length} bytes`);
  assert.equal(pcm.length % 2, 0);
});

test("tts.createSpeech maps gateway errors to the SDK's classes", async () => {
  await rejects(sdk.tts.createSpeech({ speechRequest: { model: "missing", input: "x", voice: "en" } }),
    errors.NotFoundResponseError, 404);
  await rejects(sdk.tts.createSpeech({ speechRequest: { model: "local/espeak", input: "x", voice: "en", speed: 9 } }),
    errors.BadRequestResponseError, 400);
  await rejects(client(env("SB_ADMIN")).tts.createSpeech({ speechRequest: { model: "local/espeak", input: "x", voice: "en" } }),
    errors.ForbiddenResponseError, 403);
});

test("the openai npm client's audio.speech.create works unchanged", async () => {
  const openai = new OpenAI({ apiKey: env("SB_KEY"), baseURL: env("SB_URL"), maxRetries: 0 });
  const res = await openai.audio.speech.create({ model: "local/espeak", input: "Hello from openai-node.", voice: "en", response_format: "mp3" });
  assert.equal(res.headers.get("content-type"), "audio/mpeg");
  const mp3 = Buffer.from(await res.arrayBuffer());
  assert.ok(mp3.length > 1000);
  assert.ok(mp3[0] === 0xff || mp3.subarray(0, 3).toString() === "ID3");
});
