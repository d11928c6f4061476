// Shared set-up: the Go side (test/e2e) starts the gateway and passes what it made through the environment.
import { OpenRouter } from "@openrouter/sdk";

export const env = (name) => {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set: run these through "go test ./test/e2e/"`);
  return v;
};

// No retries: the SDK's default backs off on 5xx for up to an hour, which would hide failures.
export const client = (apiKey) =>
  new OpenRouter({ apiKey, serverURL: env("SB_URL"), retryConfig: { strategy: "none" } });

// rejects asserts that p fails with an error of class cls whose statusCode is status.
export async function rejects(p, cls, status) {
  try {
    await p;
  } catch (e) {
    if (!(e instanceof cls)) throw new Error(`expected ${cls.name}, got ${e?.constructor?.name}: ${e?.message}`);
    if (e.statusCode !== status) throw new Error(`expected status ${status}, got ${e.statusCode}`);
    if (typeof e.error?.code !== "number" || e.error.code !== status) throw new Error(`error.code ${e.error?.code} != ${status}`);
    return e;
  }
  throw new Error(`expected ${cls.name}, but the call succeeded`);
}
