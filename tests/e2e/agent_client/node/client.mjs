// A client for the io suite: the official npm ClientSideConnection on a real
// cleveragents-lsp, with a recorder that has editor buffers and runs terminals, and a
// check of every message the agent sends against the SDK's zod schemas.
import assert from "node:assert/strict";
import { execFile, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";

// The schemas are not in the package's exports: import the file itself.
const zod = await import(new URL("./node_modules/@agentclientprotocol/sdk/dist/schema/zod.gen.js", import.meta.url));
const CALLS = {
  "session/update": zod.zSessionNotification,
  "session/request_permission": zod.zRequestPermissionRequest,
  "fs/read_text_file": zod.zReadTextFileRequest,
  "fs/write_text_file": zod.zWriteTextFileRequest,
  "terminal/create": zod.zCreateTerminalRequest,
  "terminal/wait_for_exit": zod.zWaitForTerminalExitRequest,
  "terminal/release": zod.zReleaseTerminalRequest,
};
const RESULTS = {
  initialize: zod.zInitializeResponse,
  "session/new": zod.zNewSessionResponse,
  "session/prompt": zod.zPromptResponse,
  "session/set_mode": zod.zSetSessionModeResponse,
};

export class Recorder {
  constructor() {
    this.updates = [];
    this.buffers = new Map(); // unsaved editor buffers by path
    this.reads = [];
    this.terminals = new Map(); // id -> {command, args, cwd, exit: Promise<{output, code}>}
    this.released = [];
  }
  async sessionUpdate(params) {
    this.updates.push(params.update);
  }
  async requestPermission(params) {
    return { outcome: { outcome: "selected", optionId: params.options.find((o) => o.kind === "allow_once").optionId } };
  }
  async readTextFile({ path }) {
    this.reads.push(path);
    return { content: this.buffers.has(path) ? this.buffers.get(path) : readFileSync(path, "utf8") };
  }
  async writeTextFile() {
    throw new Error("not declared");
  }
  async createTerminal({ command, args, cwd }) {
    const terminalId = `term-${this.terminals.size + 1}`;
    const exit = new Promise((resolve) => {
      execFile(command, args ?? [], { cwd }, (error, stdout) => resolve({ output: stdout, code: error ? error.code : 0 }));
    });
    this.terminals.set(terminalId, { command, args, cwd, exit });
    return { terminalId };
  }
  async terminalOutput({ terminalId }) {
    const { output, code } = await this.terminals.get(terminalId).exit;
    return { output, truncated: false, exitStatus: { exitCode: code } };
  }
  async waitForTerminalExit({ terminalId }) {
    return { exitCode: (await this.terminals.get(terminalId).exit).code };
  }
  async releaseTerminal({ terminalId }) {
    this.released.push(terminalId);
    return {};
  }
  of(kind) {
    return this.updates.filter((u) => u.sessionUpdate === kind);
  }
}

// Every key the agent sent survived the parse: zod drops keys its schema doesn't name.
function known(sentValue, parsed, where) {
  if (sentValue === null || typeof sentValue !== "object") return;
  for (const [key, value] of Object.entries(sentValue)) {
    assert.ok(parsed !== null && typeof parsed === "object" && key in parsed, `${where}: unknown key ${key}`);
    known(value, parsed[key], `${where}.${key}`);
  }
}

export async function connect(cwd, clientCapabilities) {
  const server = process.env.CLEVERAGENTS_LSP;
  assert.ok(server, "CLEVERAGENTS_LSP names the server to run");
  const child = spawn(server, ["--protocol", "acp"], { cwd, stdio: ["pipe", "pipe", "inherit"], env: process.env });
  const sent = new Map();
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
  let pending = "";
  const decoder = new TextDecoder();
  const incoming = Readable.toWeb(child.stdout).pipeThrough(new TransformStream({
    transform(chunk, controller) {
      pending += decoder.decode(chunk, { stream: true });
      let end;
      while ((end = pending.indexOf("\n")) >= 0) {
        received.push(JSON.parse(pending.slice(0, end)));
        pending = pending.slice(end + 1);
      }
      controller.enqueue(chunk);
    },
  }));
  const recorder = new Recorder();
  const conn = new acp.ClientSideConnection(() => recorder, acp.ndJsonStream(writer, incoming));
  await conn.initialize({ protocolVersion: acp.PROTOCOL_VERSION, clientCapabilities });
  const close = async () => {
    child.stdin.end();
    await new Promise((resolve) => child.once("exit", resolve));
    for (const message of received) {
      let schema;
      if (message.method) schema = CALLS[message.method];
      else if ("result" in message) schema = RESULTS[sent.get(message.id)];
      else continue;
      assert.ok(schema, `no schema for ${JSON.stringify(message).slice(0, 200)}`);
      const payload = message.method ? message.params : message.result;
      known(payload, schema.parse(payload), message.method ?? sent.get(message.id));
    }
  };
  return { conn, recorder, close };
}

export const text = (value) => [{ type: "text", text: value }];
