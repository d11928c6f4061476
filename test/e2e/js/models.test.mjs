import { test } from "node:test";
import assert from "node:assert/strict";
import { client, env } from "./common.mjs";

const sdk = client(env("SB_KEY"));

test("models.list: the configured catalog, with pricing, parsed by the SDK unchanged", async () => {
  const page = await sdk.models.list();
  const { data, totalCount, links } = page.result;
  assert.equal(totalCount, 3);
  assert.equal(links.next, null);
  const espeak = data.find((m) => m.id === "local/espeak");
  assert.ok(espeak, JSON.stringify(data));
  assert.equal(espeak.canonicalSlug, "local/espeak");
  assert.equal(espeak.pricing.prompt, "0.000001"); // per_million_characters: 1
  assert.equal(espeak.pricing.completion, "0");
  assert.deepEqual(espeak.architecture.outputModalities, ["audio"]);
  assert.equal(espeak.contextLength, null);
  assert.equal(espeak.topProvider.isModerated, false);
  assert.equal(typeof espeak.created, "number");
  const chat = data.find((m) => m.id === "chat/fake");
  assert.deepEqual([chat.pricing.prompt, chat.pricing.completion], ["0.000001", "0.000002"]); // per token
  assert.equal(chat.architecture.modality, "text->text");
  const sora = data.find((m) => m.id === "video/sora");
  assert.deepEqual(sora.architecture.outputModalities, ["video"]);

  const video = await sdk.models.list({ outputModalities: "video" });
  assert.deepEqual(video.result.data.map((m) => m.id), ["video/sora"]);
});

test("models.list: pages by offset and limit, as the SDK iterates them", async () => {
  const ids = [];
  for await (const page of await sdk.models.list({ limit: 1 })) {
    ids.push(...page.result.data.map((m) => m.id));
  }
  assert.deepEqual(ids, ["local/espeak", "video/sora", "chat/fake"]);
});

test("providers.list: the providers serving the catalog", async () => {
  const res = await sdk.providers.list();
  assert.deepEqual(res.data.map((p) => p.slug), ["local", "sora", "chatfake"]);
  assert.equal(res.data[0].privacyPolicyUrl, null);
});
