-- CleverAgents for Neovim: sessions, streamed messages and plans over cleveragents-lsp.
--
-- Cancelling is always an explicit request (plan/cancel, tasks/cancel): Neovim drops
-- the reply to a request cancelled with $/cancelRequest, so that is never used.
local version = require('cleveragents.version')
local client = require('cleveragents.client')
local ui = require('cleveragents.ui')

local M = {}

local PLAN = '_cleveragents/plan/'
local CHAT = 'agents://chat'

M.config = {
  name = 'cleveragents',
  cmd = { 'cleveragents-lsp' },
  root_dir = nil, -- default: the current directory
  automation_profile = nil, -- manual | supervised | autonomous; default: the server's
  events = true, -- server events through vim.notify
  approvals = true, -- gates and input-required tasks through vim.ui.select
}

-- What the commands work on; tests read it.
M.state = {
  session_id = nil,
  plan_id = nil,
  active = nil, -- { kind = 'plan' | 'task', id = ... } while something runs
  streams = {}, -- request id -> { buf, task_id }
  prompted = {}, -- 'plan:phase' / 'task:id' -> true once asked
  creating = 0, -- plan/use requests in flight: their plan-phase gates are ours
  results = {}, -- the last result of each command
}

local counter = 0
local function message_id()
  counter = counter + 1
  return string.format('nvim-%d-%d-%d', vim.fn.getpid(), os.time(), counter)
end

-- JSON null arrives as vim.NIL.
local function value(v)
  if v == vim.NIL then
    return nil
  end
  return v
end

local function short(id)
  return value(id) and tostring(id):sub(-8) or '?'
end

local function call(method, params, on_result, on_sent)
  if next(params) == nil then
    params = vim.empty_dict() -- an empty Lua table would go out as a JSON array
  end
  client.request(method, params, function(err, result)
    if err then
      ui.error(method, err)
      if on_result then
        on_result(nil, err)
      end
    elseif on_result then
      on_result(result)
    end
  end, on_sent)
end

-- Notifications ------------------------------------------------------------------

local function on_event(_, event)
  if not M.config.events or type(event) ~= 'table' then
    return
  end
  local data = type(event.data) == 'table' and event.data or {}
  if event.event_type == 'TaskArtifactUpdateEvent' and not value(data.domain_event) then
    return -- a chunk of a streamed reply: it goes to the chat buffer
  end
  local text = tostring(value(data.domain_event) or event.event_type)
  if value(event.plan_id) then
    text = text .. ' plan ' .. short(event.plan_id)
  end
  if data.phase and data.state then
    text = text .. ': ' .. data.phase .. '/' .. data.state
  elseif data.state then
    text = text .. ': ' .. tostring(data.state)
  end
  if type(data.reason) == 'string' then
    text = text .. ' (' .. data.reason .. ')'
  end
  if data.written_by == 'editor' then
    text = text .. ' in the editor'
  end
  ui.notify(text, data.domain_event == 'PLAN_ERRORED' and vim.log.levels.WARN or vim.log.levels.INFO)
end

local function ask_plan(plan_id, phase, reason)
  local key = plan_id .. ':' .. phase
  if M.state.prompted[key] or (phase == 'plan' and M.state.creating > 0) then
    return
  end
  M.state.prompted[key] = true
  local what = phase == 'plan' and 'execute' or 'apply'
  ui.approve(string.format('plan %s: %s. Approve the %s?', short(plan_id), reason or 'waiting', what), function(yes)
    if yes == nil then
      M.state.prompted[key] = nil -- ask again next time it waits
    elseif yes and phase == 'plan' then
      M.execute(plan_id)
    elseif yes then
      M.apply({ args = plan_id, bang = false })
    else
      call(PLAN .. 'cancel', { plan_id = plan_id }, function(result)
        M.state.results.cancel = result
      end)
    end
  end)
end

local function ask_task(task_id, text)
  local key = 'task:' .. task_id
  if M.state.prompted[key] then
    return
  end
  M.state.prompted[key] = true
  ui.approve('task ' .. short(task_id) .. ' needs input: ' .. (text or '') .. ' Approve?', function(yes)
    M.state.prompted[key] = nil
    if yes then
      M.send({ args = 'approve', task_id = task_id })
    elseif yes == false then
      call('tasks/cancel', { id = task_id })
    end
  end)
end

