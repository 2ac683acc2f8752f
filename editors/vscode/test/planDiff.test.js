// The before/after reconstruction of plan diffs, on hunks shaped as the server writes them.
'use strict';
const assert = require('node:assert/strict');
const { test } = require('node:test');

const { applyHunks, fileSides, hunkSides, splitLines } = require('../out/planDiff');
const { parseSidePath, sidePath, workspaceRoot } = require('../out/format');

const file = (status, hunks, extra = {}) => ({ path: 'a.txt', status, binary: false, truncated: false, rewritten: false,
  additions: 0, deletions: 0, old_mode: 420, new_mode: 420, hunks, ...extra });
const hunk = (old_start, old_lines, new_start, new_lines, lines) => ({ old_start, old_lines, new_start, new_lines,
  header: '', lines });

test('lines split on \\n only and keep their endings', () => {
  assert.deepEqual(splitLines('a\r\nb\fc\nd'), ['a\r\n', 'b\fc\n', 'd']);
  assert.deepEqual(splitLines(''), []);
});

test('the no-newline marker strips the line before it, on the sides that line is on', () => {
  const sides = hunkSides(hunk(1, 2, 1, 2, ['-a', '\\ No newline at end of file', '+b', ' c', '\\ No newline at end of file']));
  assert.deepEqual(sides, { old: ['a', 'c'], new: ['b\n', 'c'] });
});

test('a modified file: forward from the disk before an apply, backward after it', () => {
  const modified = file('modified', [hunk(2, 1, 2, 2, ['-two', '+TWO', '+2b'])]);
  const old = 'one\ntwo\nthree\n';
  const now = 'one\nTWO\n2b\nthree\n';
  assert.deepEqual(fileSides(modified, old), { path: 'a.txt', before: old, after: now, source: 'disk-before' });
  assert.deepEqual(fileSides(modified, now, true), { path: 'a.txt', before: old, after: now, source: 'disk-after' });
  assert.deepEqual(fileSides(modified, now), { path: 'a.txt', before: old, after: now, source: 'disk-after' });
});

test('added and deleted files', () => {
  const added = file('added', [hunk(0, 0, 1, 2, ['+x', '+y'])]);
  assert.deepEqual([fileSides(added, undefined).before, fileSides(added, undefined).after], ['', 'x\ny\n']);
  const applied = fileSides(added, 'x\ny\n', true);
  assert.deepEqual([applied.before, applied.after, applied.source], ['', 'x\ny\n', 'disk-after']);
  // Not mistaken for an insertion at the top of the file now on disk.
  assert.equal(fileSides(added, 'x\ny\n').source, 'disk-after');
  const deleted = file('deleted', [hunk(1, 1, 0, 0, ['-gone'])]);
  assert.deepEqual([fileSides(deleted, 'gone\n').before, fileSides(deleted, 'gone\n').after], ['gone\n', '']);
  assert.equal(fileSides(deleted, undefined, true).before, 'gone\n');
});

test('a disk that matches neither side shows the hunks alone', () => {
  const modified = file('modified', [hunk(1, 1, 1, 1, ['-a', '+b']), hunk(9, 1, 9, 1, ['-c', '+d'])]);
  const sides = fileSides(modified, 'something else\n');
  assert.deepEqual([sides.before, sides.after, sides.source], ['a\n⋯\nc\n', 'b\n⋯\nd\n', 'hunks']);
  assert.equal(applyHunks(['a\n'], modified.hunks), undefined);
});

test('binary and truncated files get a note instead of text', () => {
  assert.match(fileSides(file('modified', [], { binary: true }), 'x').after, /binary file/);
  assert.match(fileSides(file('modified', [], { truncated: true, additions: 9 }), 'x').before, /too large.*\+9/);
});

test('diff view paths round-trip, and the workspace comes from --workspace first', () => {
  const p = sidePath('01PLAN', 'after', 'dir with space/é.py');
  assert.deepEqual(parseSidePath(p), { planId: '01PLAN', side: 'after', file: 'dir with space/é.py' });
  assert.equal(parseSidePath('/x'), undefined);
  assert.equal(workspaceRoot(['--memory', '--workspace', '/w'], '/folder'), '/w');
  assert.equal(workspaceRoot(['--workspace=/v'], '/folder'), '/v');
  assert.equal(workspaceRoot([], '/folder'), '/folder');
});
