// The protocol modules against the real server, over a plain vscode-jsonrpc connection.
'use strict';
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { after, before, describe, test } = require('node:test');

const { AgentsClient, gateOf } = require('../out/agentsClient');
const { reviewPlan } = require('../out/planReview');
const { startServer, tempWorkspace, until } = require('./server');

const FILES = {
  'src/app.py': 'x = foo\nprint(x)\n',
  'docs/crlf.txt': 'foo\r\nkeep\r\n',
  'tail.txt': 'keep\nfoo',
  'untouched.txt': 'nothing here\n',
};

describe('AgentsClient over vscode-jsonrpc', () => {
  let server, agents, workspace;
  const events = [];
  const gates = [];

  before(async () => {
    workspace = tempWorkspace(FILES);
    server = await startServer(workspace);
    agents = new AgentsClient(server.connection);
    agents.onEvent((event) => events.push(event));
    agents.onGate((gate) => gates.push(gate));
    const subscription = await agents.subscribeEvents();
    assert.equal(subscription.live, true);
  });

  after(async () => {
    agents?.dispose();
    await server?.stop();
    fs.rmSync(workspace, { recursive: true, force: true });
  });

  test('a session is created and announced as an event', async () => {
    const session = await agents.createSession();
    assert.match(session.session_id, /^[0-9A-Z]{26}$/);
    assert.equal(session.actor_name, 'local/default');
    await until(() => events.some((e) => e.data.session_id === session.session_id), 5000, 'the session event');
  });

  test('a message streams its reply in chunks, then the task completes', async () => {
    const chunks = [];
    const states = [];
    const outcome = await agents.sendMessage('fs.read path=src/app.py', {
      onText: (text) => chunks.push(text), onStatus: (state) => states.push(state),
    });
    assert.equal(outcome.state, 'completed');
    assert.ok(chunks.length >= 1);
    assert.equal(chunks.join(''), outcome.text);
    assert.match(outcome.text, /x = foo/);
    assert.deepEqual(states[0], 'submitted');
    assert.equal(states.at(-1), 'completed');
    assert.ok(outcome.items >= 3, `stream items: ${outcome.items}`);
    // The conversation continues in the same context.
    const second = await agents.sendMessage('fs.glob pattern=**/*.txt');
    assert.equal(second.contextId, outcome.contextId);
    assert.match(second.text, /crlf\.txt/);
    const tasks = await agents.listTasks();
    assert.ok(tasks.some((task) => task.id === outcome.taskId));
  });

  test('two messages in flight get their own streams', async () => {
    const [a, b] = await Promise.all([agents.sendMessage('fs.read path=tail.txt', {}, undefined, { contextId: 'ctx-a' }),
      agents.sendMessage('fs.read path=untouched.txt', {}, undefined, { contextId: 'ctx-b' })]);
    assert.match(a.text, /keep/);
    assert.doesNotMatch(a.text, /nothing here/);
    assert.match(b.text, /nothing here/);
    assert.notEqual(a.taskId, b.taskId);
  });

  test('a manual plan: two gates, progress, a diff of whole files, apply, rollback', async () => {
    const actions = await agents.listActions();
    const replace = actions.find((action) => action.name === 'replace');
    assert.ok(replace, 'the replace action is registered');
    const plan = await agents.usePlan('replace', { pattern: 'foo', replacement: 'bar' }, 'manual');
    assert.deepEqual([plan.phase, plan.state], ['plan', 'input-required']);
    await until(() => gates.some((g) => g.planId === plan.plan_id && g.phase === 'plan'), 5000, 'the execute gate');

    const progress = [];
    const executed = await agents.approve(plan.plan_id, (value) => progress.push(value));
    assert.deepEqual([executed.phase, executed.state], ['execute', 'input-required']);
    assert.equal(progress[0].kind, 'begin');
    assert.equal(progress.at(-1).kind, 'end');
    assert.ok(progress.some((value) => value.kind === 'report' && value.percentage === 100));
    await until(() => gates.some((g) => g.planId === plan.plan_id && g.phase === 'execute'), 5000, 'the apply gate');
    assert.equal(fs.readFileSync(path.join(workspace, 'src/app.py'), 'utf8'), FILES['src/app.py'], 'execute writes nothing');

    const review = await reviewPlan(agents, plan.plan_id, workspace);
    const sides = Object.fromEntries(review.files.map((file) => [file.path, file]));
    assert.deepEqual(Object.keys(sides).sort(), ['docs/crlf.txt', 'src/app.py', 'tail.txt']);
    assert.deepEqual(sides['src/app.py'], { path: 'src/app.py', before: 'x = foo\nprint(x)\n', after: 'x = bar\nprint(x)\n',
      source: 'disk-before' });
    assert.equal(sides['docs/crlf.txt'].after, 'bar\r\nkeep\r\n');
    assert.equal(sides['tail.txt'].after, 'keep\nbar');
    assert.match(review.diff, /^\+x = bar$/m);

    const applied = await agents.approve(plan.plan_id);
    assert.deepEqual([applied.phase, applied.state], ['apply', 'completed']);
    assert.equal(fs.readFileSync(path.join(workspace, 'src/app.py'), 'utf8'), 'x = bar\nprint(x)\n');
    assert.equal(fs.readFileSync(path.join(workspace, 'docs/crlf.txt'), 'utf8'), 'bar\r\nkeep\r\n');

    const afterApply = await reviewPlan(agents, plan.plan_id, workspace);
    const app = afterApply.files.find((file) => file.path === 'src/app.py');
    assert.deepEqual([app.before, app.after, app.source], ['x = foo\nprint(x)\n', 'x = bar\nprint(x)\n', 'disk-after']);

    const rolledBack = await agents.rollbackPlan(plan.plan_id);
    assert.deepEqual([rolledBack.phase, rolledBack.state], ['rollback', 'completed']);
    for (const [name, text] of Object.entries(FILES)) {
      assert.equal(fs.readFileSync(path.join(workspace, name), 'utf8'), text, name);
    }
    const listed = await agents.listPlans();
    assert.equal(listed.find((p) => p.plan_id === plan.plan_id).phase, 'rollback');
    const positions = events.filter((e) => e.plan_id === plan.plan_id).map((e) => `${e.data.phase}/${e.data.state}`);
    assert.deepEqual(positions.filter((p, i) => p !== positions[i - 1]), ['plan/input-required', 'execute/running',
      'execute/input-required', 'apply/running', 'apply/completed', 'rollback/running', 'rollback/completed']);
  });

  test('rejecting a gate cancels the plan and leaves the workspace alone', async () => {
    const plan = await agents.usePlan('replace', { pattern: 'keep', replacement: 'drop' }, 'supervised');
    assert.deepEqual([plan.phase, plan.state], ['plan', 'ready']);
    const executed = await agents.executePlan(plan.plan_id);
    assert.equal(executed.state, 'input-required');
    const rejected = await agents.reject(plan.plan_id);
    assert.equal(rejected.state, 'cancelled');
    assert.equal(fs.readFileSync(path.join(workspace, 'tail.txt'), 'utf8'), FILES['tail.txt']);
    await assert.rejects(agents.approve(plan.plan_id), /not waiting for an approval/);
  });

  test('a server error comes back as a JSON-RPC error with its data', async () => {
    await assert.rejects(agents.applyPlan('01JNOSUCHPLAN0000000000000'), (error) => {
      assert.equal(error.code, -32001);
      return true;
    });
  });

  test('gateOf reads only input-required plan events', () => {
    assert.equal(gateOf({ plan_id: null, data: { state: 'input-required' } }), undefined);
    assert.equal(gateOf({ plan_id: 'p', data: { phase: 'execute', state: 'running' } }), undefined);
    assert.deepEqual(gateOf({ plan_id: 'p', data: { phase: 'execute', state: 'input-required', reason: 'r' } }),
      { planId: 'p', phase: 'execute', reason: 'r', actionName: undefined });
  });
});
