// The Anthropic SDK, unchanged, against POST /api/v1/messages: SB_MESSAGES_MODEL names the model the calls go to
// (an Anthropic fake, or an OpenAI-compatible one the gateway translates for); the Go side (test/e2e) checks what
// the fake received.
import { test } from "node:test";
import assert from "node:assert/strict";
import Anthropic from "@anthropic-ai/sdk";
import { env } from "./common.mjs";

const model = () => env("SB_MESSAGES_MODEL");
// No retries: a failure shows at once. The key goes as x-api-key (apiKey), as the SDK sends it.
const client = () => new Anthropic({ baseURL: env("SB_ANTHROPIC_URL"), apiKey: env("SB_KEY"), maxRetries: 0 });
const sentence = "Hello from the fake upstream.";

const weather = {
  name: "get_weather",
  description: "The weather in a city",
  input_schema: { type: "object", properties: { location: { type: "string" } }, required: ["location"] },
};

test("messages.create answers a message", async () => {
  const msg = await client().messages.create({ model: model(), max_tokens: 1024, messages: [{ role: "user", content: "Hi" }] });
  assert.equal(msg.type, "message");
  assert.equal(msg.role, "assistant");
  assert.equal(msg.content[0].type, "text");
  assert.equal(msg.content[0].text, sentence);
  assert.equal(msg.stop_reason, "end_turn");
  assert.ok(msg.usage.output_tokens > 0);
});

test("messages.stream streams the message event by event", async () => {
  const stream = client().messages.stream({ model: model(), max_tokens: 32000, messages: [{ role: "user", content: "Hi" }] });
  const types = [];
  let text = "";
  for await (const ev of stream) {
    types.push(ev.type);
    if (ev.type === "content_block_delta" && ev.delta.type === "text_delta") text += ev.delta.text;
  }
  const msg = await stream.finalMessage();
  assert.equal(text, sentence);
  assert.equal(msg.content[0].text, sentence);
  assert.equal(msg.stop_reason, "end_turn");
  assert.equal(types[0], "message_start");
  assert.equal(types.at(-1), "message_stop");
  assert.ok(types.includes("content_block_start") && types.includes("content_block_stop") && types.includes("message_delta"));
});

test("a tool use round trip", async () => {
  for (const stream of [false, true]) {
    const messages = [{ role: "user", content: "What is the weather in Paris?" }];
    const ask = (msgs) => {
      const params = { model: model(), max_tokens: 1024, tools: [weather], messages: msgs };
      return stream ? client().messages.stream(params).finalMessage() : client().messages.create(params);
    };
    const first = await ask(messages);
    assert.equal(first.stop_reason, "tool_use", JSON.stringify(first));
    const use = first.content.find((b) => b.type === "tool_use");
    assert.equal(use.name, "get_weather");
    assert.deepEqual(use.input, { location: "Paris" });
    messages.push({ role: "assistant", content: first.content });
    messages.push({ role: "user", content: [{ type: "tool_result", tool_use_id: use.id, content: "sunny" }] });
    const second = await ask(messages);
    assert.equal(second.stop_reason, "end_turn");
    assert.match(second.content[0].text, /sunny/);
  }
});

test("system blocks with cache_control, and a thinking block sent back", async () => {
  const msg = await client().messages.create(
    {
      model: model(),
      max_tokens: 1024,
      system: [
        { type: "text", text: "You are terse." },
        { type: "text", text: "SYSTEM-CACHED", cache_control: { type: "ephemeral", ttl: "1h" } },
      ],
      messages: [
        { role: "user", content: "Think first." },
        {
          role: "assistant",
          content: [
            { type: "thinking", thinking: "THINKING-SENT-BACK", signature: "c2lnbmF0dXJlLW9mLXRoZS10aGlua2luZw==" },
            { type: "text", text: "I thought." },
          ],
        },
        { role: "user", content: [{ type: "text", text: "Go on.", cache_control: { type: "ephemeral" } }] },
      ],
    },
    { headers: { "anthropic-beta": "interleaved-thinking-2025-05-14" } },
  );
  assert.equal(msg.content[0].text, sentence);
});

test("count_tokens counts the input", async () => {
  const n = await client().messages.countTokens({ model: model(), messages: [{ role: "user", content: "Count these words please" }] });
  assert.equal(typeof n.input_tokens, "number");
  assert.ok(n.input_tokens > 0);
});

test("errors are the SDK's typed errors", async () => {
  await assert.rejects(
    client().messages.create({ model: "no/such-model", max_tokens: 10, messages: [{ role: "user", content: "Hi" }] }),
    (e) => e instanceof Anthropic.NotFoundError && e.status === 404 && e.error?.type === "error",
  );
  await assert.rejects(
    new Anthropic({ baseURL: env("SB_ANTHROPIC_URL"), apiKey: "sk-or-v1-wrong", maxRetries: 0 }).messages.create({
      model: model(), max_tokens: 10, messages: [{ role: "user", content: "Hi" }],
    }),
    (e) => e instanceof Anthropic.AuthenticationError && e.status === 401,
  );
  await assert.rejects(
    client().messages.create({ model: model(), messages: [{ role: "user", content: "Hi" }] }),
    (e) => e instanceof Anthropic.BadRequestError && /max_tokens/.test(e.message),
  );
  if (process.env.SB_FAILING_MODEL) {
    await assert.rejects(
      client().messages.create({ model: env("SB_FAILING_MODEL"), max_tokens: 10, messages: [{ role: "user", content: "Hi" }] }),
      (e) => e instanceof Anthropic.RateLimitError && e.status === 429,
    );
  }
});

test("models.list answers Anthropic's list, and an alias names its model", async (t) => {
  const alias = process.env.SB_MODEL_ALIAS;
  if (!alias) return t.skip("no alias configured");
  const page = await client().models.list({ limit: 1000 });
  const ids = page.data.map((m) => m.id);
  assert.ok(ids.includes(model()) && ids.includes(alias), ids.join(","));
  const listed = page.data.find((m) => m.id === alias);
  assert.equal(listed.type, "model");
  assert.equal(listed.display_name, model());
  assert.ok(!Number.isNaN(Date.parse(listed.created_at)));
  const first = await client().models.list({ limit: 1 });
  assert.equal(first.data.length, 1);
  assert.equal(first.has_more, true);
  assert.equal(first.first_id, first.data[0].id);
  const msg = await client().messages.create({ model: alias, max_tokens: 1024, messages: [{ role: "user", content: "Hi" }] });
  assert.equal(msg.content[0].text, sentence);
});

test("a stream that breaks after its first token ends with an error event the SDK raises", async (t) => {
  const broken = process.env.SB_BROKEN_MODEL;
  if (!broken) return t.skip("no broken model configured");
  let text = "";
  const stream = client().messages.stream({ model: broken, max_tokens: 100, messages: [{ role: "user", content: "Hi" }] });
  stream.on("text", (d) => (text += d));
  await assert.rejects(stream.finalMessage(), (e) => e instanceof Anthropic.APIError && /overloaded/i.test(e.message));
  assert.equal(text, "partial");
});
