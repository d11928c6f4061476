// Embeddings through the real clients, unchanged: the openai package (floats, and base64, its default), the
// reference SDK's embeddings.generate and listModels, and the Vercel AI SDK's embedMany with the OpenRouter
// provider, against OpenAI-compatible and Gemini fakes. Every call leaves a record readable with GET /generation.
import { test } from "node:test";
import assert from "node:assert/strict";
import OpenAI from "openai";
import { embedMany } from "ai";
import { createOpenRouter } from "@openrouter/ai-sdk-provider";
import * as errors from "@openrouter/sdk/models/errors";
import { client, env, rejects } from "./common.mjs";

// expected maps each input to the vector the fakes make of it (test/fakes.FakeVector).
const expected = JSON.parse(env("SB_EMBED_VECTORS"));
const inputs = Object.keys(expected);
const openai = new OpenAI({ apiKey: env("SB_KEY"), baseURL: env("SB_URL"), maxRetries: 0 });

// same compares vectors as float32s: JSON numbers are float32s' shortest forms, base64 their exact values.
function same(got, input) {
  const want = expected[input];
  assert.equal(got.length, want.length, `vector of ${input}`);
  for (let i = 0; i < want.length; i++) assert.equal(Math.fround(got[i]), Math.fround(want[i]), `${input}[${i}]`);
}

// record waits for a call's generation record, written just after the answer.
async function record(id) {
  assert.match(id ?? "", /^gen-/);
  for (let i = 0; i < 100; i++) {
    const res = await fetch(`${env("SB_URL")}/generation?id=${id}`, { headers: { Authorization: `Bearer ${env("SB_KEY")}` } });
    if (res.status === 200) return (await res.json()).data;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`no record ${id}`);
}

test("openai embeddings.create as floats", async () => {
  const res = await openai.embeddings.create({ model: "embed/openai", input: inputs, encoding_format: "float" });
  res.data.forEach((d, i) => same(d.embedding, inputs[i]));
  assert.equal(res.model, "embed/openai");
  assert.ok(res.usage.prompt_tokens > 0);
  const rec = await record(res.id);
  assert.equal(rec.api_type, "embeddings");
  assert.equal(rec.provider_name, "openai");
  assert.equal(rec.tokens_prompt, res.usage.prompt_tokens);
});

test("openai embeddings.create as base64, its default, from OpenAI and from Gemini's floats", async () => {
  for (const [model, provider] of [["embed/openai", "openai"], ["embed/gemini", "gemini"]]) {
    const res = await openai.embeddings.create({ model, input: inputs[0] });
    same(res.data[0].embedding, inputs[0]);
    assert.equal((await record(res.id)).provider_name, provider);
  }
});

test("openai embeddings.create fails over, and the upstream's refusal is the caller's 400", async () => {
  const res = await openai.embeddings.create({ model: "embed/failover", input: inputs[0] });
  same(res.data[0].embedding, inputs[0]);
  const rec = await record(res.id);
  assert.deepEqual(rec.provider_responses.map((p) => [p.provider_name, p.status]), [["broken", 503], ["gemini", 200]]);
  try {
    await openai.embeddings.create({ model: "embed/refusing", input: inputs[0] });
    assert.fail("the refused call succeeded");
  } catch (e) {
    assert.ok(e instanceof OpenAI.BadRequestError, `${e}`);
    assert.match(e.message, /'\$\.input' is invalid/);
    const failed = await record(e.headers.get("x-generation-id"));
    assert.equal(failed.total_cost, 0);
  }
  await assert.rejects(openai.embeddings.create({ model: "embed/openai", input: [] }), OpenAI.BadRequestError);
});

test("@openrouter/sdk embeddings.generate and listModels", async () => {
  const sdk = client(env("SB_KEY"));
  const res = await sdk.embeddings.generate({ requestBody: { model: "embed/gemini", input: inputs, encodingFormat: "float" } });
  res.data.forEach((d, i) => same(d.embedding, inputs[i]));
  assert.equal(res.object, "list");
  assert.ok(res.usage.promptTokens > 0);
  assert.equal((await record(res.id)).api_type, "embeddings");
  const page = await sdk.embeddings.listModels();
  assert.deepEqual(page.result.data.map((m) => m.id).sort(), ["embed/failover", "embed/gemini", "embed/openai", "embed/refusing"]);
  assert.deepEqual(page.result.data[0].architecture.outputModalities, ["embeddings"]);
  await rejects(sdk.embeddings.generate({ requestBody: { model: "missing", input: "x" } }), errors.NotFoundResponseError, 404);
});

test("the AI SDK's embedMany with @openrouter/ai-sdk-provider", async () => {
  const openrouter = createOpenRouter({ baseURL: env("SB_URL"), apiKey: env("SB_KEY") });
  const res = await embedMany({ model: openrouter.textEmbeddingModel("embed/openai"), values: inputs, maxRetries: 0 });
  res.embeddings.forEach((v, i) => same(v, inputs[i]));
  assert.ok(res.usage.tokens > 0);
  assert.equal((await record(res.responses[0].body.id)).api_type, "embeddings");
});
