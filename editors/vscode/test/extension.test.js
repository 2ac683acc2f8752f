// The extension's activate() and commands, through the real vscode-languageclient and the
// real server, with the `vscode` module stood in for (see vscodeStub.js).
'use strict';
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { after, before, describe, test } = require('node:test');

const stub = require('./vscodeStub');
const { SERVER, tempWorkspace, until } = require('./server');

stub.install();
const extension = require('../out/extension');
const { ui } = stub;

const FILES = { 'src/app.py': 'x = foo\nprint(x)\n', 'notes.txt': 'keep foo\n' };
const read = (root, name) => fs.readFileSync(path.join(root, name), 'utf8');
const run = (name, ...args) => require('vscode').commands.executeCommand(`cleveragents.${name}`, ...args);
const channel = (name) => ui.channels[name].text;

describe('the extension, activated against the real server', () => {
  let workspace, api;
  const context = { subscriptions: [] };

  before(async () => {
    workspace = tempWorkspace(FILES);
    stub.reset();
    ui.workspaceFolder = workspace;
    Object.assign(ui.settings, {
      'cleveragents.serverPath': SERVER,
      'cleveragents.serverArgs': ['--workspace', workspace],
      'cleveragents.automationProfile': 'supervised',
    });
    api = await extension.activate(context);
  });

  after(async () => {
    if (process.env.CLEVERAGENTS_VSCODE_TRANSCRIPT) {
      const sections = Object.entries(ui.channels).filter(([name]) => name !== 'CleverAgents Server')
        .map(([name, ch]) => `=== output channel: ${name}\n${ch.text}`);
      const messages = ui.messages.map((m) => `[${m.level}] ${m.text} {${m.buttons.join(' | ')}} -> ${m.answer ?? '-'}`);
      const progress = ui.progress.map((p) => `${p.title}: ${p.reports.map((r) => `${r.message ?? ''}`
        + (r.increment === undefined ? '' : ` (+${r.increment}%)`)).join(' / ')}`);
      fs.writeFileSync(process.env.CLEVERAGENTS_VSCODE_TRANSCRIPT, [...sections, '=== notifications', ...messages,
        '=== progress notifications', ...progress, ''].join('\n'));
    }
    await extension.deactivate();
    context.subscriptions.forEach((item) => item.dispose());
    fs.rmSync(workspace, { recursive: true, force: true });
  });

  test('activate starts the server over stdio, registers the commands and subscribes to events', async () => {
    assert.equal(api.client.isRunning(), true);
    const commands = [...ui.commands.keys()].filter((name) => name.startsWith('cleveragents.')).sort();
    assert.deepEqual(commands, ['cleveragents.apply', 'cleveragents.cancel', 'cleveragents.listPlans',
      'cleveragents.listTasks', 'cleveragents.newSession', 'cleveragents.rollback', 'cleveragents.runAction',
      'cleveragents.sendMessage', 'cleveragents.showDiff']);
    const declared = require('../package.json').contributes.commands.map((c) => c.command).sort();
    assert.deepEqual(commands, declared);
    assert.match(channel('CleverAgents Events'), /^subscribed to events \(\w+\)$/m);
    assert.ok(ui.contentProviders['cleveragents-plan']);
  });

  test('new session, then a message streamed into the output channel', async () => {
    const sessionId = await run('newSession');
    assert.match(channel('CleverAgents'), new RegExp(`-- session ${sessionId}`));
    await until(() => channel('CleverAgents Events').includes(`session ${sessionId}`), 5000, 'the session event');
    ui.inputs.push('fs.read path=src/app.py');
    const outcome = await run('sendMessage');
    assert.equal(outcome.state, 'completed');
    assert.match(channel('CleverAgents'), /> fs\.read path=src\/app\.py\n[^]*x = foo[^]*-- task \w+ completed/);
    const progress = ui.progress.find((p) => p.title === 'CleverAgents');
    assert.deepEqual(progress.reports.map((r) => r.message), ['submitted', 'working', 'working: fs.read', 'completed']);
    assert.equal(progress.cancellable, true);
  });

  test('run an action as a plan: pick, arguments, progress, approval with the diff view, apply, rollback', async () => {
    ui.pick = (items) => items.find((item) => item.label === 'replace');
    ui.inputs.push('foo', 'bar', '**/*.py', 'false');
    const answers = ['Show Diff', 'Approve'];
    ui.answerMessage = (text) => (text.includes('waits to apply') ? answers.shift() : undefined);
    const plan = await run('runAction');
    assert.deepEqual([plan.phase, plan.state], ['execute', 'input-required']);
    const execute = ui.progress.find((p) => p.title === 'CleverAgents: Executing replace');
    assert.ok(execute.reports.some((r) => /fs\.replace/.test(r.message)));
    assert.equal(execute.reports.reduce((sum, r) => sum + (r.increment ?? 0), 0), 100);
    assert.equal(read(workspace, 'src/app.py'), FILES['src/app.py'], 'execute does not touch the workspace');

    // The client declares workspace.applyEdit: the apply goes through the editor's documents,
    // which the extension saves at once.
    await until(() => /apply\/completed/.test(channel('CleverAgents')), 10000, 'the approved apply');
    const app = path.join(workspace, 'src/app.py');
    assert.deepEqual(ui.documents.get(app), { text: 'x = bar\nprint(x)\n', dirty: false });
    assert.deepEqual([...ui.documents.keys()], [app], 'the glob kept notes.txt out');
    assert.equal(read(workspace, 'src/app.py'), 'x = bar\nprint(x)\n');
    assert.equal(ui.edits.length, 1);
    await until(() => ui.messages.some((m) => m.text === 'CleverAgents: applied 1 file(s)'), 5000, 'the applied message');
    const gate = ui.messages.filter((m) => m.text.includes(plan.plan_id));
    assert.deepEqual(gate.map((m) => m.answer), ['Show Diff', 'Approve']);
    assert.deepEqual(gate[0].buttons, ['Approve', 'Reject', 'Show Diff']);

    const [name, left, right, title] = ui.executed.find(([command]) => command === 'vscode.diff');
    assert.equal(name, 'vscode.diff');
    assert.equal(title, `src/app.py (plan ${plan.plan_id}, execute/input-required)`);
    const provider = ui.contentProviders['cleveragents-plan'];
    assert.equal(provider.provideTextDocumentContent(left), 'x = foo\nprint(x)\n');
    assert.equal(provider.provideTextDocumentContent(right), 'x = bar\nprint(x)\n');

    const events = channel('CleverAgents Events');
    for (const expected of ['PLAN_CREATED', 'execute/input-required', 'apply/completed', '$/progress begin Executing plan replace: 1 step(s)',
      '$/progress end done']) {
      assert.ok(events.includes(expected), `${expected} in the events channel`);
    }

    // Roll back through the picker: the only plan that allows it.
    ui.pick = (items) => items[0];
    const rolledBack = await run('rollback');
    assert.equal(rolledBack.plan_id, plan.plan_id);
    assert.deepEqual(ui.documents.get(app), { text: FILES['src/app.py'], dirty: false });
    assert.equal(read(workspace, 'src/app.py'), FILES['src/app.py']);
    assert.equal(ui.edits.length, 2);
    const plans = await run('listPlans');
    assert.equal(plans.find((p) => p.plan_id === plan.plan_id).state, 'completed');
    assert.match(channel('CleverAgents'), new RegExp(`-- current plan ${plans[0].plan_id}`));
  });

  test('a manual plan rejected at its first gate is cancelled', async () => {
    ui.settings['cleveragents.automationProfile'] = 'manual';
    ui.answerMessage = (text, buttons) => (text.includes('waits to execute') ? 'Reject' : undefined);
    const plan = await run('runAction', 'replace', { pattern: 'keep', replacement: 'drop' });
    assert.deepEqual([plan.phase, plan.state], ['plan', 'input-required']);
    await until(() => channel('CleverAgents').includes(`-- plan ${plan.plan_id} rejected: plan/cancelled`), 5000, 'the reject');
    const gate = ui.messages.find((m) => m.text.includes(plan.plan_id));
    assert.deepEqual(gate.buttons, ['Approve', 'Reject']);
    assert.equal(read(workspace, 'notes.txt'), FILES['notes.txt']);
  });

  test('cancel picks a plan that can still be cancelled; list tasks shows the tasks', async () => {
    ui.answerMessage = () => undefined; // the gate's notification is dismissed
    const plan = await run('runAction', 'replace', { pattern: 'keep', replacement: 'drop' });
    ui.pick = (items) => items.find((item) => item.label === plan.plan_id);
    const cancelled = await run('cancel');
    assert.equal(cancelled.state, 'cancelled');
    ui.pick = () => undefined;
    const tasks = await run('listTasks');
    assert.ok(tasks.length >= 1 && tasks.every((task) => task.status.state === 'completed'));
  });

  test('an apply over a file with unsaved changes is refused, and runs once they are reverted', async () => {
    ui.settings['cleveragents.automationProfile'] = 'supervised';
    ui.answerMessage = () => undefined;
    const notes = path.join(workspace, 'notes.txt');
    const plan = await run('runAction', 'replace', { pattern: 'keep', replacement: 'drop' });
    assert.deepEqual([plan.phase, plan.state], ['execute', 'input-required']);
    ui.documents.set(notes, { text: 'keep foo\nmine\n', dirty: true }); // typed, not saved
    const edits = ui.edits.length;
    assert.equal(await run('apply', plan.plan_id), undefined);
    const error = ui.messages.filter((m) => m.level === 'error').at(-1);
    assert.match(error.text, /unsaved changes in notes\.txt: save or revert them, then try again/);
    assert.equal(ui.edits.length, edits, 'nothing was applied');
    assert.deepEqual(ui.documents.get(notes), { text: 'keep foo\nmine\n', dirty: true });
    assert.equal(read(workspace, 'notes.txt'), FILES['notes.txt']);
    const failed = await api.agents.planStatus(plan.plan_id);
    assert.deepEqual([failed.phase, failed.state], ['apply', 'failed']);
    assert.ok(failed.allowed_actions.includes('apply'));

    ui.documents.delete(notes); // File: Revert File
    const applied = await run('apply', plan.plan_id);
    assert.deepEqual([applied.phase, applied.state, applied.written_by], ['apply', 'completed', 'editor']);
    assert.equal(read(workspace, 'notes.txt'), 'drop foo\n');
    assert.equal(ui.documents.get(notes).dirty, false);
  });

  test('a failing command shows the server error, with its code', async () => {
    await run('apply', '01JNOSUCHPLAN0000000000000');
    const error = ui.messages.at(-1);
    assert.equal(error.level, 'error');
    assert.match(error.text, /^CleverAgents: .*\(-32001\)/);
  });
});
