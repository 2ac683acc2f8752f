/** Short texts for the log channels and pickers. */
import { AgentEvent, PlanStatus, TaskSummary } from './agentsClient';

function clock(timestamp: string | undefined): string {
  const match = /T(\d\d:\d\d:\d\d)/.exec(timestamp ?? '');
  return match ? match[1] : '--:--:--';
}

/** One line per event: time, type, the plan (or session) and what changed. */
export function formatEvent(event: AgentEvent): string {
  const data = event.data ?? {};
  const subject = event.plan_id ? `plan ${event.plan_id}` : data.session_id ? `session ${data.session_id}` : '';
  const position = data.phase && data.state ? `${data.phase}/${data.state}` : data.status ?? '';
  const parts = [clock(event.timestamp), event.event_type, data.domain_event, subject, position,
    data.reason ? `(${data.reason})` : ''];
  return parts.filter((part) => part).join(' ');
}

export function formatPlan(plan: PlanStatus): string {
  return `${plan.action_name ?? 'plan'} ${plan.phase}/${plan.state}`;
}

export function formatTask(task: TaskSummary): string {
  return `${task.status.state} ${clock(task.status.timestamp)}`;
}

/** Where a server's workspace is: its `--workspace` argument, else the editor's folder. */
export function workspaceRoot(serverArgs: string[], folder: string | undefined): string | undefined {
  for (let i = 0; i < serverArgs.length; i++) {
    if (serverArgs[i] === '--workspace' && i + 1 < serverArgs.length) {
      return serverArgs[i + 1];
    }
    if (serverArgs[i].startsWith('--workspace=')) {
      return serverArgs[i].slice('--workspace='.length);
    }
  }
  return folder;
}

/** The URI path of one side of a file in a plan's diff view, and back. */
export function sidePath(planId: string, side: 'before' | 'after', file: string): string {
  return `/${encodeURIComponent(planId)}/${side}/${file.split('/').map(encodeURIComponent).join('/')}`;
}

export function parseSidePath(path: string): { planId: string; side: 'before' | 'after'; file: string } | undefined {
  const match = /^\/([^/]+)\/(before|after)\/(.+)$/.exec(path);
  if (!match) {
    return undefined;
  }
  const file = match[3].split('/').map(decodeURIComponent).join('/');
  return { planId: decodeURIComponent(match[1]), side: match[2] as 'before' | 'after', file };
}
