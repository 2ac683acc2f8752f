/** The command handlers: pickers, input boxes, notifications and progress around AgentsClient. */
import * as vscode from 'vscode';

import { Action, AgentsClient, AutomationProfile, Gate, PlanStatus, ProgressListener, coerceArguments } from './agentsClient';
import { formatPlan, formatTask, parseSidePath, sidePath } from './format';
import { FileSides } from './planDiff';
import { reviewPlan } from './planReview';
import { WorkDoneProgressValue } from './rpc';

export const DIFF_SCHEME = 'cleveragents-plan';
const APPROVE = 'Approve';
const REJECT = 'Reject';
const SHOW_DIFF = 'Show Diff';
const ACTIVE_TASK_STATES = new Set(['submitted', 'working', 'input-required', 'auth-required']);
const MAX_REVIEWED_PLANS = 20;

type Handler = (...args: any[]) => Promise<unknown>;

export class Commands {
  /** The plan the last command worked on: the default for the next one. */
  currentPlan: string | undefined;
  private readonly offered = new Set<string>(); // gates with a notification open
  private readonly reviews = new Map<string, Map<string, FileSides>>(); // plan -> path -> sides

  constructor(
    private readonly agents: AgentsClient,
    private readonly chat: vscode.OutputChannel,
    private readonly events: vscode.OutputChannel,
    private readonly root: string,
    private readonly profile: () => AutomationProfile,
  ) {}

  handlers(): Record<string, Handler> {
    return {
      newSession: () => this.newSession(),
      sendMessage: (text?: string) => this.sendMessage(text),
      runAction: (name?: string, args?: Record<string, unknown>) => this.runAction(name, args),
      showDiff: (planId?: string, path?: string) => this.showDiff(planId, path),
      apply: (planId?: string) => this.apply(planId),
      rollback: (planId?: string) => this.rollback(planId),
      cancel: (target?: string) => this.cancel(target),
      listPlans: () => this.listPlans(),
      listTasks: () => this.listTasks(),
    };
  }

  /** The before/after documents of the diff view. */
  readonly diffContent: vscode.TextDocumentContentProvider = {
    provideTextDocumentContent: (uri: vscode.Uri): string => {
      const side = parseSidePath(uri.path);
      const file = side && this.reviews.get(side.planId)?.get(side.file);
      return file ? file[side.side] : '';
    },
  };

  async newSession(): Promise<string> {
    const session = await this.agents.createSession();
    this.chat.appendLine(`-- session ${session.session_id} (${session.actor_name})`);
    void vscode.window.showInformationMessage(`CleverAgents: session ${session.session_id} started`);
    return session.session_id;
  }

