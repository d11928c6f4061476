import { test } from "node:test";
import assert from "node:assert/strict";
import * as errors from "@openrouter/sdk/models/errors";
import { client, env, rejects } from "./common.mjs";

const sdk = client(env("SB_KEY"));

test("presets: create from chat, responses and messages; get; versions", async () => {
  const first = await sdk.presets.createPresetsChatCompletions({
    slug: "sdk-preset",
    chatRequest: {
      model: "openai/gpt-4o",
      temperature: 0.5,
      messages: [{ role: "system", content: "Be brief." }, { role: "user", content: "hi" }],
    },
  });
  assert.equal(first.data.slug, "sdk-preset");
  assert.equal(first.data.designatedVersion.version, 1);
  assert.equal(first.data.designatedVersion.systemPrompt, "Be brief.");
  assert.equal(first.data.designatedVersion.config.model, "openai/gpt-4o");
  assert.equal(first.data.designatedVersion.config.messages, undefined);

  const second = await sdk.presets.createPresetsResponses({
    slug: "sdk-preset",
    responsesRequest: { model: "openai/gpt-4o-mini", instructions: "Be kind.", input: "x" },
  });
  assert.equal(second.data.designatedVersion.version, 2);

  const third = await sdk.presets.createPresetsMessages({
    slug: "sdk-preset",
    messagesRequest: { model: "anthropic/claude-sonnet-4", maxTokens: 100, system: "Sys", messages: [{ role: "user", content: "x" }] },
  });
  assert.equal(third.data.designatedVersion.version, 3);

  const got = await sdk.presets.get({ slug: "sdk-preset" });
  assert.equal(got.data.designatedVersionId, third.data.designatedVersion.id);
  assert.equal(got.data.status, "active");

  const v1 = await sdk.presets.getVersion({ slug: "sdk-preset", version: "1" });
  assert.equal(v1.data.version, 1);
  assert.equal(v1.data.config.temperature, 0.5);

  const versions = await sdk.presets.listVersions({ slug: "sdk-preset" });
  assert.deepEqual(versions.result.data.map((v) => v.version), [1, 2, 3]);
  assert.equal(versions.result.totalCount, 3);

  const list = await sdk.presets.list();
  assert.ok(list.result.data.some((p) => p.slug === "sdk-preset"));
});

test("presets: 404 and 400 map to the SDK's error classes", async () => {
  await rejects(sdk.presets.get({ slug: "missing" }), errors.NotFoundResponseError, 404);
  await rejects(sdk.presets.getVersion({ slug: "sdk-preset", version: "x1" }), errors.BadRequestResponseError, 400);
});
