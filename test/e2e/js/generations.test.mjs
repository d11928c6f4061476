import { test } from "node:test";
import assert from "node:assert/strict";
import * as errors from "@openrouter/sdk/models/errors";
import { client, env, rejects } from "./common.mjs";

const id = env("SB_GENERATION_ID");

test("generation record and content parse with the SDK's schemas", async () => {
  const rec = await client(env("SB_KEY")).generations.getGeneration({ id });
  assert.equal(rec.data.id, id);
  assert.equal(typeof rec.data.totalCost, "number");
  assert.equal(rec.data.dataRegion, "global");
  assert.ok(Array.isArray(rec.data.providerResponses));

  const content = await client(env("SB_ADMIN")).generations.listGenerationContent({ id });
  assert.ok(content.data.input);
  assert.equal(content.data.error, null);
});

test("generation content is for management keys; unknown ids are 404", async () => {
  try {
    await client(env("SB_KEY")).generations.listGenerationContent({ id });
    assert.fail("an inference key read generation content");
  } catch (e) {
    assert.equal(e.statusCode, 403);
    assert.ok(e instanceof errors.ForbiddenResponseError);
  }
  await rejects(client(env("SB_KEY")).generations.getGeneration({ id: "gen-0-missing" }), errors.NotFoundResponseError, 404);
});
