import { test } from "node:test";
import assert from "node:assert/strict";
import * as errors from "@openrouter/sdk/models/errors";
import { client, env, rejects } from "./common.mjs";

const admin = client(env("SB_ADMIN"));
const memberIds = env("SB_MEMBER_IDS").split(",");

test("guardrails: create, get, list, update with null, delete", async () => {
  const created = await admin.guardrails.create({
    createGuardrailRequest: {
      name: "sdk-rail",
      description: "made by the SDK",
      limitUsd: 25,
      resetInterval: "monthly",
      allowedProviders: ["openai"],
      contentFilters: [{ pattern: "secret", action: "block" }],
      contentFilterBuiltins: [{ slug: "email", action: "redact" }],
      enforceZdr: true,
    },
  });
  const g = created.data;
  assert.equal(g.name, "sdk-rail");
  assert.equal(g.limitUsd, 25);
  assert.equal(g.resetInterval, "monthly");
  assert.equal(g.contentFilterBuiltins[0].label, "[EMAIL]");
  assert.equal(typeof g.workspaceId, "string");

  assert.equal((await admin.guardrails.get({ id: g.id })).data.id, g.id);
  const list = await admin.guardrails.list({ limit: 10 });
  assert.ok(list.result.totalCount >= 1);

  const updated = await admin.guardrails.update({ id: g.id, updateGuardrailRequest: { description: null, limitUsd: 30 } });
  assert.equal(updated.data.description, null);
  assert.equal(updated.data.limitUsd, 30);
  assert.equal(updated.data.name, "sdk-rail");

  const gone = await admin.guardrails.delete({ id: g.id });
  assert.equal(gone.deleted, true);
  await rejects(admin.guardrails.get({ id: g.id }), errors.NotFoundResponseError, 404);
});

test("guardrails: bulk member and key assignments", async () => {
  const { data: g } = await admin.guardrails.create({ createGuardrailRequest: { name: "assign-rail" } });

  const first = await admin.guardrails.bulkAssignMembers({ id: g.id, bulkAssignMembersRequest: { memberUserIds: memberIds } });
  assert.equal(first.assignedCount, memberIds.length);
  const again = await admin.guardrails.bulkAssignMembers({ id: g.id, bulkAssignMembersRequest: { memberUserIds: memberIds } });
  assert.equal(again.assignedCount, 0);

  const ofRail = await admin.guardrails.listGuardrailMemberAssignments({ id: g.id });
  assert.equal(ofRail.result.totalCount, memberIds.length);
  const all = await admin.guardrails.listMemberAssignments();
  assert.ok(all.result.data.every((a) => typeof a.organizationId === "string"));

  const removed = await admin.guardrails.bulkUnassignMembers({ id: g.id, bulkUnassignMembersRequest: { memberUserIds: [memberIds[0]] } });
  assert.equal(removed.unassignedCount, 1);

  const keys = await admin.guardrails.bulkAssignKeys({ id: g.id, bulkAssignKeysRequest: { keyHashes: [env("SB_KEY_HASH")] } });
  assert.equal(keys.assignedCount, 1);
  const keyList = await admin.guardrails.listGuardrailKeyAssignments({ id: g.id });
  assert.equal(keyList.result.data[0].keyHash, env("SB_KEY_HASH"));
  assert.equal((await admin.guardrails.listKeyAssignments()).result.totalCount, 1);
  const unkeyed = await admin.guardrails.bulkUnassignKeys({ id: g.id, bulkUnassignKeysRequest: { keyHashes: [env("SB_KEY_HASH")] } });
  assert.equal(unkeyed.unassignedCount, 1);

  await rejects(
    admin.guardrails.bulkAssignMembers({ id: g.id, bulkAssignMembersRequest: { memberUserIds: [] } }),
    errors.BadRequestResponseError, 400);
  await rejects(
    admin.guardrails.bulkAssignMembers({ id: g.id, bulkAssignMembersRequest: { memberUserIds: ["user_nobody"] } }),
    errors.BadRequestResponseError, 400);
  await rejects(
    admin.guardrails.bulkAssignMembers({ id: "00000000-0000-4000-8000-000000000000", bulkAssignMembersRequest: { memberUserIds: memberIds } }),
    errors.NotFoundResponseError, 404);
  await admin.guardrails.delete({ id: g.id });
});
