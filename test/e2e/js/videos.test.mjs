import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import * as errors from "@openrouter/sdk/models/errors";
import { client, env, rejects } from "./common.mjs";

const key = env("SB_KEY");
const sdk = client(key);
// The video every provider's fake makes, byte for byte.
const expected = readFileSync(env("SB_VIDEO_FILE"));

// poll reads the job until it ends (the gateway polls the provider at most every poll_interval).
async function poll(id) {
  let job = await sdk.videoGeneration.getGeneration({ jobId: id });
  for (let i = 0; i < 100 && (job.status === "pending" || job.status === "in_progress"); i++) {
    await new Promise((r) => setTimeout(r, 50));
    job = await sdk.videoGeneration.getGeneration({ jobId: id });
  }
  return job;
}

const listed = await sdk.videoGeneration.listVideosModels();

for (const model of env("SB_VIDEO_MODELS").split(",")) {
  test(`videoGeneration on ${model}: generate, poll to completion, download byte for byte, and a range`, async () => {
    const m = listed.data.find((x) => x.id === model);
    assert.ok(m, `${model} is not listed`);
    // The listing says what the model takes: ask for its first duration.
    const duration = m.supportedDurations?.[0] ?? 8;
    const job = await sdk.videoGeneration.generate({
      videoGenerationRequest: { model, prompt: "A paper boat on a river", duration, aspectRatio: "16:9" },
    });
    assert.match(job.id, /^gen-vid-\d+-[0-9a-z]{20}$/);
    assert.equal(job.status, "pending");

    const done = await poll(job.id);
    assert.equal(done.status, "completed", JSON.stringify(done));
    assert.equal(done.unsignedUrls.length, 1);
    assert.equal(typeof done.usage.cost, "number");
    assert.ok(done.usage.cost > 0);
    assert.equal(typeof done.generationId, "string");

    const stream = await sdk.videoGeneration.getVideoContent({ jobId: job.id });
    const chunks = [];
    for await (const c of stream) chunks.push(c);
    assert.ok(Buffer.concat(chunks).equals(expected), "the content differs from the provider's");

    // A range of it: 206 (the SDK takes only 200, so this is a plain fetch, with the same key).
    const part = await fetch(done.unsignedUrls[0], { headers: { Authorization: `Bearer ${key}`, Range: "bytes=1000-1999" } });
    assert.equal(part.status, 206);
    assert.equal(part.headers.get("content-range"), `bytes 1000-1999/${expected.length}`);
    assert.ok(Buffer.from(await part.arrayBuffer()).equals(expected.subarray(1000, 2000)));

    await rejects(sdk.videoGeneration.getVideoContent({ jobId: job.id, index: 3 }), errors.NotFoundResponseError, 404);
  });
}

test("videoGeneration: a job the provider fails is reported failed, unbilled, and its content is a 409", async () => {
  const job = await sdk.videoGeneration.generate({ videoGenerationRequest: { model: env("SB_VIDEO_FAILING"), prompt: "x" } });
  const done = await poll(job.id);
  assert.equal(done.status, "failed");
  assert.equal(typeof done.error, "string");
  assert.equal(done.usage.cost, 0);
  await rejects(sdk.videoGeneration.getVideoContent({ jobId: job.id }), errors.ConflictResponseError, 409);
});

test("videoGeneration: models list what each model takes; unknown jobs are 404", async () => {
  const fal = listed.data.find((m) => m.id === "video/fal-kling");
  assert.deepEqual(fal.supportedDurations, [5, 10]);
  assert.deepEqual(fal.supportedFrameImages, ["first_frame", "last_frame"]);
  assert.equal(fal.generateAudio, true);
  assert.equal(fal.pricingSkus.per_second_with_audio, "0.14");
  // A duration the model does not take is a 400 naming it, before any provider is asked.
  const e = await rejects(
    sdk.videoGeneration.generate({ videoGenerationRequest: { model: "video/fal-kling", prompt: "x", duration: 7 } }),
    errors.BadRequestResponseError, 400);
  assert.match(e.error.message, /^duration: /);
  await rejects(sdk.videoGeneration.getGeneration({ jobId: "gen-vid-0-missing" }), errors.NotFoundResponseError, 404);
});
