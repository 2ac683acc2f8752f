// The packaged extension in a real VS Code (code-server), driven through Chromium as a
// user would: the Command Palette, input boxes, notification buttons, editors. Each step
// checks what the window shows and what is on disk. tests/e2e/test_vscode_extension.py
// installs everything, starts code-server with the .vsix installed, and runs this file
// (NODE_PATH: the node_modules of code-server and puppeteer-core) with:
//   CLEVERAGENTS_CODE_SERVER_URL   code-server's URL (no auth)
//   CLEVERAGENTS_WORKSPACE         the folder it opens, which is the server's --workspace
//   CLEVERAGENTS_CHROMIUM          the browser
//   CLEVERAGENTS_ARTIFACTS         where the browser profile and failure screenshots go
'use strict';
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { after, before, describe, test } = require('node:test');
const puppeteer = require('puppeteer-core');

const env = (name) => {
  assert.ok(process.env[name], `${name} is not set`);
  return process.env[name];
};
const URL = env('CLEVERAGENTS_CODE_SERVER_URL');
const WORKSPACE = env('CLEVERAGENTS_WORKSPACE');
const ARTIFACTS = env('CLEVERAGENTS_ARTIFACTS');
const STEP_TIMEOUT = 30000;

const read = (name) => fs.readFileSync(path.join(WORKSPACE, name), 'utf8');
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

let browser;
let page;
let failed = false;

/** Polls `probe` (in node) until it returns a truthy value; fails with `what` and the last value. */
async function until(what, probe, timeout = STEP_TIMEOUT) {
  const deadline = Date.now() + timeout;
  let last;
  for (;;) {
    last = await probe();
    if (last) {
      return last;
    }
    if (Date.now() > deadline) {
      throw new Error(`timed out after ${timeout} ms waiting for ${what}`);
    }
    await sleep(100);
  }
}

// --- what the window shows ------------------------------------------------------------

/** Every notification shown so far, as a toast or in the notification center (a
 * recorder installed before the workbench loads, as toasts hide by themselves). */
const notifications = () => page.evaluate(() => [...window.cleveragentsNotifications]);

// A notification's element, as a toast or as a row of the notification center.
const NOTIFICATION = '.notification-toast, .notifications-center .monaco-list-row';

function recordNotifications() {
  window.cleveragentsNotifications = new Set();
  new MutationObserver(() => {
    for (const message of document.querySelectorAll(
      '.notification-toast .notification-list-item-message, .notifications-center .notification-list-item-message')) {
      window.cleveragentsNotifications.add(message.textContent);
    }
  }).observe(document, { childList: true, subtree: true, characterData: true });
}

// VS Code does not always show a notification as a toast: it drops toasts that come in a
// burst, and shows none while the notification center is open. The center lists them all.
const TOAST_WAIT = 5000;

/** Runs `look` (true when done) on the toasts; if they don't have it within TOAST_WAIT,
 * opens the notification center, runs it there, and closes the center again. */
async function inToastsOrCenter(what, look) {
  if (await until(what, look, TOAST_WAIT).catch(() => false)) {
    return;
  }
  await showNotificationCenter(true);
  try {
    await until(what, look);
  } finally {
    await showNotificationCenter(false);
  }
}

/** Opens or closes the notification center with the status bar's bell, as a user would
 * (not through the Command Palette: that would close a quick pick a button opened). */
async function showNotificationCenter(visible) {
  await until(`the notification center ${visible ? 'open' : 'closed'}`, () => page.evaluate((wanted) => {
    const shown = document.querySelector('.notifications-center')?.classList.contains('visible') ?? false;
    if (shown !== wanted) {
      document.querySelector('#status\\.notifications .statusbar-item-label')?.click();
    }
    return shown === wanted;
  }, visible));
}

async function notified(pattern) {
  let found;
  await inToastsOrCenter(`a notification matching ${pattern}`, async () => {
    found = (await notifications()).find((text) => pattern.test(text));
    return found !== undefined;
  });
  return found;
}

/** The editor tabs: label and whether it has unsaved changes. */
const tabs = () => page.$$eval('.tabs-container .tab', (all) => all.map((tab) => ({
  label: tab.querySelector('.label-name')?.textContent ?? tab.getAttribute('aria-label'),
  dirty: tab.classList.contains('dirty'),
  active: tab.classList.contains('active'),
})));

