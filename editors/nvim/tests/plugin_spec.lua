-- End to end in a real Neovim against a real cleveragents-lsp. From the repository's
-- root, with the backend's virtualenv first on PATH:
--   PATH="$PWD/.venv/bin:$PATH" .venv/bin/nvim --headless --clean -l editors/nvim/tests/plugin_spec.lua
-- Every setting has a default, so that command works as written:
--   CLEVERAGENTS_PLUGIN     the plugin's directory (default: the one holding this script)
--   CLEVERAGENTS_WORKSPACE  the workspace; when unset, missing or empty the script makes
--                           it: a.txt, b.txt and a config allowing `python -c` for shell.run
--   CLEVERAGENTS_CMD        the server command as a JSON array (default:
--                           cleveragents-lsp on PATH, with --workspace)
-- Relative paths are taken from the directory Neovim started in. Any failure exits non-zero.
local function absolute(path)
  return vim.fn.fnamemodify(path, ':p'):gsub('/$', '')
end

local this_script = debug.getinfo(1, 'S').source:gsub('^@', '')
local plugin = absolute(os.getenv('CLEVERAGENTS_PLUGIN') or vim.fn.fnamemodify(absolute(this_script), ':h:h'))
local root = absolute(os.getenv('CLEVERAGENTS_WORKSPACE') or vim.fn.tempname())

local function write(name, text)
  local file = assert(io.open(root .. '/' .. name, 'wb'))
  file:write(text)
  file:close()
end

-- A workspace given with files in it is used as it is (the pytest harness fills its own).
if vim.fn.isdirectory(root) == 0 or #vim.fn.readdir(root) == 0 then
  vim.fn.mkdir(root .. '/.cleveragents', 'p')
  write('a.txt', 'foo one\nfoo two\n')
  write('b.txt', 'foo b\n')
  -- The cancel step runs `python -c`, which shell.run refuses unless allowed.
  write('.cleveragents/config.toml', '[shell]\nallow = ["python -c"]\n')
end

local cmd
if os.getenv('CLEVERAGENTS_CMD') then
  cmd = vim.json.decode(os.getenv('CLEVERAGENTS_CMD'))
  if cmd[1]:find('/') then
    cmd[1] = absolute(cmd[1])  -- still found once the script changes into the workspace
  end
else
  local server = vim.fn.exepath('cleveragents-lsp')
  assert(server ~= '', 'cleveragents-lsp is not on PATH: put the virtualenv first, or set CLEVERAGENTS_CMD')
  cmd = { server, '--workspace', root }
end
io.stdout:write('workspace: ', root, '\n')

vim.opt.runtimepath:prepend(plugin)
vim.cmd('runtime plugin/cleveragents.lua')
vim.cmd('cd ' .. vim.fn.fnameescape(root))

-- The UI functions are stubbed here, in the test: what the plugin says, and the
-- answers a user gives to its approval prompts.
local notes, prompts, answers = {}, {}, {}
vim.notify = function(message)
  table.insert(notes, message)
  io.stdout:write('notify: ', message, '\n')
end
vim.ui.select = function(items, opts, on_choice)
  assert(vim.deep_equal(items, { 'Approve', 'Reject' }), vim.inspect(items))
  table.insert(prompts, opts.prompt)
  io.stdout:write('select: ', opts.prompt, '\n')
  on_choice(table.remove(answers, 1))
end

local function wait(what, predicate)
  if not vim.wait(20000, predicate, 20) then
    error('timed out waiting for ' .. what .. '\nnotes:\n' .. table.concat(notes, '\n'))
  end
end

local function disk(name)
  local file = assert(io.open(root .. '/' .. name, 'rb'))
  local data = file:read('*a')
  file:close()
  return data
end

local function buffer(name)
  local buf = vim.fn.bufnr(root .. '/' .. name)
  assert(buf ~= -1, 'no buffer for ' .. name)
  return table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), '\n'), vim.bo[buf].modified
end

local function check(label, got, want)
  if got ~= want then
    error(string.format('%s: got %s, want %s', label, vim.inspect(got), vim.inspect(want)))
  end
end

local agents = require('cleveragents')
local results = agents.state.results
agents.setup({ cmd = cmd, root_dir = root })

-- A session, and a message whose reply streams into the chat buffer.
vim.cmd('AgentsSession')
wait('the session', function() return agents.state.session_id ~= nil end)
vim.cmd('AgentsSend hello from neovim')
wait('the reply', function() return results.send_done end)
local chat = table.concat(vim.api.nvim_buf_get_lines(vim.fn.bufnr('agents://chat'), 0, -1, false), '\n')
assert(chat:find('> hello from neovim', 1, true), chat)
assert(chat:find('local actor', 1, true), chat)
io.stdout:write('--- agents://chat\n', chat, '\n---\n')

-- a.txt is open in a buffer; b.txt is not.
vim.cmd('edit ' .. vim.fn.fnameescape(root .. '/a.txt'))
local a_buf = vim.api.nvim_get_current_buf()

