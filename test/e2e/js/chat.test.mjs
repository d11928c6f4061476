// Chat completions through the openai npm client and @openrouter/sdk's chat.send, unchanged. The Go side serves
// model chat/fake from an OpenAI fake, and checks afterwards that the preset's system prompt and parameters
// reached it.
import { test } from "node:test";
import assert from "node:assert/strict";
import OpenAI from "openai";
import { client, env } from "./common.mjs";

const model = "chat/fake";
const openai = new OpenAI({ apiKey: env("SB_KEY"), baseURL: env("SB_URL"), maxRetries: 0 });
const sdk = client(env("SB_KEY"));
const hello = [{ role: "user", content: "Hi there" }];
const tools = [{
  type: "function",
  function: {
    name: "get_weather", description: "The weather at a place",
    parameters: { type: "object", properties: { location: { type: "string" } }, required: ["location"] },
  },
}];

test("openai npm: chat.completions.create, not streamed", async () => {
  const res = await openai.chat.completions.create({ model, messages: hello, temperature: 0.2, user: "u-1" });
  assert.equal(res.object, "chat.completion");
  assert.match(res.id, /^gen-/);
  assert.equal(res.choices[0].message.content, "Hello from the fake upstream.");
  assert.equal(res.choices[0].finish_reason, "stop");
  assert.equal(res.usage.completion_tokens, 6);
  assert.equal(res.usage.total_tokens, res.usage.prompt_tokens + 6);
});

test("openai npm: chat.completions.create, streamed with usage", async () => {
  const stream = await openai.chat.completions.create({ model, messages: hello, stream: true, stream_options: { include_usage: true } });
  let text = "", finish = null, usage = null;
  for await (const chunk of stream) {
    assert.equal(chunk.object, "chat.completion.chunk");
    for (const c of chunk.choices) {
      text += c.delta.content ?? "";
      finish = c.finish_reason ?? finish;
    }
    usage = chunk.usage ?? usage;
  }
  assert.equal(text, "Hello from the fake upstream.");
  assert.equal(finish, "stop");
  assert.equal(usage.completion_tokens, 6);
});

test("openai npm: a tool call round trip, streamed", async () => {
  const messages = [{ role: "user", content: "Weather in Paris?" }];
  const stream = await openai.chat.completions.create({ model, messages, tools, stream: true });
  const calls = [];
  let finish = null;
  for await (const chunk of stream) {
    for (const d of chunk.choices[0]?.delta.tool_calls ?? []) {
      calls[d.index] ??= { id: "", type: "function", function: { name: "", arguments: "" } };
      if (d.id) calls[d.index].id = d.id;
      calls[d.index].function.name += d.function?.name ?? "";
      calls[d.index].function.arguments += d.function?.arguments ?? "";
    }
    finish = chunk.choices[0]?.finish_reason ?? finish;
  }
  assert.equal(finish, "tool_calls");
  assert.equal(calls.length, 1);
  assert.equal(calls[0].function.name, "get_weather");
  assert.deepEqual(JSON.parse(calls[0].function.arguments), { location: "Paris" });
  messages.push({ role: "assistant", content: null, tool_calls: calls }, { role: "tool", tool_call_id: calls[0].id, content: "sunny, 21C" });
  const res = await openai.chat.completions.create({ model, messages, tools });
  assert.equal(res.choices[0].message.content, "The tool said: sunny, 21C");
});

test("@openrouter/sdk: chat.send, not streamed and streamed, with a tool call", async () => {
  const res = await sdk.chat.send({ chatRequest: { model, messages: hello, maxTokens: 3 } });
  assert.equal(res.object, "chat.completion");
  assert.equal(res.choices[0].message.content, " w0 w1 w2");
  assert.equal(res.choices[0].finishReason, "length");
  assert.equal(res.usage.completionTokens, 3);

  const tool = await sdk.chat.send({ chatRequest: { model, messages: [{ role: "user", content: "Weather?" }], tools } });
  assert.equal(tool.choices[0].finishReason, "tool_calls");
  assert.equal(tool.choices[0].message.toolCalls[0].function.name, "get_weather");

  const stream = await sdk.chat.send({ chatRequest: { model, messages: hello, stream: true, streamOptions: { includeUsage: true } } });
  let text = "", usage = null;
  for await (const chunk of stream) {
    text += chunk.choices[0]?.delta?.content ?? "";
    usage = chunk.usage ?? usage;
  }
  assert.equal(text, "Hello from the fake upstream.");
  assert.equal(usage.completionTokens, 6);
});

test("a preset applied by @preset/slug: its system prompt and parameters reach the upstream", async () => {
  await sdk.presets.createPresetsChatCompletions({
    slug: "chat-e2e",
    chatRequest: { model, temperature: 0.3, maxTokens: 4, messages: [{ role: "system", content: "You are a pirate." }] },
  });
  const res = await sdk.chat.send({ chatRequest: { model: "@preset/chat-e2e", messages: hello } });
  assert.equal(res.choices[0].message.content, " w0 w1 w2 w3"); // the preset's max_tokens

  const viaOpenAI = await openai.chat.completions.create({ model: "@preset/chat-e2e", messages: hello, max_tokens: 2 });
  assert.equal(viaOpenAI.choices[0].message.content, " w0 w1"); // the request's own max_tokens wins
});
