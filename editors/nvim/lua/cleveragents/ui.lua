-- What the user sees: notifications, scratch buffers, approval prompts.
local M = {}

local PREFIX = '[agents] '

function M.notify(message, level)
  vim.notify(PREFIX .. message, level or vim.log.levels.INFO)
end

function M.error(what, err)
  local detail = err.message or tostring(err)
  local data = type(err.data) == 'table' and err.data or {}
  if data.reason then
    detail = detail .. ' (' .. tostring(data.reason) .. ')'
  elseif data.conflicts then
    detail = detail .. ' (' .. table.concat(data.conflicts, ', ') .. ')'
  end
  M.notify(what .. ': ' .. detail, vim.log.levels.ERROR)
end

--- A scratch buffer named `name` (created once), shown in a split when not visible.
function M.scratch(name, filetype)
  local buf = vim.fn.bufnr(name)
  if buf == -1 then
    buf = vim.api.nvim_create_buf(true, true)
    vim.api.nvim_buf_set_name(buf, name)
    vim.bo[buf].buftype = 'nofile'
    vim.bo[buf].bufhidden = 'hide'
    vim.bo[buf].swapfile = false
  end
  vim.bo[buf].filetype = filetype
  if vim.fn.bufwinid(buf) == -1 then
    vim.cmd('split')
    vim.api.nvim_win_set_buf(0, buf)
  end
  return buf
end

function M.set_lines(buf, lines)
  vim.bo[buf].modifiable = true
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
end

--- Append streamed text: the first line continues the buffer's last line.
function M.append(buf, text)
  local pieces = vim.split(text, '\n', { plain = true })
  local last = vim.api.nvim_buf_line_count(buf)
  local tail = vim.api.nvim_buf_get_lines(buf, last - 1, last, false)[1] or ''
  pieces[1] = tail .. pieces[1]
  vim.api.nvim_buf_set_lines(buf, last - 1, last, false, pieces)
end

--- Ask Approve / Reject; `on_choice(true | false | nil)` (nil: dismissed, decide later).
function M.approve(prompt, on_choice)
  vim.schedule(function()
    vim.ui.select({ 'Approve', 'Reject' }, { prompt = PREFIX .. prompt }, function(choice)
      if choice == 'Approve' then
        on_choice(true)
      elseif choice == 'Reject' then
        on_choice(false)
      else
        on_choice(nil)
      end
    end)
  end)
end

return M
