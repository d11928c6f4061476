// The Responses API through the openai npm client and @openrouter/sdk's responses.send, unchanged. The Go side
// (TestResponses) serves model resp/native from an OpenAI fake that speaks the Responses API (the call passes
// through) and resp/chat from one that only has chat completions (the call is translated), and checks afterwards
// what each fake received.
import { test } from "node:test";
import assert from "node:assert/strict";
import OpenAI from "openai";
import { client, env } from "./common.mjs";

const openai = new OpenAI({ apiKey: env("SB_KEY"), baseURL: env("SB_URL"), maxRetries: 0 });
const sdk = client(env("SB_KEY"));
const tools = [{
  type: "function", name: "get_weather", description: "The weather at a place",
  parameters: { type: "object", properties: { location: { type: "string" } }, required: ["location"] },
}];

// recorded waits for the call's generation record, readable with GET /generation.
async function recorded(id) {
  assert.match(id ?? "", /^gen-/);
  for (let i = 0; i < 100; i++) {
    const res = await fetch(`${env("SB_URL")}/generation?id=${id}`, { headers: { Authorization: `Bearer ${env("SB_KEY")}` } });
    if (res.status === 200) return (await res.json()).data;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`no generation record ${id}`);
}

// gather reads a stream of response.* events: the text, the calls, the event types, and the completed response.
async function gather(stream) {
  const out = { text: "", types: [], calls: [], completed: null, seq: [] };
  for await (const ev of stream) {
    out.types.push(ev.type);
    out.seq.push(ev.sequence_number);
    if (ev.type === "response.output_text.delta") out.text += ev.delta;
    if (ev.type === "response.output_item.done" && ev.item.type === "function_call") out.calls.push(ev.item);
    if (ev.type === "response.completed") out.completed = ev.response;
  }
  return out;
}

for (const [model, how] of [["resp/native", "passed through"], ["resp/chat", "translated to chat"]]) {
  test(`openai npm: responses.create not streamed, ${how}`, async () => {
    const { data: res, response } = await openai.responses
      .create({ model, input: "Hi there", instructions: "Be brief." })
      .withResponse();
    assert.equal(res.object, "response");
    assert.equal(res.status, "completed");
    assert.equal(res.output_text, "Hello from the fake upstream.");
    assert.equal(res.usage.output_tokens, 6);
    const rec = await recorded(response.headers.get("x-generation-id"));
    assert.equal(rec.model, model);
    assert.equal(rec.tokens_completion, 6);
    assert.equal(rec.streamed, false);
  });

  test(`openai npm: responses.create streamed, ${how}`, async () => {
    const { data: stream, response } = await openai.responses
      .create({ model, input: [{ role: "user", content: [{ type: "input_text", text: "Hi there" }] }], stream: true })
      .withResponse();
    const got = await gather(stream);
    assert.equal(got.text, "Hello from the fake upstream.");
    assert.deepEqual(got.types.slice(0, 2), ["response.created", "response.in_progress"]);
    assert.equal(got.types.at(-1), "response.completed");
    assert.ok(got.types.includes("response.output_item.done"));
    assert.deepEqual(got.seq, got.seq.map((_, i) => i), "sequence numbers count from 0");
    assert.equal(got.completed.usage.output_tokens, 6);
    const rec = await recorded(response.headers.get("x-generation-id"));
    assert.equal(rec.streamed, true);
  });

  test(`openai npm: a function call round trip, ${how}`, async () => {
    const input = [{ role: "user", content: "Weather in Paris?" }];
    const { data: first, response } = await openai.responses.create({ model, input, tools, stream: true }).withResponse();
    const got = await gather(first);
    assert.equal(got.calls.length, 1);
    const call = got.calls[0];
    assert.equal(call.name, "get_weather");
    assert.equal(call.arguments, '{"location":"Paris"}');
    await recorded(response.headers.get("x-generation-id"));
    input.push({ type: "function_call", call_id: call.call_id, name: call.name, arguments: call.arguments },
      { type: "function_call_output", call_id: call.call_id, output: "sunny, 21C" });
    const { data: res, response: second } = await openai.responses.create({ model, input, tools }).withResponse();
    assert.equal(res.output_text, "The tool said: sunny, 21C");
    await recorded(second.headers.get("x-generation-id"));
  });

  test(`@openrouter/sdk: responses.send, ${how}`, async () => {
    const res = await sdk.responses.send({ responsesRequest: { model, input: "Hi there" } });
    assert.equal(res.status, "completed");
    const text = res.output.flatMap((o) => o.content ?? []).map((c) => c.text).join("");
    assert.equal(text, "Hello from the fake upstream.");
    assert.equal(res.usage.outputTokens, 6);
    const stream = await sdk.responses.send({ responsesRequest: { model, input: "Hi there", stream: true } });
    let streamed = "";
    for await (const ev of stream) {
      if (ev.type === "response.output_text.delta") streamed += ev.delta;
    }
    assert.equal(streamed, "Hello from the fake upstream.");
  });
}

test("openai npm: previous_response_id, kept by a Responses upstream and refused where none keeps it", async () => {
  const res = await openai.responses.create({ model: "resp/native", input: "And then?", previous_response_id: "resp_fake" });
  assert.equal(res.status, "completed");
  await assert.rejects(
    openai.responses.create({ model: "resp/chat", input: "And then?", previous_response_id: "resp_fake" }),
    (e) => e.status === 400 && /previous_response_id/.test(e.message),
  );
});

test("openai npm: a bad input item is a 400 naming it", async () => {
  await assert.rejects(
    openai.responses.create({ model: "resp/chat", input: [{ role: "user", content: "hi" }, { role: "robot", content: "x" }] }),
    (e) => e.status === 400 && /input\[1\]\.role/.test(e.message),
  );
});
