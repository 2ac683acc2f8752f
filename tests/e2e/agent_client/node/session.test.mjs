// The official npm ACP client (ClientSideConnection) runs a whole session against the
// real cleveragents-lsp: streamed chunks, a plan with a diff and a permission request
// (granted, then refused), apply, /rollback, cancel and a mode change. Every message the
// agent sends is checked against the SDK's zod schemas, extra keys included.
// Run by tests/e2e/agent_client/test_sdk_node.py, which sets CLEVERAGENTS_LSP.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";

// The schemas are not in the package's exports: import the file itself.
const zod = await import(new URL("./node_modules/@agentclientprotocol/sdk/dist/schema/zod.gen.js", import.meta.url));
const CALLS = {
  "session/update": zod.zSessionNotification,
  "session/request_permission": zod.zRequestPermissionRequest,
  "fs/write_text_file": zod.zWriteTextFileRequest,
};
const RESULTS = {
  initialize: zod.zInitializeResponse,
  "session/new": zod.zNewSessionResponse,
  "session/load": zod.zLoadSessionResponse,
  "session/prompt": zod.zPromptResponse,
  "session/set_mode": zod.zSetSessionModeResponse,
  "session/set_config_option": zod.zSetSessionConfigOptionResponse,
  "session/list": zod.zListSessionsResponse,
  "session/close": zod.zCloseSessionResponse,
  "session/resume": zod.zResumeSessionResponse,
  "session/fork": zod.zForkSessionResponse,
  "session/delete": zod.zDeleteSessionResponse,
};
const ORIGINAL = "first TODO\r\nsecond line: TODO";

function workspace() {
  const root = mkdtempSync(join(tmpdir(), "acp-node-"));
  mkdirSync(join(root, ".cleveragents"));
  writeFileSync(join(root, ".cleveragents", "config.toml"),
    '[defaults]\ndefault_actor = "python/tests.fakes.agents:slow_words"\n');
  writeFileSync(join(root, "notes.txt"), ORIGINAL);
  return root;
}

// Splits a byte stream into lines and hands each on, passing the bytes through unchanged.
function tap(onLine) {
  let pending = "";
  const decoder = new TextDecoder();
  return new TransformStream({
    transform(chunk, controller) {
      pending += decoder.decode(chunk, { stream: true });
      let end;
      while ((end = pending.indexOf("\n")) >= 0) {
        onLine(pending.slice(0, end));
        pending = pending.slice(end + 1);
      }
      controller.enqueue(chunk);
    },
  });
}

class Recorder {
  constructor() {
    this.updates = [];
    this.permissionAnswers = [];
    this.permissionRequests = [];
  }
  async sessionUpdate(params) {
    this.updates.push(params.update);
  }
  async requestPermission(params) {
    this.permissionRequests.push(params);
    const kind = this.permissionAnswers.shift() ?? "reject_once";
    return { outcome: { outcome: "selected", optionId: params.options.find((o) => o.kind === kind).optionId } };
  }
  async writeTextFile() {
    throw new Error("not declared");
  }
  async readTextFile() {
    throw new Error("not declared");
  }
  texts() {
    return this.updates.filter((u) => u.sessionUpdate === "agent_message_chunk").map((u) => u.content.text);
  }
  of(kind) {
    return this.updates.filter((u) => u.sessionUpdate === kind);
  }
}

