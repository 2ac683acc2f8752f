// The official npm ACP client against the real cleveragents-lsp: a plan on an unsaved
// buffer (fs/read_text_file) whose steps show live, a command step's output in a
// client terminal, and a plain prompt's tool call. Run by test_sdk_node.py.
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect, text } from "./client.mjs";

const ACTION = `description = "Say hello, then edit"
[[steps]]
id = "say"
tool = "shell.run"
arguments = { command = "echo hello from the step" }
[[steps]]
id = "edit"
tool = "fs.replace"
arguments = { pattern = "TODO", replacement = "DONE", glob = "notes.txt" }
`;
const DISK = "first TODO\n";
const BUFFER = "first TODO\nan unsaved TODO\n";

function workspace() {
  const root = mkdtempSync(join(tmpdir(), "acp-node-io-"));
  mkdirSync(join(root, ".cleveragents", "actions"), { recursive: true });
  writeFileSync(join(root, ".cleveragents", "actions", "greet-and-edit.toml"), ACTION);
  writeFileSync(join(root, "notes.txt"), DISK);
  return root;
}

test("a plan on an unsaved buffer: live steps, a terminal, the buffer's diff", async () => {
  const root = workspace();
  const notes = join(root, "notes.txt");
  const { conn, recorder, close } = await connect(root, { fs: { readTextFile: true }, terminal: true });
  try {
    recorder.buffers.set(notes, BUFFER);
    const { sessionId } = await conn.newSession({ cwd: root, mcpServers: [] });
    await conn.setSessionMode({ sessionId, modeId: "autonomous" });
    const answer = await conn.prompt({ sessionId, prompt: text("/plan greet-and-edit") });
    assert.equal(answer.stopReason, "end_turn");

    assert.deepEqual(recorder.of("plan").map((p) => p.entries.map((e) => e.status)), [
      ["pending", "pending"], ["in_progress", "pending"], ["completed", "pending"],
      ["completed", "in_progress"], ["completed", "completed"],
    ]);
    const steps = recorder.updates.filter((u) => u.toolCallId?.match(/-(say|edit)$/) && u.status);
    assert.deepEqual(steps.map((u) => [u.sessionUpdate, u.toolCallId.split("-").at(-1), u.status]), [
      ["tool_call", "say", "in_progress"], ["tool_call_update", "say", "completed"],
      ["tool_call", "edit", "in_progress"], ["tool_call_update", "edit", "completed"],
    ]);

    const [[terminalId, terminal]] = [...recorder.terminals];
    assert.equal((await terminal.exit).output, "hello from the step\n");
    assert.deepEqual(recorder.released, [terminalId]);
    const shown = recorder.of("tool_call_update").flatMap((u) => u.content ?? []).filter((c) => c.type === "terminal");
    assert.deepEqual(shown, [{ type: "terminal", terminalId }]);

    assert.ok(recorder.reads.includes(notes));
    const diff = recorder.of("tool_call").find((c) => c.kind === "edit" && c.content?.length).content[0];
    assert.equal(diff.oldText, BUFFER);
    assert.equal(diff.newText, BUFFER.replaceAll("TODO", "DONE"));
    assert.equal(readFileSync(notes, "utf8"), BUFFER.replaceAll("TODO", "DONE"));
  } finally {
    await close();
  }
});

test("a plain prompt's tool call", async () => {
  const root = workspace();
  const { conn, recorder, close } = await connect(root, {});
  try {
    const { sessionId } = await conn.newSession({ cwd: root, mcpServers: [] });
    await conn.prompt({ sessionId, prompt: text("fs.search TODO") });
    const calls = recorder.updates.filter((u) => u.sessionUpdate.startsWith("tool_call"));
    assert.deepEqual(calls.map((u) => [u.sessionUpdate, u.kind ?? null, u.status]),
      [["tool_call", "search", "in_progress"], ["tool_call_update", null, "completed"]]);
    assert.equal(calls[0].toolCallId, calls[1].toolCallId);
    assert.deepEqual(calls[0].rawInput.pattern, "TODO");
  } finally {
    await close();
  }
});
