// The TypeScript SDK (v1) client's experimental tasks API runs tool calls
// as 2025-11-25 tasks, over stdio and over Streamable HTTP: a task runs to
// its result, asks the user through tasks/result, fails, and is cancelled.
import { test } from "node:test";
import assert from "node:assert/strict";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { transports } from "./transports.mjs";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";

async function collect(stream) {
  const messages = [];
  for await (const message of stream) messages.push(message);
  return messages;
}

for (const [name, transport] of Object.entries(transports)) {
  test(`runs tool calls as tasks over ${name}`, async () => {
    const client = new Client(
      { name: "ts-tasks", version: "1.0.0" },
      { capabilities: { elicitation: {} }, defaultTaskPollInterval: 100 },
    );
    client.setRequestHandler(ElicitRequestSchema, async (request) => {
      assert.equal(request.params.message, "Delete ts.txt?");
      return { action: "accept", content: { confirm: true } };
    });
    await client.connect(transport());
    try {
      assert.ok(client.getServerCapabilities().tasks?.requests?.tools?.call);
      await client.listTools();
      const tasks = client.experimental.tasks;

      // Runs to its result: created, polled, answered.
      const run = await collect(tasks.callToolStream({ name: "slow_compute", arguments: { seconds: 1, label: "ts" } }));
      assert.equal(run[0].type, "taskCreated");
      const taskId = run[0].task.taskId;
      assert.ok(run.some((m) => m.type === "taskStatus" && m.task.taskId === taskId));
      const last = run.at(-1);
      assert.equal(last.type, "result", JSON.stringify(last));
      assert.equal(last.result.content[0].text, "Computed ts in 1s");
      assert.equal((await tasks.getTask(taskId)).status, "completed");

      // Asks the user: the elicitation arrives while tasks/result waits.
      const asked = await collect(tasks.callToolStream({ name: "confirm_delete", arguments: { filename: "ts.txt" } }));
      assert.equal(asked.at(-1).type, "result", JSON.stringify(asked.at(-1)));
      assert.equal(asked.at(-1).result.content[0].text, "Deleted ts.txt");

      // A tool that only runs as a task, and fails.
      await assert.rejects(client.callTool({ name: "failing_job", arguments: {} }), /requires task-based execution/);
      const failed = await collect(tasks.callToolStream({ name: "failing_job", arguments: {} }));
      assert.equal(failed.at(-1).type, "error");
      assert.match(failed.at(-1).error.message, /failed/);

      // Cancelled while it runs; listed with the session's other tasks.
      const stream = tasks.callToolStream({ name: "slow_compute", arguments: { seconds: 60 } });
      const created = (await stream.next()).value;
      assert.equal(created.type, "taskCreated");
      const cancelled = await tasks.cancelTask(created.task.taskId);
      assert.equal(cancelled.status, "cancelled");
      await stream.return();
      await assert.rejects(tasks.cancelTask(created.task.taskId), /terminal status/);
      const listed = (await tasks.listTasks()).tasks.map((t) => t.taskId);
      assert.ok(listed.includes(taskId) && listed.includes(created.task.taskId), JSON.stringify(listed));
    } finally {
      await client.close();
    }
  });
}