async function connect(cwd) {
  const server = process.env.CLEVERAGENTS_LSP;
  assert.ok(server, "CLEVERAGENTS_LSP names the server to run");
  const child = spawn(server, ["--protocol", "acp"], { cwd, stdio: ["pipe", "pipe", "inherit"], env: process.env });
  const sent = new Map(); // the client's request ids -> methods
  const received = [];
  const outgoing = Writable.toWeb(child.stdin);
  const writer = new WritableStream({
    async write(chunk) {
      for (const line of new TextDecoder().decode(chunk).split("\n").filter(Boolean)) {
        const message = JSON.parse(line);
        if (message.method && message.id !== undefined) sent.set(message.id, message.method);
      }
      const w = outgoing.getWriter();
      try { await w.write(chunk); } finally { w.releaseLock(); }
    },
    close: () => outgoing.close(),
  });
  const incoming = Readable.toWeb(child.stdout).pipeThrough(tap((line) => received.push(JSON.parse(line))));
  const recorder = new Recorder();
  const conn = new acp.ClientSideConnection(() => recorder, acp.ndJsonStream(writer, incoming));
  const init = await conn.initialize({ protocolVersion: acp.PROTOCOL_VERSION, clientCapabilities: {} });
  assert.equal(init.protocolVersion, acp.PROTOCOL_VERSION);
  assert.equal(init.agentCapabilities.loadSession, true);
  assert.deepEqual(Object.keys(init.agentCapabilities.sessionCapabilities).sort(),
    ["close", "delete", "fork", "list", "resume"]);
  const close = async () => {
    child.stdin.end();
    await new Promise((resolve) => child.once("exit", resolve));
    // Every message the agent sent: valid for its schema, and nothing the schema doesn't name.
    assert.ok(received.length > 0);
    for (const message of received) {
      let schema;
      if (message.method) schema = CALLS[message.method];
      else if ("result" in message) schema = RESULTS[sent.get(message.id)];
      else {
        assert.equal(typeof message.error.code, "number");
        continue;
      }
      assert.ok(schema, `no schema for ${JSON.stringify(message).slice(0, 200)}`);
      const payload = message.method ? message.params : message.result;
      known(payload, schema.parse(payload), message.method ?? sent.get(message.id));
    }
  };
  return { conn, recorder, close };
}

// Every key the agent sent survived the parse: zod drops keys its schema doesn't name
// (and fills in defaults, which are the schema's own).
function known(sentValue, parsed, where) {
  if (sentValue === null || typeof sentValue !== "object") return;
  for (const [key, value] of Object.entries(sentValue)) {
    assert.ok(parsed !== null && typeof parsed === "object" && key in parsed, `${where}: unknown key ${key}`);
    known(value, parsed[key], `${where}.${key}`);
  }
}

const PLAN = "/plan replace pattern=TODO replacement=DONE glob=notes.txt";
const text = (value) => [{ type: "text", text: value }];

test("a whole session: chunks, a diff, permissions, apply, rollback, cancel, modes", async () => {
  const root = workspace();
  const { conn, recorder, close } = await connect(root);
  try {
    const { sessionId, modes } = await conn.newSession({ cwd: root, mcpServers: [] });
    assert.equal(modes.currentModeId, "supervised");

    let answer = await conn.prompt({ sessionId, prompt: text("one two three") });
    assert.equal(answer.stopReason, "end_turn");
    assert.deepEqual(recorder.texts(), ["one ", "two ", "three "]);
    const commands = recorder.of("available_commands_update")[0].availableCommands.map((c) => c.name);
    assert.ok(commands.includes("rollback"));

    recorder.permissionAnswers.push("reject_once");
    await conn.prompt({ sessionId, prompt: text(PLAN) });
    assert.equal(recorder.permissionRequests.length, 1);
    assert.equal(readFileSync(join(root, "notes.txt"), "utf8"), ORIGINAL);

    recorder.permissionAnswers.push("allow_once");
    answer = await conn.prompt({ sessionId, prompt: text(PLAN) });
    assert.equal(answer.stopReason, "end_turn");
    const changes = recorder.of("tool_call").filter((c) => c.kind === "edit" && c.content?.length);
    const diff = changes.at(-1).content[0];
    assert.equal(diff.type, "diff");
    assert.equal(diff.path, join(root, "notes.txt"));
    assert.equal(diff.oldText, ORIGINAL);
    assert.equal(diff.newText, ORIGINAL.replaceAll("TODO", "DONE"));
    assert.deepEqual(recorder.permissionRequests[1].options.map((o) => o.kind).sort(),
      ["allow_always", "allow_once", "reject_always", "reject_once"]);
    assert.equal(readFileSync(join(root, "notes.txt"), "utf8"), ORIGINAL.replaceAll("TODO", "DONE"));
    assert.ok(recorder.of("plan").length > 0);

    await conn.prompt({ sessionId, prompt: text("/rollback") });
    assert.equal(readFileSync(join(root, "notes.txt"), "utf8"), ORIGINAL);

    recorder.updates.length = 0;
    const running = conn.prompt({ sessionId, prompt: text(Array.from({ length: 40 }, (_, n) => `w${n}`).join(" ")) });
    while (recorder.texts().length === 0) await new Promise((resolve) => setTimeout(resolve, 20));
    await conn.cancel({ sessionId });
    assert.equal((await running).stopReason, "cancelled");
    assert.ok(recorder.texts().length < 40);

    await conn.setSessionMode({ sessionId, modeId: "manual" });
    await new Promise((resolve) => setTimeout(resolve, 200));
    assert.deepEqual(recorder.of("current_mode_update").map((u) => u.currentModeId), ["manual"]);
  } finally {
    await close();
  }
});

