// Starts the real cleveragents-lsp for the tests: the path comes from CLEVERAGENTS_LSP.
'use strict';
const { spawn } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const rpc = require('vscode-jsonrpc/node');

const SERVER = process.env.CLEVERAGENTS_LSP || path.resolve(__dirname, '../../../.venv/bin/cleveragents-lsp');

function tempWorkspace(files) {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'cleveragents-vscode-'));
  for (const [name, text] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(root, name)), { recursive: true });
    fs.writeFileSync(path.join(root, name), text);
  }
  return root;
}

/** A server on `workspace` and a vscode-jsonrpc connection to it, initialized. */
async function startServer(workspace) {
  const proc = spawn(SERVER, ['--workspace', workspace], { stdio: ['pipe', 'pipe', 'pipe'] });
  const stderr = [];
  proc.stderr.on('data', (chunk) => stderr.push(chunk));
  const connection = rpc.createMessageConnection(
    new rpc.StreamMessageReader(proc.stdout), new rpc.StreamMessageWriter(proc.stdin));
  connection.listen();
  await connection.sendRequest('initialize', {
    processId: process.pid, rootUri: null, capabilities: { window: { workDoneProgress: true } },
  });
  await connection.sendNotification('initialized', {});
  return {
    connection,
    stderr: () => Buffer.concat(stderr).toString(),
    async stop() {
      const exited = new Promise((resolve) => proc.once('exit', resolve));
      try {
        await connection.sendRequest('shutdown');
        await connection.sendNotification('exit');
      } catch {
        proc.kill();
      }
      let timer;
      await Promise.race([exited, new Promise((resolve) => { timer = setTimeout(resolve, 5000); })]);
      clearTimeout(timer);
      if (proc.exitCode === null) {
        proc.kill('SIGKILL');
      }
      connection.dispose();
    },
  };
}

/** Resolves once `predicate()` holds, polling; rejects after `ms`. */
async function until(predicate, ms = 10000, what = 'condition') {
  const deadline = Date.now() + ms;
  while (!predicate()) {
    if (Date.now() > deadline) {
      throw new Error(`timed out waiting for ${what}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

module.exports = { SERVER, tempWorkspace, startServer, until };