-- A plan from the built-in `replace` action; its apply gate is left for later.
table.insert(answers, nil)
vim.cmd('AgentsPlan replace pattern=foo replacement=bar glob=*.txt')
wait('the execution', function() return results.execute ~= nil end)
check('execute state', results.execute.state, 'input-required')
wait('the apply prompt', function() return #prompts == 1 end)
assert(prompts[1]:find('Approve the apply', 1, true), prompts[1])
local plan_id = agents.state.plan_id

vim.cmd('AgentsDiff')
wait('the diff', function() return results.diff ~= nil end)
local diff_buf = vim.fn.bufnr('agents://diff/' .. plan_id)
check('diff filetype', vim.bo[diff_buf].filetype, 'diff')
local diff_text = table.concat(vim.api.nvim_buf_get_lines(diff_buf, 0, -1, false), '\n')
assert(diff_text:find('-foo one', 1, true) and diff_text:find('+bar one', 1, true), diff_text)
io.stdout:write('--- agents://diff/', plan_id, ' (filetype=diff)\n', diff_text, '\n---\n')

-- Apply goes through workspace/applyEdit: the buffers change, the disk does not until saved.
vim.cmd('AgentsApply')
wait('the apply', function() return results.apply ~= nil end)
check('apply written_by', results.apply.written_by, 'editor')
check('a.txt buffer', buffer('a.txt'), 'bar one\nbar two')
check('a.txt modified', select(2, buffer('a.txt')), true)
check('b.txt buffer', buffer('b.txt'), 'bar b')
check('a.txt on disk before :write', disk('a.txt'), 'foo one\nfoo two\n')
check('b.txt on disk before :write', disk('b.txt'), 'foo b\n')
vim.api.nvim_set_current_buf(a_buf)
vim.cmd('write')
check('a.txt on disk after :write', disk('a.txt'), 'bar one\nbar two\n')
check('b.txt on disk (not saved)', disk('b.txt'), 'foo b\n')
vim.cmd('undo')
check('undo takes the edit back', buffer('a.txt'), 'foo one\nfoo two')
vim.cmd('redo')
vim.cmd('wall')
check('b.txt on disk after :wall', disk('b.txt'), 'bar b\n')

-- Rollback goes through the editor too; :wall puts the disk back.
vim.cmd('AgentsRollback')
wait('the rollback', function() return results.rollback ~= nil end)
check('rollback state', results.rollback.state, 'completed')
check('a.txt buffer after rollback', buffer('a.txt'), 'foo one\nfoo two')
check('a.txt on disk before :wall', disk('a.txt'), 'bar one\nbar two\n')
vim.cmd('wall')
check('a.txt on disk after rollback', disk('a.txt'), 'foo one\nfoo two\n')
check('b.txt on disk after rollback', disk('b.txt'), 'foo b\n')

-- Unsaved changes in a file of the plan hold the apply back.
results.apply, results.execute = nil, nil
vim.cmd('AgentsPlan replace pattern=one replacement=ONE glob=a.txt')
wait('the second execution', function() return results.execute ~= nil end)
vim.api.nvim_buf_set_lines(a_buf, 0, 0, false, { 'unsaved line' })
vim.cmd('AgentsApply')
wait('the refusal', function() return notes[#notes]:find('unsaved changes in a.txt', 1, true) ~= nil end)
check('no apply', results.apply, nil)
vim.api.nvim_buf_set_lines(a_buf, 0, 1, false, {})
vim.cmd('write')

-- Approving at the gate applies the plan.
local asked = #prompts
table.insert(answers, 'Approve')
vim.cmd('AgentsPlan replace pattern=two replacement=TWO glob=a.txt')
wait('the approval prompt', function() return #prompts == asked + 1 end)
wait('the approved apply', function() return results.apply ~= nil end)
check('approved apply', results.apply.written_by, 'editor')
check('a.txt after the approved apply', buffer('a.txt'), 'foo one\nfoo TWO')
vim.cmd('wall')
check('a.txt on disk after the approved apply', disk('a.txt'), 'foo one\nfoo TWO\n')

-- Rejecting at the gate cancels the plan.
results.cancel = nil
table.insert(answers, 'Reject')
vim.cmd('AgentsPlan replace pattern=foo replacement=X glob=a.txt')
wait('the rejected plan', function() return results.cancel ~= nil end)
check('rejected plan state', results.cancel.state, 'cancelled')
check('a.txt untouched by the rejected plan', disk('a.txt'), 'foo one\nfoo TWO\n')

-- :AgentsCancel stops a running plan with plan/cancel; the execute request still answers.
results.execute = nil
vim.cmd([[AgentsPlan run command=python\ -c\ "import\ time;\ time.sleep(20)"]])
wait('the running plan', function() return agents.state.active ~= nil and agents.state.active.kind == 'plan' end)
vim.wait(300)
vim.cmd('AgentsCancel')
wait('the cancelled execution', function() return results.execute ~= nil end)
check('cancelled execution', results.execute.state, 'cancelled')

io.stdout:write('ALL PASSED\n')
vim.cmd('qa!')
