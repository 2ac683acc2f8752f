-- Neovim's own LSP client starts the server, waits for one answer, then stops it by
-- force (`client:stop(true)`: SIGTERM) and prints how the server ended and what
-- Neovim told its user about it. Run by test_nvim_plugin.py.
local cmd = vim.json.decode(os.getenv("CLEVERAGENTS_CMD"))
local told, exited, answered = {}, nil, nil
vim.notify = function(msg) table.insert(told, msg) end

local id = vim.lsp.start({
  name = "cleveragents",
  cmd = cmd,
  root_dir = os.getenv("CLEVERAGENTS_WORKSPACE"),
  on_exit = function(code, signal) exited = { code, signal } end,
}, { attach = false })
local client = vim.lsp.get_client_by_id(id)
assert(vim.wait(60000, function() return client.initialized end, 20), "no initialize answer")
client:request("_cleveragents/health/check", vim.empty_dict(), function(err, result) answered = { err, result } end)
assert(vim.wait(60000, function() return answered ~= nil end, 20), "no health check answer")
assert(answered[1] == nil, vim.inspect(answered[1]))

client:stop(true)
assert(vim.wait(60000, function() return exited ~= nil end, 20), "the server did not exit")
vim.wait(200) -- Neovim tells its user from a scheduled callback
print(string.format("EXITED code=%d signal=%d", exited[1], exited[2]))
for _, msg in ipairs(told) do
  print("TOLD " .. msg)
end
