/**
 * The CleverAgents protocol as the editor uses it: sessions, streamed messages,
 * plans with their gates and progress, and the live event subscription. Plain
 * TypeScript over an RpcPeer, with no `vscode` import.
 */
import { randomUUID } from 'node:crypto';
import { Emitter, Event } from 'vscode-jsonrpc';

import { DiffResult } from './planDiff';
import { CancellationToken, Disposable, RpcPeer, WorkDoneProgressValue, workDoneProgress } from './rpc';
import { MessageStreams, StreamHandlers, StreamOutcome } from './streams';

export const METHODS = {
  sessionCreate: 'session.create',
  messageStream: 'message/stream',
  tasksList: 'tasks/list',
  tasksCancel: 'tasks/cancel',
  actionList: '_cleveragents/registry/action/list',
  planUse: '_cleveragents/plan/use',
  planExecute: '_cleveragents/plan/execute',
  planStatus: '_cleveragents/plan/status',
  planDiff: '_cleveragents/plan/diff',
  planApply: '_cleveragents/plan/apply',
  planRollback: '_cleveragents/plan/rollback',
  planCancel: '_cleveragents/plan/cancel',
  planList: '_cleveragents/plan/list',
  eventSubscribe: '_cleveragents/event/subscribe',
} as const;

export const EVENT_NOTIFICATION = '_cleveragents/event';
export const INPUT_REQUIRED = 'input-required';

export type AutomationProfile = 'manual' | 'supervised' | 'autonomous';

export interface Session {
  session_id: string;
  status: string;
  actor_name: string;
  created_at: string;
}

export interface ActionArgument {
  name: string;
  type: string;
  required: boolean;
  default: unknown;
  description: string;
}

export interface Action {
  name: string;
  description: string;
  source: string;
  arguments: ActionArgument[];
}

export interface PlanStatus {
  plan_id: string;
  phase: string;
  state: string;
  allowed_actions: string[];
  reason?: string | null;
  action_name?: string;
  automation_profile?: string;
  files?: string[];
  created_at?: string;
  updated_at?: string;
}

export interface TaskSummary {
  id: string;
  contextId: string;
  status: { state: string; timestamp?: string };
}

/** The raw A2AEvent of a live subscription. */
export interface AgentEvent {
  event_id: string;
  event_type: string;
  plan_id: string | null;
  data: Record<string, any>;
  timestamp: string;
  subscription_id?: string;
}

/** A plan waiting for a person: approving continues it, rejecting cancels it. */
export interface Gate {
  planId: string;
  phase: string;
  reason: string;
  actionName?: string;
}

export type ProgressListener = (value: WorkDoneProgressValue) => void;

/** The gate an event announces, if it announces one. */
export function gateOf(event: AgentEvent): Gate | undefined {
  if (!event.plan_id || event.data?.state !== INPUT_REQUIRED) {
    return undefined;
  }
  return {
    planId: event.plan_id,
    phase: String(event.data.phase),
    reason: String(event.data.reason ?? 'approval needed'),
    actionName: event.data.action_name,
  };
}

/** The action's arguments typed as the registry declares them (input boxes give text). */
export function coerceArguments(action: Action, given: Record<string, string>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const argument of action.arguments) {
    const text = given[argument.name];
    if (text === undefined || (text === '' && !argument.required)) {
      continue;
    }
    if (argument.type === 'boolean') {
      out[argument.name] = /^(true|yes|1|on)$/i.test(text.trim());
    } else if (argument.type === 'number' || argument.type === 'integer') {
      const value = Number(text);
      out[argument.name] = Number.isNaN(value) ? text : value;
    } else {
      out[argument.name] = text;
    }
  }
  return out;
}

export class AgentsClient implements Disposable {
  private readonly events = new Emitter<AgentEvent>();
  private readonly gates = new Emitter<Gate>();
  private readonly streams: MessageStreams;
  private readonly registrations: Disposable[] = [];
  private progressTokens = 0;
  session: Session | undefined;
  /** The conversation's A2A context: set by the first reply, cleared by a new session. */
  contextId: string | undefined;

  /** Every event of the live subscription. */
  readonly onEvent: Event<AgentEvent> = this.events.event;
  /** A plan reached a gate (input-required). */
  readonly onGate: Event<Gate> = this.gates.event;

  constructor(private readonly peer: RpcPeer) {
    this.streams = new MessageStreams(peer);
    this.registrations.push(this.streams, peer.onNotification(EVENT_NOTIFICATION, (event: AgentEvent) => {
      this.events.fire(event);
      const gate = gateOf(event);
      if (gate) {
        this.gates.fire(gate);
      }
    }));
  }

  dispose(): void {
    this.registrations.forEach((registration) => registration.dispose());
    this.events.dispose();
    this.gates.dispose();
  }

