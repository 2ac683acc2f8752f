// A stand-in for the `vscode` module, enough for vscode-languageclient and the extension
// to run in plain node. It records what the UI was asked to show and answers prompts from
// scripts the test sets. Install it (install()) before requiring the extension.
'use strict';
const fs = require('node:fs');
const Module = require('node:module');
const path = require('node:path');
const rpc = require('vscode-jsonrpc');

const disposable = () => ({ dispose() {} });
const event = () => () => disposable();

// Everything not modelled below: callable, constructible, and every property is another no-op.
const noop = new Proxy(function () {}, {
  get: (_target, prop) => (prop === 'then' || typeof prop === 'symbol' ? undefined
    : String(prop).startsWith('on') ? event() : noop),
  apply: () => noop,
  construct: () => noop,
});

function withFallback(object) {
  return new Proxy(object, {
    get: (target, prop) => (prop in target || typeof prop === 'symbol' ? target[prop]
      : String(prop).startsWith('on') ? event() : noop),
  });
}

class Uri {
  constructor(scheme, authority, p, query, fragment) {
    Object.assign(this, { scheme, authority: authority || '', path: p || '/', query: query || '', fragment: fragment || '' });
  }
  static file(fsPath) { return new Uri('file', '', path.resolve(fsPath)); }
  static from(parts) { return new Uri(parts.scheme, parts.authority, parts.path, parts.query, parts.fragment); }
  static parse(text) {
    const match = /^([a-z][\w+.-]*):(?:\/\/([^/?#]*))?([^?#]*)(?:\?([^#]*))?(?:#(.*))?$/i.exec(text);
    if (!match) throw new Error(`not a URI: ${text}`);
    return new Uri(match[1], match[2], decodeURIComponent(match[3]), match[4], match[5]);
  }
  get fsPath() { return this.path; }
  with(change) { return Uri.from({ ...this, ...change }); }
  toString() {
    const encoded = this.path.split('/').map(encodeURIComponent).join('/');
    return `${this.scheme}:${this.scheme === 'file' || this.authority ? `//${this.authority}` : ''}${encoded}`
      + `${this.query ? `?${this.query}` : ''}${this.fragment ? `#${this.fragment}` : ''}`;
  }
  toJSON() { return this.toString(); }
}

class Position {
  constructor(line, character) { Object.assign(this, { line, character }); }
}

class Range {
  constructor(a, b, c, d) {
    [this.start, this.end] = a instanceof Position ? [a, b] : [new Position(a, b), new Position(c, d)];
  }
}

class TextEdit {
  constructor(range, newText) { Object.assign(this, { range, newText }); }
}

/** The operations of a workspace edit, in order, as VS Code keeps them. */
class WorkspaceEdit {
  constructor() { this.operations = []; }
  createFile(uri, options) { this.operations.push({ op: 'create', uri, options: options || {} }); }
  deleteFile(uri, options) { this.operations.push({ op: 'delete', uri, options: options || {} }); }
  renameFile(from, to, options) { this.operations.push({ op: 'rename', uri: from, to, options: options || {} }); }
  set(uri, edits) { this.operations.push({ op: 'edit', uri, edits: edits.map((e) => (Array.isArray(e) ? e[0] : e)) }); }
  replace(uri, range, newText) { this.set(uri, [new TextEdit(range, newText)]); }
  insert(uri, position, newText) { this.replace(uri, new Range(position, position), newText); }
  get size() { return this.operations.length; }
}

/** Offset of a position in `text`, clamped to the text as editors clamp it. */
function offsetOf(text, position) {
  const lines = text.split('\n');
  if (position.line >= lines.length) return text.length;
  let offset = 0;
  for (let i = 0; i < position.line; i++) offset += lines[i].length + 1;
  return offset + Math.min(position.character, lines[position.line].length);
}

/** Like VS Code: file operations touch the disk, text edits change (unsaved) documents. */
function applyWorkspaceEdit(edit) {
  for (const { op, uri, edits, options } of edit.operations) {
    const file = uri.fsPath;
    if (op === 'create') {
      if (fs.existsSync(file) && (options.ignoreIfExists || !options.overwrite)) continue;
      fs.mkdirSync(path.dirname(file), { recursive: true });
      fs.writeFileSync(file, '');
      ui.documents.delete(file);
    } else if (op === 'delete') {
      if (!fs.existsSync(file) && options.ignoreIfNotExists) continue;
      fs.rmSync(file);
      ui.documents.delete(file);
    } else if (op === 'edit') {
      const document = ui.documents.get(file) ?? { text: fs.readFileSync(file, 'utf8'), dirty: false };
      const ordered = [...edits].sort((a, b) => offsetOf(document.text, b.range.start) - offsetOf(document.text, a.range.start));
      for (const { range, newText } of ordered) {
        document.text = document.text.slice(0, offsetOf(document.text, range.start)) + newText
          + document.text.slice(offsetOf(document.text, range.end));
      }
      document.dirty = true;
      ui.documents.set(file, document);
    } else {
      throw new Error(`the stand-in does not do ${op}`);
    }
  }
  return true;
}

/** The documents edits loaded, as vscode.TextDocument: save() writes the disk. */
function textDocuments() {
  return [...ui.documents].map(([file, document]) => ({
    uri: Uri.file(file),
    fileName: file,
    get isDirty() { return document.dirty; },
    getText: () => document.text,
    async save() {
      if (!document.dirty) return false;
      fs.writeFileSync(file, document.text);
      document.dirty = false;
      return true;
    },
  }));
}

function outputChannel(name) {
  const channel = {
    name, text: '', logLevel: 2, onDidChangeLogLevel: event(),
    append(value) { channel.text += value; },
    appendLine(value) { channel.text += `${value}\n`; },
    replace(value) { channel.text = value; },
    clear() { channel.text = ''; },
    show() {}, hide() {}, dispose() {},
  };
  for (const level of ['trace', 'debug', 'info', 'warn', 'error']) {
    channel[level] = (message) => channel.appendLine(`[${level}] ${message}`);
  }
  return channel;
}

/** The UI's record and scripts: reset() between tests. */
const ui = {
  settings: {},
  workspaceFolder: undefined,
  channels: {},
  messages: [], // { level, text, buttons }
  progress: [], // { title, reports: [] }
  executed: [], // [command, ...args] of commands not registered here
  contentProviders: {},
  documents: new Map(), // path -> { text, dirty }: the documents workspace edits loaded (or a test opened)
  edits: [],
  commands: new Map(),
  answerMessage: () => undefined, // (text, buttons) -> the button to press
  inputs: [], // answers of showInputBox, in order
  pick: (items) => items[0], // (items, options) -> the chosen item
};

async function message(level, text, ...rest) {
  const buttons = rest.filter((item) => typeof item === 'string');
  const record = { level, text, buttons };
  ui.messages.push(record);
  record.answer = await ui.answerMessage(text, buttons);
  return record.answer;
}

const vscode = {
  __esModule: true,
  version: '1.91.0',
  Uri, Position, Range, TextEdit, WorkspaceEdit,
  EventEmitter: rpc.Emitter,
  CancellationTokenSource: rpc.CancellationTokenSource,
  Disposable: class Disposable {
    constructor(callback) { this.callback = callback; }
    static from(...items) { return new Disposable(() => items.forEach((item) => item.dispose())); }
    dispose() { this.callback?.(); }
  },
  ProgressLocation: { SourceControl: 1, Window: 10, Notification: 15 },
  env: withFallback({ appName: 'stub', language: 'en', machineId: 'stub', sessionId: 'stub', uiKind: 1 }),
  extensions: withFallback({ all: [], getExtension: () => undefined }),
  workspace: withFallback({
    get workspaceFolders() {
      return ui.workspaceFolder ? [{ uri: Uri.file(ui.workspaceFolder), name: 'workspace', index: 0 }] : undefined;
    },
    get textDocuments() { return textDocuments(); },
    asRelativePath: (uri) => (ui.workspaceFolder ? path.relative(ui.workspaceFolder, uri.fsPath) : uri.fsPath),
    getConfiguration: (section) => ({
      get: (key, fallback) => (`${section}.${key}` in ui.settings ? ui.settings[`${section}.${key}`] : fallback),
      has: (key) => `${section}.${key}` in ui.settings,
      update: async () => {},
    }),
    applyEdit: async (edit) => {
      ui.edits.push(edit);
      return applyWorkspaceEdit(edit);
    },
    registerTextDocumentContentProvider(scheme, provider) {
      ui.contentProviders[scheme] = provider;
      return disposable();
    },
  }),
  window: withFallback({
    createOutputChannel(name) { return (ui.channels[name] = outputChannel(name)); },
    showInformationMessage: (...args) => message('info', ...args),
    showWarningMessage: (...args) => message('warning', ...args),
    showErrorMessage: (...args) => message('error', ...args),
    async showInputBox(options) {
      if (!ui.inputs.length) throw new Error(`no scripted answer for the input box ${options?.title ?? options?.prompt}`);
      const answer = ui.inputs.shift();
      const problem = answer !== undefined && options?.validateInput ? options.validateInput(answer) : undefined;
      if (problem) throw new Error(`the input box refused ${JSON.stringify(answer)}: ${problem}`);
      return answer;
    },
    async showQuickPick(items, options) { return ui.pick(await items, options); },
    async withProgress(options, task) {
      const record = { title: options.title, cancellable: options.cancellable, reports: [] };
      ui.progress.push(record);
      const source = new rpc.CancellationTokenSource();
      record.cancel = () => source.cancel();
      return task({ report: (value) => record.reports.push(value) }, source.token);
    },
  }),
  commands: withFallback({
    registerCommand(name, callback) {
      ui.commands.set(name, callback);
      return { dispose: () => ui.commands.delete(name) };
    },
    async executeCommand(name, ...args) {
      if (ui.commands.has(name)) return ui.commands.get(name)(...args);
      ui.executed.push([name, ...args]);
      return undefined;
    },
    getCommands: async () => [...ui.commands.keys()],
  }),
};

// Any other capitalised export is a class (vscode-languageclient extends some at import
// time), anything else a no-op.
const exported = new Proxy(vscode, {
  get: (target, prop) => {
    if (prop in target || typeof prop === 'symbol') return target[prop];
    if (/^[A-Z]/.test(prop)) return (target[prop] = class {});
    return noop;
  },
});

function install() {
  const resolve = Module._resolveFilename;
  Module._resolveFilename = function (request, ...rest) {
    return request === 'vscode' ? 'vscode' : resolve.call(this, request, ...rest);
  };
  require.cache.vscode = { id: 'vscode', filename: 'vscode', loaded: true, exports: exported };
}

function reset() {
  Object.assign(ui, { settings: {}, workspaceFolder: undefined, channels: {}, messages: [], progress: [], executed: [],
    contentProviders: {}, documents: new Map(), edits: [], answerMessage: () => undefined, inputs: [], pick: (items) => items[0] });
  ui.commands.clear();
}

module.exports = { install, reset, ui, Uri };
