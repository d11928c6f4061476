import { test } from "node:test";
import assert from "node:assert/strict";
import * as errors from "@openrouter/sdk/models/errors";
import { client, env, rejects } from "./common.mjs";

const admin = client(env("SB_ADMIN"));

test("API keys: create, get, list, update, delete, current key", async () => {
  const created = await admin.apiKeys.create({
    requestBody: { name: "sdk-key", limit: 5, limitReset: "weekly", expiresAt: new Date("2099-01-01T00:00:00Z") },
  });
  assert.match(created.key, /^sk-sb-v1-/);
  assert.equal(created.data.name, "sdk-key");
  assert.equal(created.data.limit, 5);
  assert.equal(created.data.limitReset, "weekly");
  assert.ok(created.data.expiresAt instanceof Date);
  const hash = created.data.hash;

  const got = await admin.apiKeys.get({ hash });
  assert.equal(got.data.hash, hash);

  const list = await admin.apiKeys.list();
  assert.ok(list.data.some((k) => k.hash === hash));

  const updated = await admin.apiKeys.update({ hash, requestBody: { name: "renamed", limit: null } });
  assert.equal(updated.data.name, "renamed");
  assert.equal(updated.data.limit, null);

  const me = await client(created.key).apiKeys.getCurrentKeyMetadata();
  assert.equal(me.data.isManagementKey, false);
  assert.equal(me.data.label, created.data.label);

  const deleted = await admin.apiKeys.delete({ hash });
  assert.equal(deleted.deleted, true);
  await rejects(admin.apiKeys.get({ hash }), errors.NotFoundResponseError, 404);
});

test("401 without a valid key, 403 for an inference key on management routes", async () => {
  await rejects(client("sk-sb-v1-nope").apiKeys.list(), errors.UnauthorizedResponseError, 401);
  // apiKeys.list maps no 403, so the SDK reports it as the default error; the status is what matters.
  try {
    await client(env("SB_KEY")).apiKeys.list();
    assert.fail("an inference key listed keys");
  } catch (e) {
    assert.equal(e.statusCode, 403);
  }
});

test("organization members", async () => {
  const res = await admin.organization.listMembers({ limit: 10 });
  assert.ok(res.result.totalCount >= 1);
  assert.equal(typeof res.result.data[0].email, "string");
});