local function status_text(status)
  local parts = type(status) == 'table' and type(status.message) == 'table' and status.message.parts or {}
  local out = {}
  for _, part in ipairs(parts) do
    if part.text then
      table.insert(out, part.text)
    end
  end
  return table.concat(out, ' ')
end

local function on_status(_, params)
  if type(params) ~= 'table' then
    return
  end
  local stream = value(params.requestId) and M.state.streams[params.requestId]
  if stream then
    stream.task_id = params.taskId or (params.kind == 'task' and params.id) or stream.task_id
    local status = params.status or {}
    if status.state == 'input-required' and M.config.approvals then
      ask_task(stream.task_id, status_text(status))
    elseif status.state == 'failed' then
      ui.append(stream.buf, '\n[failed] ' .. status_text(status))
    end
  elseif value(params.planId) and params.state == 'input-required' and M.config.approvals then
    local data = type(params.data) == 'table' and params.data or {}
    ask_plan(params.planId, params.phase, data.reason)
  end
end

local function on_artifact(_, params)
  local stream = type(params) == 'table' and value(params.requestId) and M.state.streams[params.requestId]
  if not stream or type(params.artifact) ~= 'table' then
    return
  end
  for _, part in ipairs(params.artifact.parts or {}) do
    if part.text then
      ui.append(stream.buf, part.text)
    end
  end
end

-- Setup ---------------------------------------------------------------------------

function M.setup(opts)
  M.config = vim.tbl_deep_extend('force', M.config, opts or {})
  M.start()
end

function M.start()
  if version.refuse() then
    return nil
  end
  return client.start(M.config, {
    ['_cleveragents/event'] = on_event,
    ['task/statusUpdate'] = on_status,
    ['task/artifactUpdate'] = on_artifact,
  }, function()
    call('_cleveragents/event/subscribe', {}, function(result)
      M.state.subscription_id = result.subscription_id
    end)
  end)
end

local function ensure_started()
  if not client.running() then
    M.start()
  end
end

-- Sessions and messages -------------------------------------------------------------

function M.session(opts, after)
  ensure_started()
  local actor = opts and opts.args ~= '' and opts.args or nil
  call('session.create', { actor_name = actor }, function(result)
    M.state.session_id = result.session_id
    M.state.results.session = result
    ui.notify(string.format('session %s (%s)', result.session_id, result.actor_name or 'default actor'))
    if after then
      after()
    end
  end)
end

function M.send(opts)
  ensure_started()
  local text = opts.args
  if text == nil or text == '' then
    return ui.notify('usage: :AgentsSend {text}', vim.log.levels.WARN)
  end
  if M.state.session_id == nil and not opts.task_id then
    return M.session(nil, function()
      M.send(opts)
    end)
  end
  local buf = ui.scratch(CHAT, 'markdown')
  ui.append(buf, (vim.api.nvim_buf_get_lines(buf, 0, 1, false)[1] == '' and '' or '\n\n') .. '> ' .. text .. '\n\n')
  local message = { kind = 'message', role = 'user', messageId = message_id(),
                    parts = { { kind = 'text', text = text } } }
  if opts.task_id then
    message.taskId = opts.task_id
  else
    message.contextId = M.state.session_id
  end
  local request_id
  call('message/stream', { message = message }, function(result)
    local stream = M.state.streams[request_id]
    M.state.streams[request_id] = nil
    if M.state.active and M.state.active.request == request_id then
      M.state.active = nil
    end
    M.state.results.send = result or {}
    M.state.results.send_done = true
    if stream and stream.task_id then
      M.state.results.task_id = stream.task_id
    end
  end, function(id)
    request_id = id
    M.state.streams[id] = { buf = buf }
    M.state.active = { kind = 'task', request = id }
  end)
end

-- Plans ---------------------------------------------------------------------------

local function parse_arguments(fargs)
  local arguments = {}
  for i = 2, #fargs do
    local key, value = fargs[i]:match('^([^=]+)=(.*)$')
    if not key then
      return nil, 'expected key=value, got ' .. fargs[i]
    end
    local ok, decoded = pcall(vim.json.decode, value)
    arguments[key] = (ok and type(decoded) ~= 'table' and decoded ~= vim.NIL) and decoded or value
  end
  return arguments
end

