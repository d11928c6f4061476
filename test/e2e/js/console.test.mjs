// The management routes issue 35 added, through the SDK's own methods and schemas: activity, workspaces (get,
// update, members, budgets, delete), a model's endpoints, the model count and generation feedback.
import { test } from "node:test";
import assert from "node:assert/strict";
import * as errors from "@openrouter/sdk/models/errors";
import { client, env, rejects } from "./common.mjs";

const admin = () => client(env("SB_ADMIN"));

test("analytics.getUserActivity: today's activity by endpoint, one day, split by workspace", async () => {
  const all = await admin().analytics.getUserActivity({});
  const today = new Date().toISOString().slice(0, 10);
  const row = all.data.find((r) => r.date === today && r.model === "openai/tts-1");
  assert.ok(row, `no row for today's fixture in ${JSON.stringify(all.data)}`);
  assert.ok(row.requests >= 1);
  assert.equal(typeof row.usage, "number");
  assert.equal(row.endpointId, "openai/tts-1");
  assert.equal(row.workspaceId, undefined);

  const day = await admin().analytics.getUserActivity({ date: today, groupBy: "workspace" });
  assert.ok(day.data.length > 0 && day.data.every((r) => r.date === today && typeof r.workspaceId === "string"));

  const byKey = await admin().analytics.getUserActivity({ apiKeyHash: env("SB_KEY_HASH") });
  assert.ok(Array.isArray(byKey.data));

  await rejects(admin().analytics.getUserActivity({ date: "2000-01-01" }), errors.BadRequestResponseError, 400);
  await rejects(client(env("SB_KEY")).analytics.getUserActivity({}), errors.ForbiddenResponseError, 403);
});

test("workspaces: create, get, update, members, budgets, delete", async () => {
  const sdk = admin();
  const created = await sdk.workspaces.create({ createWorkspaceRequest: { name: "SDK console", slug: "sdk-console" } });
  const id = created.data.id;

  const got = await sdk.workspaces.get({ id: "sdk-console" });
  assert.equal(got.data.id, id);

  const updated = await sdk.workspaces.update({ id, updateWorkspaceRequest: { name: "SDK console 2", description: "from the SDK" } });
  assert.equal(updated.data.name, "SDK console 2");
  assert.equal(updated.data.description, "from the SDK");

  const listed = await sdk.workspaces.list({});
  assert.ok(listed.result.data.some((w) => w.id === id));

  const members = env("SB_MEMBER_IDS").split(",");
  const added = await sdk.workspaces.bulkAddMembers({ id, bulkAddWorkspaceMembersRequest: { userIds: members } });
  assert.equal(added.addedCount, members.length);
  assert.equal(added.data[0].workspaceId, id);
  const listedMembers = await sdk.workspaces.listMembers({ id });
  assert.equal(listedMembers.result.totalCount, members.length);
  const removed = await sdk.workspaces.bulkRemoveMembers({ id, bulkRemoveWorkspaceMembersRequest: { userIds: [members[0]] } });
  assert.equal(removed.removedCount, 1);

  const set = await sdk.workspaces.setBudget({ workspaceRef: id, interval: "daily", upsertWorkspaceBudgetRequest: { limitUsd: 12.5 } });
  assert.equal(set.data.limitUsd, 12.5);
  assert.equal(set.data.resetInterval, "daily");
  const budget = await sdk.workspaces.getBudget({ workspaceRef: "sdk-console", interval: "daily" });
  assert.equal(budget.data.id, set.data.id);
  const budgets = await sdk.workspaces.listBudgets({ workspaceRef: id });
  assert.equal(budgets.data.length, 1);
  const deletedBudget = await sdk.workspaces.deleteBudget({ workspaceRef: id, interval: "daily" });
  assert.equal(deletedBudget.deleted, true);
  await rejects(sdk.workspaces.getBudget({ workspaceRef: id, interval: "daily" }), errors.NotFoundResponseError, 404);

  const deleted = await sdk.workspaces.delete({ id });
  assert.equal(deleted.deleted, true);
  await rejects(sdk.workspaces.get({ id }), errors.NotFoundResponseError, 404);
});

test("endpoints.list and models.count", async () => {
  const eps = await client(env("SB_KEY")).endpoints.list({ author: "local", slug: "espeak" });
  assert.equal(eps.data.id, "local/espeak");
  assert.equal(eps.data.endpoints.length, 1);
  assert.equal(eps.data.endpoints[0].providerName, "local");
  assert.equal(typeof eps.data.endpoints[0].pricing.prompt, "string");
  await rejects(client(env("SB_KEY")).endpoints.list({ author: "local", slug: "none" }), errors.NotFoundResponseError, 404);

  const count = await client(env("SB_KEY")).models.count({});
  assert.equal(count.data.count, 3);
});

test("generations.submitFeedback", async () => {
  const res = await admin().generations.submitFeedback({
    submitGenerationFeedbackRequest: { generationId: env("SB_GENERATION_ID"), category: "latency", comment: "slow" },
  });
  assert.equal(res.data.success, true);
});
