import { test } from "node:test";
import assert from "node:assert/strict";
import * as errors from "@openrouter/sdk/models/errors";
import { client, env, rejects } from "./common.mjs";

const sdk = client(env("SB_KEY"));

test("videoGeneration: generate, poll to completion, download, models", async () => {
  const job = await sdk.videoGeneration.generate({
    videoGenerationRequest: { model: "video/sora", prompt: "A paper boat on a river", duration: 4, resolution: "720p", aspectRatio: "16:9" },
  });
  assert.match(job.id, /^gen-vid-\d+-[0-9a-z]{20}$/);
  assert.equal(job.status, "pending");

  let polled = job;
  for (let i = 0; i < 50 && polled.status !== "completed"; i++) {
    await new Promise((r) => setTimeout(r, 100)); // the gateway polls the provider at most every poll_interval
    polled = await sdk.videoGeneration.getGeneration({ jobId: job.id });
  }
  assert.equal(polled.status, "completed");
  assert.equal(polled.unsignedUrls.length, 1);
  assert.equal(typeof polled.usage.cost, "number");
  assert.equal(typeof polled.generationId, "string");

  const stream = await sdk.videoGeneration.getVideoContent({ jobId: job.id });
  const chunks = [];
  for await (const c of stream) chunks.push(c);
  const mp4 = Buffer.concat(chunks);
  assert.equal(mp4.subarray(4, 8).toString(), "ftyp");

  const models = await sdk.videoGeneration.listVideosModels();
  assert.ok(models.data.some((m) => m.id === "video/sora"));

  await rejects(sdk.videoGeneration.getGeneration({ jobId: "gen-vid-0-missing" }), errors.NotFoundResponseError, 404);
  await rejects(sdk.videoGeneration.getVideoContent({ jobId: job.id, index: 3 }), errors.NotFoundResponseError, 404);
});