/** The text an editor shows (its rendered lines; the files here fit on the screen). */
const shownText = (selector) => page.$eval(selector, (lines) => [...lines.querySelectorAll('.view-line')]
  .sort((a, b) => parseFloat(a.style.top) - parseFloat(b.style.top))
  .map((line) => line.textContent.replace(/\u00a0/g, ' ')).join('\n')).catch(() => null);

const ACTIVE_EDITOR = '.editor-group-container.active .editor-instance .monaco-editor:not(.original-in-monaco-diff-editor) .view-lines';

// --- what the user does ----------------------------------------------------------------

const QUICK_INPUT = '.quick-input-widget';

async function quickInputOpen() {
  await page.waitForSelector(`${QUICK_INPUT} .quick-input-box input`, { visible: true, timeout: STEP_TIMEOUT });
}

async function quickInputClosed() {
  await page.waitForSelector(QUICK_INPUT, { hidden: true, timeout: STEP_TIMEOUT });
}

/** The label of the highlighted row of the open quick pick. */
const focusedRow = () => page.evaluate((widget) => {
  const row = document.querySelector(`${widget} .monaco-list-row.focused`);
  return row ? row.querySelector('.label-name, .monaco-highlighted-label')?.textContent ?? row.getAttribute('aria-label') : null;
}, QUICK_INPUT);

async function typeInQuickInput(text) {
  const input = await page.$(`${QUICK_INPUT} .quick-input-box input`);
  await input.type(text);
}

/** Command Palette: type the title, wait until it is the highlighted command, run it. The
 * palette lists the commands known when it opened: until the extension's are registered,
 * it is closed and opened again. */
async function runCommand(title) {
  await until(`the command ${title} in the palette`, async () => {
    await page.keyboard.press('F1');
    await quickInputOpen();
    await typeInQuickInput(title);
    const deadline = Date.now() + 3000;
    while (Date.now() < deadline) {
      if ((await focusedRow()) === title) {
        return true;
      }
      await sleep(100);
    }
    await page.keyboard.press('Escape');
    await quickInputClosed();
    return false;
  });
  await page.keyboard.press('Enter');
}

/** A quick pick: filter, wait until `label` is highlighted, take it. */
async function pick(label, filter = label) {
  await quickInputOpen();
  await until(`the pick ${label}`, async () => {
    const value = await page.$eval(`${QUICK_INPUT} .quick-input-box input`, (input) => input.value);
    if (value !== filter) {
      await page.$eval(`${QUICK_INPUT} .quick-input-box input`, (input) => input.select());
      await typeInQuickInput(filter);
    }
    return (await focusedRow())?.startsWith(label);
  });
  await page.keyboard.press('Enter');
}

/** An input box: wait for its title (or prompt), type the answer (replacing any default), Enter. */
async function answerInput(heading, answer) {
  await quickInputOpen();
  await until(`the input box ${heading}`, () => page.evaluate((widget, text) => {
    const box = document.querySelector(widget);
    return box.querySelector('.quick-input-title')?.textContent === text
      || (box.querySelector('.quick-input-message')?.textContent ?? '').startsWith(text);
  }, QUICK_INPUT, heading));
  if (answer !== undefined) {
    await page.$eval(`${QUICK_INPUT} .quick-input-box input`, (input) => input.select());
    await typeInQuickInput(answer);
  }
  await page.keyboard.press('Enter');
}

/** Presses a button of the notification whose message matches `pattern`, in the page: a
 * click at the button's coordinates lands elsewhere when another toast arrives in between
 * and moves it. Pressing closes the notification; until it does, it is pressed again. */
async function pressNotificationButton(pattern, label) {
  const press = `${label} ${pattern} ${Date.now()}`;
  await inToastsOrCenter(`the ${label} button of a notification matching ${pattern} pressed`, () => page.evaluate(
    (selector, source, flags, text, token) => {
      const matcher = new RegExp(source, flags);
      const notification = [...document.querySelectorAll(selector)].find((candidate) =>
        matcher.test(candidate.querySelector('.notification-list-item-message')?.textContent ?? ''));
      if (!notification) {
        return window.cleveragentsPressed === token; // closed after the press
      }
      const button = [...notification.querySelectorAll('.monaco-button')].find((candidate) => candidate.textContent === text);
      if (button) {
        button.click();
        window.cleveragentsPressed = token;
      }
      return false;
    }, NOTIFICATION, pattern.source, pattern.flags, label, press));
}