  private request<R>(method: string, params: object = {}, token?: CancellationToken): Promise<R> {
    // vscode-jsonrpc would send a trailing `undefined` as a second positional param.
    return token ? this.peer.sendRequest<R>(method, params, token) : this.peer.sendRequest<R>(method, params);
  }

  /** Opens the live subscription; the events arrive through onEvent and onGate. */
  subscribeEvents(planId?: string): Promise<{ subscription_id: string; live: boolean }> {
    return this.request(METHODS.eventSubscribe, planId ? { plan_id: planId } : {});
  }

  async createSession(actorName?: string): Promise<Session> {
    this.session = await this.request<Session>(METHODS.sessionCreate, actorName ? { actor_name: actorName } : {});
    this.contextId = undefined;
    return this.session;
  }

  /**
   * Sends a message with `message/stream`, in the session's conversation (its A2A
   * context); each chunk of the reply reaches `handlers` as it comes.
   */
  async sendMessage(text: string, handlers: StreamHandlers = {}, token?: CancellationToken,
    ids: { contextId?: string; taskId?: string } = {}): Promise<StreamOutcome> {
    const messageId = randomUUID();
    const message: Record<string, unknown> = {
      kind: 'message', role: 'user', messageId, parts: [{ kind: 'text', text }], ...ids,
    };
    if (!ids.contextId && !ids.taskId && this.contextId) {
      message.contextId = this.contextId;
    }
    const outcome = await this.streams.run(messageId, handlers,
      (t) => this.request(METHODS.messageStream, { message }, t), token);
    this.contextId = outcome.contextId ?? this.contextId;
    return outcome;
  }

  async listTasks(pageSize = 50): Promise<TaskSummary[]> {
    const page = await this.request<{ tasks: TaskSummary[] }>(METHODS.tasksList, { pageSize });
    return page.tasks;
  }

  cancelTask(taskId: string): Promise<TaskSummary> {
    return this.request(METHODS.tasksCancel, { id: taskId });
  }

  async listActions(): Promise<Action[]> {
    return (await this.request<{ actions: Action[] }>(METHODS.actionList)).actions;
  }

  usePlan(actionName: string, args: Record<string, unknown>, profile: AutomationProfile = 'supervised'): Promise<PlanStatus> {
    const params: Record<string, unknown> = { action_name: actionName, arguments: args, automation_profile: profile };
    if (this.session) {
      params.session_id = this.session.session_id;
    }
    return this.request(METHODS.planUse, params);
  }

  /** A request that reports `$/progress` on a token of its own while it runs. */
  private async withProgress<R>(method: string, params: object, onProgress?: ProgressListener,
    token?: CancellationToken): Promise<R> {
    if (!onProgress) {
      return this.request<R>(method, params, token);
    }
    const workDoneToken = `cleveragents-${process.pid}-${++this.progressTokens}`;
    const listening = this.peer.onProgress(workDoneProgress, workDoneToken, onProgress);
    try {
      return await this.request<R>(method, { ...params, workDoneToken }, token);
    } finally {
      listening.dispose();
    }
  }

  executePlan(planId: string, onProgress?: ProgressListener, token?: CancellationToken): Promise<PlanStatus> {
    return this.withProgress(METHODS.planExecute, { plan_id: planId }, onProgress, token);
  }

  applyPlan(planId: string, onProgress?: ProgressListener, force = false): Promise<PlanStatus> {
    return this.withProgress(METHODS.planApply, force ? { plan_id: planId, force } : { plan_id: planId }, onProgress);
  }

  rollbackPlan(planId: string): Promise<PlanStatus> {
    return this.request(METHODS.planRollback, { plan_id: planId });
  }

  cancelPlan(planId: string): Promise<PlanStatus> {
    return this.request(METHODS.planCancel, { plan_id: planId });
  }

  planStatus(planId: string): Promise<PlanStatus> {
    return this.request(METHODS.planStatus, { plan_id: planId });
  }

  planDiff(planId: string): Promise<DiffResult & PlanStatus> {
    return this.request(METHODS.planDiff, { plan_id: planId });
  }

  async listPlans(limit = 100): Promise<PlanStatus[]> {
    return (await this.request<{ plans: PlanStatus[] }>(METHODS.planList, { limit })).plans;
  }

  /** Approves a plan's gate: before execute it executes, before apply it applies. */
  async approve(planId: string, onProgress?: ProgressListener): Promise<PlanStatus> {
    const status = await this.planStatus(planId);
    if (status.state !== INPUT_REQUIRED) {
      throw new Error(`plan ${planId} is ${status.phase}/${status.state}: it is not waiting for an approval`);
    }
    return status.phase === 'plan' ? this.executePlan(planId, onProgress) : this.applyPlan(planId, onProgress);
  }

  /** Rejects a plan's gate: the plan is cancelled. */
  reject(planId: string): Promise<PlanStatus> {
    return this.cancelPlan(planId);
  }
}