  async sendMessage(text?: string): Promise<unknown> {
    text ??= await vscode.window.showInputBox({ prompt: 'Message to the agent', ignoreFocusOut: true });
    if (!text) {
      return undefined;
    }
    this.chat.show(true);
    this.chat.appendLine(`> ${text}`);
    const outcome = await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: 'CleverAgents', cancellable: true },
      (progress, token) => this.agents.sendMessage(text!, {
        onText: (chunk) => this.chat.append(chunk),
        // A tool the agent calls arrives as a working update that names it.
        onStatus: (state, item) => {
          const call = item?.metadata?.['cleveragents.tool_call'];
          progress.report({ message: call?.name ? `${state}: ${call.name}` : state });
        },
      }, token));
    this.chat.appendLine('');
    this.chat.appendLine(`-- task ${outcome.taskId} ${outcome.state}`);
    return outcome;
  }

  async runAction(name?: string, given?: Record<string, unknown>): Promise<PlanStatus | undefined> {
    const actions = await this.agents.listActions();
    const action = name ? actions.find((candidate) => candidate.name === name) : await pickAction(actions);
    if (!action) {
      if (name) {
        throw new Error(`no action named ${name}`);
      }
      return undefined;
    }
    const args = given ?? await askArguments(action);
    if (!args) {
      return undefined;
    }
    const plan = await this.agents.usePlan(action.name, args, this.profile());
    this.currentPlan = plan.plan_id;
    this.chat.appendLine(`-- plan ${plan.plan_id}: ${action.name} ${JSON.stringify(args)} -> ${plan.phase}/${plan.state}`);
    if (plan.state !== 'ready') {
      return plan; // a gate: its notification asks for the approval
    }
    return this.withPlanProgress(plan.plan_id, `Executing ${action.name}`,
      (report) => this.agents.executePlan(plan.plan_id, report));
  }

  /** An approval prompt for a plan's gate, until it is answered or dismissed. */
  async offerGate(gate: Gate): Promise<string | undefined> {
    const key = `${gate.planId}:${gate.phase}`;
    if (this.offered.has(key)) {
      return undefined;
    }
    this.offered.add(key);
    try {
      const what = gate.phase === 'plan' ? 'execute' : 'apply';
      const buttons = gate.phase === 'plan' ? [APPROVE, REJECT] : [APPROVE, REJECT, SHOW_DIFF];
      for (;;) {
        const answer = await vscode.window.showInformationMessage(
          `CleverAgents: plan ${gate.actionName ?? ''} ${gate.planId} waits to ${what}: ${gate.reason}`, ...buttons);
        if (answer === SHOW_DIFF) {
          await this.showDiff(gate.planId);
          continue;
        }
        if (answer === APPROVE) {
          this.currentPlan = gate.planId;
          const plan = await this.withPlanProgress(gate.planId, `Approved: ${what}`,
            (report) => this.agents.approve(gate.planId, report));
          if (what === 'apply') {
            announceApplied(plan);
          }
        } else if (answer === REJECT) {
          const plan = await this.agents.reject(gate.planId);
          this.chat.appendLine(`-- plan ${gate.planId} rejected: ${plan.phase}/${plan.state}`);
        }
        return answer;
      }
    } finally {
      this.offered.delete(key);
    }
  }

  /** Runs a plan call with its `$/progress` shown in a cancellable notification. */
  private async withPlanProgress(planId: string, title: string,
    run: (report: ProgressListener) => Promise<PlanStatus>): Promise<PlanStatus> {
    const plan = await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: `CleverAgents: ${title}`, cancellable: true },
      async (progress, token) => {
        let done = 0;
        const cancelling = token.onCancellationRequested(() => void this.agents.cancelPlan(planId));
        const report = (value: WorkDoneProgressValue): void => {
          const text = [value.title, value.message, value.percentage === undefined ? '' : `${value.percentage}%`];
          this.events.appendLine([`$/progress ${value.kind}`, text.filter((part) => part).join(': ')].filter((part) => part)
            .join(' '));
          if (value.kind === 'end') {
            return;
          }
          const increment = value.percentage === undefined ? undefined : value.percentage - done;
          done = value.percentage ?? done;
          progress.report({ message: value.message, increment });
        };
        try {
          return await run(report);
        } finally {
          cancelling.dispose();
        }
      });
    this.chat.appendLine(`-- plan ${planId}: ${plan.phase}/${plan.state}${plan.reason ? ` (${plan.reason})` : ''}`);
    return plan;
  }

  /** The plan to act on: the one given, else a pick among those that allow `action`. */
  private async plan(given: string | undefined, action: string): Promise<string | undefined> {
    if (given) {
      return given;
    }
    const plans = (await this.agents.listPlans()).filter((plan) => action === 'diff'
      || plan.allowed_actions.includes(action));
    if (!plans.length) {
      void vscode.window.showInformationMessage(`CleverAgents: no plan to ${action}`);
      return undefined;
    }
    plans.sort((a, b) => Number(b.plan_id === this.currentPlan) - Number(a.plan_id === this.currentPlan));
    const picked = await vscode.window.showQuickPick(plans.map((plan) => ({
      label: plan.plan_id, description: formatPlan(plan), plan,
    })), { placeHolder: `Plan to ${action}` });
    return picked?.plan.plan_id;
  }

  async showDiff(planId?: string, path?: string): Promise<FileSides | undefined> {
    const id = await this.plan(planId ?? this.currentPlan, 'diff');
    if (!id) {
      return undefined;
    }
    const review = await reviewPlan(this.agents, id, this.root);
    if (!review.files.length) {
      void vscode.window.showInformationMessage(`CleverAgents: plan ${id} changes nothing`);
      return undefined;
    }
    this.reviews.delete(id);
    this.reviews.set(id, new Map(review.files.map((file) => [file.path, file])));
    while (this.reviews.size > MAX_REVIEWED_PLANS) {
      this.reviews.delete(this.reviews.keys().next().value!);
    }
    const file = path ? review.files.find((candidate) => candidate.path === path)
      : review.files.length === 1 ? review.files[0]
        : (await vscode.window.showQuickPick(review.files.map((candidate) => ({ label: candidate.path, file: candidate })),
          { placeHolder: `${review.files.length} files changed by plan ${id}` }))?.file;
    if (!file) {
      return undefined;
    }
    const uri = (side: 'before' | 'after') => vscode.Uri.from({ scheme: DIFF_SCHEME, path: sidePath(id, side, file.path) });
    await vscode.commands.executeCommand('vscode.diff', uri('before'), uri('after'),
      `${file.path} (plan ${id}, ${review.plan.phase}/${review.plan.state})`);
    return file;
  }

  async apply(planId?: string): Promise<PlanStatus | undefined> {
    const id = await this.plan(planId, 'apply');
    if (!id) {
      return undefined;
    }
    const plan = await this.withPlanProgress(id, 'Applying', (report) => this.agents.applyPlan(id, report));
    announceApplied(plan);
    return plan;
  }

  async rollback(planId?: string): Promise<PlanStatus | undefined> {
    const id = await this.plan(planId, 'rollback');
    if (!id) {
      return undefined;
    }
    const plan = await this.agents.rollbackPlan(id);
    this.chat.appendLine(`-- plan ${id}: ${plan.phase}/${plan.state}, restored ${plan.files?.join(', ') ?? ''}`);
    void vscode.window.showInformationMessage(`CleverAgents: rolled back ${plan.files?.length ?? 0} file(s)`);
    return plan;
  }

  /** Cancels a plan or an agent task: the id given, else a pick among those still running. */
  async cancel(target?: string): Promise<unknown> {
    const plans = (await this.agents.listPlans()).filter((plan) => plan.allowed_actions.includes('cancel'));
    const tasks = (await this.agents.listTasks()).filter((task) => ACTIVE_TASK_STATES.has(task.status.state));
    const items = [
      ...plans.map((plan) => ({ label: plan.plan_id, description: `plan ${formatPlan(plan)}`, target: 'plan' })),
      ...tasks.map((task) => ({ label: task.id, description: `task ${formatTask(task)}`, target: 'task' })),
    ];
    const picked = target ? items.find((item) => item.label === target) ?? { label: target, target: 'plan' }
      : await vscode.window.showQuickPick(items, { placeHolder: 'Cancel which plan or task?' });
    if (!picked) {
      return undefined;
    }
    const result = picked.target === 'task'
      ? await this.agents.cancelTask(picked.label) : await this.agents.cancelPlan(picked.label);
    this.chat.appendLine(`-- cancelled ${picked.target} ${picked.label}`);
    return result;
  }

  async listPlans(): Promise<PlanStatus[]> {
    const plans = await this.agents.listPlans();
    const picked = await vscode.window.showQuickPick(plans.map((plan) => ({
      label: plan.plan_id, description: formatPlan(plan), detail: `allowed: ${plan.allowed_actions.join(', ') || 'nothing'}`,
      plan,
    })), { placeHolder: `${plans.length} plan(s); pick one to make it current` });
    if (picked) {
      this.currentPlan = picked.plan.plan_id;
      this.chat.appendLine(`-- current plan ${picked.plan.plan_id}: ${formatPlan(picked.plan)}`);
    }
    return plans;
  }

  async listTasks(): Promise<unknown[]> {
    const tasks = await this.agents.listTasks();
    const picked = await vscode.window.showQuickPick(tasks.map((task) => ({
      label: task.id, description: formatTask(task), detail: `context ${task.contextId}`, task,
    })), { placeHolder: `${tasks.length} task(s)` });
    if (picked) {
      this.chat.appendLine(JSON.stringify(picked.task, null, 2));
    }
    return tasks;
  }
}

function announceApplied(plan: PlanStatus): void {
  void vscode.window.showInformationMessage(`CleverAgents: applied ${plan.files?.length ?? 0} file(s)`);
}

async function pickAction(actions: Action[]): Promise<Action | undefined> {
  const picked = await vscode.window.showQuickPick(actions.map((action) => ({
    label: action.name, description: action.source, detail: action.description, action,
  })), { placeHolder: 'Action to run as a plan' });
  return picked?.action;
}

/** One input box per argument; undefined when the user gives up. */
async function askArguments(action: Action): Promise<Record<string, unknown> | undefined> {
  const given: Record<string, string> = {};
  for (const argument of action.arguments) {
    const answer = await vscode.window.showInputBox({
      title: `${action.name}: ${argument.name}`,
      prompt: `${argument.description || argument.name} (${argument.type}${argument.required ? ', required' : ''})`,
      value: argument.default === null || argument.default === undefined ? '' : String(argument.default),
      ignoreFocusOut: true,
      validateInput: (value) => (argument.required && !value ? `${argument.name} is required` : undefined),
    });
    if (answer === undefined) {
      return undefined;
    }
    given[argument.name] = answer;
  }
  return coerceArguments(action, given);
}