async function activateTab(label) {
  const tab = await page.waitForFunction((wanted) => [...document.querySelectorAll('.tabs-container .tab')]
    .find((candidate) => candidate.querySelector('.label-name')?.textContent === wanted), { timeout: STEP_TIMEOUT }, label);
  await tab.asElement().click();
  await until(`the tab ${label} active`, async () => (await tabs()).some((shown) => shown.label === label && shown.active));
}

// --- the scenario --------------------------------------------------------------------------

describe('the .vsix in code-server', () => {
  before(async () => {
    browser = await puppeteer.launch({
      executablePath: env('CLEVERAGENTS_CHROMIUM'),
      headless: true,
      args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
        '--disable-background-networking', '--disable-component-update', '--disable-sync',
        `--user-data-dir=${path.join(ARTIFACTS, 'chromium-profile')}`],
    });
    page = await browser.newPage();
    await page.setViewport({ width: 1400, height: 900 });
    await page.evaluateOnNewDocument(recordNotifications);
    await page.goto(`${URL}?folder=${encodeURIComponent(WORKSPACE)}`, { waitUntil: 'domcontentloaded' });
    await page.waitForSelector('.monaco-workbench .part.editor', { timeout: 60000 });
  });

  after(async () => {
    await browser?.close();
  });

  // The steps run in order, each on what the one before left; after a failure (which
  // leaves a screenshot) the rest are skipped.
  const step = (name, body) => test(name, async (t) => {
    if (failed) {
      t.skip('an earlier step failed');
      return;
    }
    try {
      await body();
    } catch (error) {
      failed = true;
      const file = path.join(ARTIFACTS, `failed-${name.replace(/\W+/g, '-')}`);
      await page.screenshot({ path: `${file}.png` }).catch(() => {});
      await page.content().then((html) => fs.writeFileSync(`${file}.html`, html)).catch(() => {});
      // CI keeps only this output: what the window said is the first clue.
      error.message += `\nnotifications shown: ${JSON.stringify(await notifications().catch(() => []))}`;
      throw error;
    }
  });

  step('a file opens in an editor', async () => {
    const row = await page.waitForSelector('.explorer-folders-view .monaco-list-row[aria-label="app.py"]',
      { visible: true, timeout: STEP_TIMEOUT });
    await row.click();
    await until('the app.py tab', async () => (await tabs()).some((tab) => tab.label === 'app.py' && tab.active));
    await until('app.py shown', async () => (await shownText(ACTIVE_EDITOR)) === 'x = foo\nprint(x)\n');
  });

  step('New Session starts a session', async () => {
    await runCommand('CleverAgents: New Session');
    await notified(/^CleverAgents: session \w{26} started$/);
  });

  step('Send Message streams the reply into the CleverAgents output channel', async () => {
    await runCommand('CleverAgents: Send Message');
    await answerInput('Message to the agent', 'fs.read path=app.py');
    const output = '.part.panel .output-view[aria-label="CleverAgents - Output"] .monaco-editor .view-lines';
    await until('the reply in the output channel', async () => {
      const text = await shownText(output) ?? '';
      return /^> fs\.read path=app\.py$/m.test(text) && /"text": "x = foo\\nprint\(x\)\\n"/.test(text)
        && /^-- task \w+ completed$/m.test(text);
    });
  });

  let planId;
  step('Run Action as a Plan: pick, arguments, then the apply gate; Show Diff opens the diff editor', async () => {
    await runCommand('CleverAgents: Run Action as a Plan');
    await pick('replace');
    await answerInput('replace: pattern', 'foo');
    await answerInput('replace: replacement', 'bar');
    await answerInput('replace: glob', undefined); // the default, **/*
    await answerInput('replace: ignore_case', undefined);
    const gate = await notified(/^CleverAgents: plan replace (\w{26}) waits to apply: review the diff and approve the apply$/);
    planId = /plan replace (\w{26})/.exec(gate)[1];
    assert.equal(read('app.py'), 'x = foo\nprint(x)\n', 'execute leaves the workspace alone');

    await pressNotificationButton(/waits to apply/, 'Show Diff');
    await pick('app.py');
    const title = `app.py (plan ${planId}, execute/input-required)`;
    await until('the diff editor', async () => (await tabs()).some((tab) => tab.label === title && tab.active));
    const diff = '.editor-group-container.active .monaco-diff-editor';
    await until('both sides of the diff', async () =>
      ((await shownText(`${diff} .editor.original .view-lines`)) ?? '').startsWith('x = foo')
      && ((await shownText(`${diff} .editor.modified .view-lines`)) ?? '').startsWith('x = bar'));
  });

  step('Approve applies the plan: saved to disk, open editors follow, no tab left unsaved', async () => {
    await pressNotificationButton(new RegExp(`plan replace ${planId} waits to apply`), 'Approve');
    await notified(/^CleverAgents: applied 2 file\(s\)$/);
    await until('the files on disk', () => read('app.py') === 'x = bar\nprint(x)\n' && read('b.txt') === 'bar b\n');
    assert.equal(read('notes.md'), 'nothing to change\n');
    await activateTab('app.py');
    await until('app.py showing the change', async () => (await shownText(ACTIVE_EDITOR)) === 'x = bar\nprint(x)\n');
    const shown = await tabs();
    assert.deepEqual(shown.filter((tab) => tab.dirty), [], 'no unsaved editor');
    assert.ok(!shown.some((tab) => tab.label === 'b.txt'), 'a file that was not open stays closed');
  });

  step('Roll Back Plan refuses while the user has unsaved changes in a file of the plan', async () => {
    await page.click(ACTIVE_EDITOR);
    await page.keyboard.down('Control');
    await page.keyboard.press('End');
    await page.keyboard.up('Control');
    await page.keyboard.type('# mine');
    await until('app.py dirty', async () => (await tabs()).some((tab) => tab.label === 'app.py' && tab.dirty));
    await runCommand('CleverAgents: Roll Back Plan');
    await pick(planId);
    await notified(/^CleverAgents: the editor did not apply the rollback: unsaved changes in app\.py: save or revert them, then try again/);
    assert.equal(read('app.py'), 'x = bar\nprint(x)\n');
    assert.equal(read('b.txt'), 'bar b\n');
    assert.equal(await shownText(ACTIVE_EDITOR), 'x = bar\nprint(x)\n# mine');
  });

  step('after File: Revert File, Roll Back Plan restores the files, on disk and in the editor', async () => {
    await runCommand('File: Revert File');
    await until('app.py reverted', async () => !(await tabs()).some((tab) => tab.dirty));
    await runCommand('CleverAgents: Roll Back Plan');
    await pick(planId);
    await notified(/^CleverAgents: rolled back 2 file\(s\)$/);
    await until('the files restored on disk', () => read('app.py') === 'x = foo\nprint(x)\n' && read('b.txt') === 'foo b\n');
    await until('app.py showing the old text', async () => (await shownText(ACTIVE_EDITOR)) === 'x = foo\nprint(x)\n');
    assert.deepEqual((await tabs()).filter((tab) => tab.dirty), [], 'no unsaved editor');
  });

  step('Undo in the editor takes the rollback back, in both files, unsaved', async () => {
    await page.click(ACTIVE_EDITOR);
    await page.keyboard.down('Control');
    await page.keyboard.press('KeyZ');
    await page.keyboard.up('Control');
    await until('app.py showing the applied text again', async () => (await shownText(ACTIVE_EDITOR)) === 'x = bar\nprint(x)\n');
    await until('app.py and b.txt unsaved', async () => {
      const dirty = (await tabs()).filter((tab) => tab.dirty).map((tab) => tab.label).sort();
      return dirty.length === 2 && dirty[0] === 'app.py' && dirty[1] === 'b.txt';
    });
    assert.equal(read('app.py'), 'x = foo\nprint(x)\n', 'the disk changes when the user saves');
    assert.equal(read('b.txt'), 'foo b\n');
  });
});
