-- The oldest Neovim the plugin runs on (vim.lsp.start came in 0.10), checked before
-- anything else is loaded, so an older one gets one line instead of a Lua error.
local M = {}

M.minimum = '0.10'

--- `nil` when this Neovim is new enough, else the one-line message saying why not.
function M.unsupported()
  if vim.fn.has('nvim-' .. M.minimum) == 1 then
    return nil
  end
  local v = vim.version()
  return string.format('cleveragents.nvim needs Neovim %s or newer; this is %d.%d.%d',
    M.minimum, v.major, v.minor, v.patch)
end

--- Say so once (a WarningMsg) and return true when this Neovim is too old.
function M.refuse()
  local message = M.unsupported()
  if message == nil then
    return false
  end
  if not vim.g.cleveragents_refused then
    vim.g.cleveragents_refused = true
    vim.api.nvim_echo({ { message, 'WarningMsg' } }, true, {})
  end
  return true
end

return M
