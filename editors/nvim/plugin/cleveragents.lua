-- :Agents* commands. The server starts on the first command, or with
-- require('cleveragents').setup{...} (which also sets the options).
if vim.g.loaded_cleveragents then
  return
end
vim.g.loaded_cleveragents = true
if require('cleveragents.version').refuse() then
  return
end

local function command(name, fn, opts)
  vim.api.nvim_create_user_command(name, function(args)
    require('cleveragents')[fn](args)
  end, opts)
end

command('AgentsSession', 'session', { nargs = '?', desc = 'CleverAgents: new session [actor]' })
command('AgentsSend', 'send', { nargs = '+', desc = 'CleverAgents: send a message (the reply streams into agents://chat)' })
command('AgentsPlan', 'plan', { nargs = '+', desc = 'CleverAgents: run an action as a plan: {action} [key=value ...]' })
command('AgentsDiff', 'diff', { nargs = '?', desc = "CleverAgents: the plan's diff [plan_id]" })
command('AgentsApply', 'apply', { nargs = '?', bang = true, desc = 'CleverAgents: apply the plan [plan_id]' })
command('AgentsRollback', 'rollback', { nargs = '?', bang = true, desc = 'CleverAgents: roll the plan back [plan_id]' })
command('AgentsCancel', 'cancel', { nargs = '?', desc = 'CleverAgents: cancel the running plan or task [plan_id]' })