test("load after a restart replays the history", async () => {
  const root = workspace();
  let first = await connect(root);
  let sessionId;
  try {
    ({ sessionId } = await first.conn.newSession({ cwd: root, mcpServers: [] }));
    await first.conn.prompt({ sessionId, prompt: text("hello there") });
  } finally {
    await first.close();
  }
  const second = await connect(root);
  try {
    await second.conn.loadSession({ sessionId, cwd: root, mcpServers: [] });
    assert.deepEqual(second.recorder.updates.filter((u) => u.content).map((u) => [u.sessionUpdate, u.content.text]),
      [["user_message_chunk", "hello there"], ["agent_message_chunk", "hello there "]]);
  } finally {
    await second.close();
  }
});

test("what a session keeps across restarts; list, close, resume and fork", async () => {
  const root = workspace();
  let first = await connect(root);
  let sessionId;
  try {
    ({ sessionId } = await first.conn.newSession({ cwd: root, mcpServers: [] }));
    await first.conn.setSessionMode({ sessionId, modeId: "manual" });
    first.recorder.permissionAnswers.push("allow_always", "reject_always");
    await first.conn.prompt({ sessionId, prompt: text(PLAN) });
    assert.equal(first.recorder.permissionRequests.length, 2);
    await first.conn.prompt({ sessionId, prompt: text("/actions") });
  } finally {
    await first.close();
  }
  const second = await connect(root);
  try {
    const loaded = await second.conn.loadSession({ sessionId, cwd: root, mcpServers: [] });
    assert.equal(loaded.modes.currentModeId, "manual");
    const users = second.recorder.of("user_message_chunk").map((u) => u.content.text);
    assert.deepEqual(users, [PLAN, "/actions"]);
    assert.ok(second.recorder.of("tool_call").some((c) => c.kind === "edit" && c.content?.length));
    await second.conn.prompt({ sessionId, prompt: text(PLAN) });
    assert.equal(second.recorder.permissionRequests.length, 0); // both "always" answers were kept
    assert.equal(readFileSync(join(root, "notes.txt"), "utf8"), ORIGINAL);

    const listed = await second.conn.listSessions({ cwd: root });
    assert.deepEqual(listed.sessions.map((s) => [s.sessionId, s.title]), [[sessionId, PLAN]]);
    const fork = await second.conn.unstable_forkSession({ sessionId, cwd: root, mcpServers: [] });
    assert.notEqual(fork.sessionId, sessionId);
    assert.equal(fork.modes.currentModeId, "manual");
    await second.conn.closeSession({ sessionId });
    await assert.rejects(second.conn.prompt({ sessionId, prompt: text("x") }), (e) => e.code === -32602);
    second.recorder.updates.length = 0;
    const resumed = await second.conn.resumeSession({ sessionId, cwd: root, mcpServers: [] });
    assert.equal(resumed.modes.currentModeId, "manual");
    await new Promise((resolve) => setTimeout(resolve, 200));
    assert.equal(second.recorder.of("user_message_chunk").length, 0); // resume replays nothing
  } finally {
    await second.close();
  }
});

const modeOf = (configOptions) => {
  assert.equal(configOptions.length, 1);
  const [option] = configOptions;
  assert.deepEqual([option.id, option.category, option.type], ["mode", "mode", "select"]);
  assert.deepEqual(option.options.map((o) => o.value), ["manual", "supervised", "autonomous"]);
  return option.currentValue;
};

