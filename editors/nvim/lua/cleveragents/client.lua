-- The connection to cleveragents-lsp: started with vim.lsp.start, requests queued
-- until the server has answered initialize. Works on Neovim 0.10 (dot-call client
-- methods) and 0.11+ (colon-call).
local M = {}

local modern = vim.fn.has('nvim-0.11') == 1
local conn = { id = nil, ready = false, queue = {} }

-- Call a client method the way this Neovim expects.
local function invoke(client, name, ...)
  if modern then
    return client[name](client, ...)
  end
  return client[name](...)
end

local function current()
  local client = conn.id and vim.lsp.get_client_by_id(conn.id)
  if client and not invoke(client, 'is_stopped') then
    return client
  end
  conn.id, conn.ready = nil, false
  return nil
end

--- Start the server (once); `on_ready(client)` runs after initialize.
function M.start(config, handlers, on_ready)
  if current() then
    return conn.id
  end
  conn.ready, conn.queue = false, {}
  conn.id = vim.lsp.start({
    name = config.name,
    cmd = config.cmd,
    root_dir = config.root_dir or vim.fn.getcwd(),
    handlers = handlers,
    on_init = function(client)
      conn.ready = true
      local queued = conn.queue
      conn.queue = {}
      on_ready(client)
      for _, send in ipairs(queued) do
        send(client)
      end
    end,
    on_exit = function()
      conn.id, conn.ready = nil, false
    end,
  }, { attach = false })
  return conn.id
end

function M.running()
  return current() ~= nil
end

--- Send a request; `callback(err, result)`; `on_sent(request_id)` once it is on the wire.
function M.request(method, params, callback, on_sent)
  local function send(client)
    local ok, request_id = invoke(client, 'request', method, params, function(err, result)
      callback(err, result)
    end)
    if not ok then
      callback({ code = -1, message = 'the server is not running' }, nil)
    elseif on_sent then
      on_sent(request_id)
    end
  end
  local client = current()
  if client == nil then
    callback({ code = -1, message = 'the server is not running (call setup first)' }, nil)
  elseif conn.ready then
    send(client)
  else
    table.insert(conn.queue, send)
  end
end

function M.stop()
  local client = current()
  if client then
    invoke(client, 'stop')
  end
  conn.id, conn.ready, conn.queue = nil, false, {}
end

return M
