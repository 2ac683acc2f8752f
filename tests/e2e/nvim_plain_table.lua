-- Neovim's own LSP client sends A2A requests with a plain Lua table, `{}`, as their
-- params; Neovim encodes it as `[]`. Prints each answer. Run by test_nvim_plugin.py.
local cmd = vim.json.decode(os.getenv("CLEVERAGENTS_CMD"))
local id = vim.lsp.start({ name = "cleveragents", cmd = cmd, root_dir = os.getenv("CLEVERAGENTS_WORKSPACE") },
  { attach = false })
local client = vim.lsp.get_client_by_id(id)
assert(vim.wait(60000, function() return client.initialized end, 20), "no initialize answer")

for _, method in ipairs({ "_cleveragents/health/check", "ListTasks" }) do
  local answer = nil
  client:request(method, {}, function(err, result) answer = { err, result } end)
  assert(vim.wait(60000, function() return answer ~= nil end, 20), "no answer to " .. method)
  print(method .. " " .. vim.json.encode({ error = answer[1] or vim.NIL, result = answer[2] or vim.NIL }))
end
client:stop(true)