function M.plan(opts)
  ensure_started()
  local action = opts.fargs[1]
  local arguments, problem = parse_arguments(opts.fargs)
  if not action or not arguments then
    return ui.notify('usage: :AgentsPlan {action} [key=value ...]: ' .. (problem or ''), vim.log.levels.WARN)
  end
  M.state.creating = M.state.creating + 1
  call(PLAN .. 'use', {
    action_name = action, arguments = next(arguments) == nil and vim.empty_dict() or arguments,
    automation_profile = M.config.automation_profile, session_id = M.state.session_id,
  }, function(result)
    M.state.creating = M.state.creating - 1
    if not result then
      return
    end
    M.state.plan_id = result.plan_id
    M.state.results.use = result
    ui.notify(string.format('plan %s (%s) created', result.plan_id, action))
    M.execute(result.plan_id)
  end)
end

function M.execute(plan_id)
  M.state.active = { kind = 'plan', id = plan_id }
  call(PLAN .. 'execute', { plan_id = plan_id, workDoneToken = 'cleveragents-' .. plan_id }, function(result)
    if M.state.active and M.state.active.id == plan_id then
      M.state.active = nil
    end
    M.state.results.execute = result or {}
    if result then
      ui.notify(string.format('plan %s executed: %s/%s%s', short(plan_id), result.phase, result.state,
        value(result.reason) and (' (' .. result.reason .. ')') or ''))
    end
  end)
end

local function target(opts)
  local plan_id = opts and opts.args ~= '' and opts.args or M.state.plan_id
  if not plan_id then
    ui.notify('no plan yet: run :AgentsPlan first', vim.log.levels.WARN)
  end
  return plan_id
end

function M.diff(opts)
  local plan_id = target(opts)
  if not plan_id then
    return
  end
  call(PLAN .. 'diff', { plan_id = plan_id }, function(result)
    M.state.results.diff = result
    local buf = ui.scratch('agents://diff/' .. plan_id, 'diff')
    local text = (result.diff or '') ~= '' and result.diff or 'no changes\n'
    ui.set_lines(buf, vim.split(text:gsub('\n$', ''), '\n', { plain = true }))
  end)
end

-- Buffers of the plan's files with unsaved changes: an edit would replace their text.
local function unsaved(files)
  local root = vim.fs.normalize(M.config.root_dir or vim.fn.getcwd())
  local found = {}
  for _, file in ipairs(files or {}) do
    local buf = vim.fn.bufnr(root .. '/' .. file.path)
    if buf ~= -1 and vim.api.nvim_buf_is_loaded(buf) and vim.bo[buf].modified then
      table.insert(found, file.path)
    end
  end
  return found
end

-- Apply or roll back after checking the plan's files have no unsaved buffers (! skips it).
local function write_plan(op, opts)
  local plan_id = target(opts)
  if not plan_id then
    return
  end
  call(PLAN .. 'diff', { plan_id = plan_id }, function(diff)
    local dirty = unsaved(diff.files)
    if #dirty > 0 and not opts.bang then
      return ui.notify(string.format('unsaved changes in %s: save them first, or use :Agents%s!',
        table.concat(dirty, ', '), op == 'apply' and 'Apply' or 'Rollback'), vim.log.levels.WARN)
    end
    call(PLAN .. op, { plan_id = plan_id, force = opts.bang or false }, function(result)
      M.state.results[op] = result or {}
      if not result then
        return
      end
      local how = result.written_by == 'editor' and 'in the buffers (:wall saves them)' or 'on disk'
      if result.written_by ~= 'editor' then
        vim.cmd('checktime')
      end
      ui.notify(string.format('plan %s: %s %d file(s) %s', short(plan_id),
        op == 'apply' and 'applied' or 'rolled back', #(result.files or {}), how))
    end)
  end)
end

function M.apply(opts)
  write_plan('apply', opts or { args = '' })
end

function M.rollback(opts)
  write_plan('rollback', opts or { args = '' })
end

function M.cancel(opts)
  local active = M.state.active
  if opts and opts.args ~= '' then
    active = { kind = 'plan', id = opts.args }
  end
  if active and active.kind == 'task' then
    local stream = M.state.streams[active.request]
    if stream and stream.task_id then
      return call('tasks/cancel', { id = stream.task_id }, function(result)
        M.state.results.cancel = result
      end)
    end
  end
  local plan_id = active and active.kind == 'plan' and active.id or M.state.plan_id
  if not plan_id then
    return ui.notify('nothing to cancel', vim.log.levels.WARN)
  end
  call(PLAN .. 'cancel', { plan_id = plan_id }, function(result)
    M.state.results.cancel = result
    ui.notify(string.format('plan %s: %s/%s', short(plan_id), result.phase, result.state))
  end)
end

return M