test("the mode as a session config option", async () => {
  const root = workspace();
  const first = await connect(root);
  let sessionId;
  try {
    const made = await first.conn.newSession({ cwd: root, mcpServers: [] });
    sessionId = made.sessionId;
    assert.equal(modeOf(made.configOptions), "supervised");
    const answer = await first.conn.setSessionConfigOption({ sessionId, configId: "mode", value: "manual" });
    assert.equal(modeOf(answer.configOptions), "manual");
    assert.deepEqual(first.recorder.of("current_mode_update").map((u) => u.currentModeId), ["manual"]);
    await first.conn.setSessionMode({ sessionId, modeId: "autonomous" });
    assert.deepEqual(first.recorder.of("config_option_update").map((u) => modeOf(u.configOptions)), ["autonomous"]);
    await assert.rejects(first.conn.setSessionConfigOption({ sessionId, configId: "mode", value: "reckless" }),
      (e) => e.code === -32602 && e.data.field === "value" && e.data.available.includes("manual"));
    await assert.rejects(first.conn.setSessionConfigOption({ sessionId, configId: "model", value: "x" }),
      (e) => e.code === -32602 && e.data.field === "configId");
  } finally {
    await first.close();
  }
  const second = await connect(root);
  try {
    const loaded = await second.conn.loadSession({ sessionId, cwd: root, mcpServers: [] });
    assert.equal(modeOf(loaded.configOptions), "autonomous");
    const fork = await second.conn.unstable_forkSession({ sessionId, cwd: root, mcpServers: [] });
    assert.equal(modeOf(fork.configOptions), "autonomous");
  } finally {
    await second.close();
  }
});

// A workspace whose actor says what the user said earlier in the session.
function recalling() {
  const root = workspace();
  writeFileSync(join(root, ".cleveragents", "config.toml"),
    '[defaults]\ndefault_actor = "python/tests.fakes.agents:recall"\n');
  return root;
}

test("a fork's actor goes on from its parent's conversation", async () => {
  const root = recalling();
  const { conn, recorder, close } = await connect(root);
  try {
    const { sessionId } = await conn.newSession({ cwd: root, mcpServers: [] });
    await conn.prompt({ sessionId, prompt: text("alpha") });
    const fork = await conn.unstable_forkSession({ sessionId, cwd: root, mcpServers: [] });
    await conn.prompt({ sessionId, prompt: text("beta") }); // the parent's own, after the fork
    recorder.updates.length = 0;
    await conn.prompt({ sessionId: fork.sessionId, prompt: text("gamma") });
    assert.deepEqual(recorder.texts(), ["recalls: alpha"]);
  } finally {
    await close();
  }
});

test("delete: the session and its conversation are gone, others stay", async () => {
  const root = workspace();
  const first = await connect(root);
  let kept, gone;
  try {
    ({ sessionId: kept } = await first.conn.newSession({ cwd: root, mcpServers: [] }));
    await first.conn.prompt({ sessionId: kept, prompt: text("kept turn") });
    ({ sessionId: gone } = await first.conn.newSession({ cwd: root, mcpServers: [] }));
    await first.conn.prompt({ sessionId: gone, prompt: text("gone turn") });
    await first.conn.deleteSession({ sessionId: gone });
    assert.deepEqual((await first.conn.listSessions({})).sessions.map((s) => s.sessionId), [kept]);
    await assert.rejects(first.conn.prompt({ sessionId: gone, prompt: text("x") }), (e) => e.code === -32602);
    await assert.rejects(first.conn.deleteSession({ sessionId: gone }),
      (e) => e.code === -32002 && e.data.sessionId === gone);
  } finally {
    await first.close();
  }
  const second = await connect(root);
  try {
    await assert.rejects(second.conn.loadSession({ sessionId: gone, cwd: root, mcpServers: [] }),
      (e) => e.code === -32002);
    await second.conn.loadSession({ sessionId: kept, cwd: root, mcpServers: [] });
    assert.deepEqual(second.recorder.of("user_message_chunk").map((u) => u.content.text), ["kept turn"]);
  } finally {
    await second.close();
  }
});
