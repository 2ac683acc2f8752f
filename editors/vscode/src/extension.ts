/**
 * The extension: starts cleveragents-lsp through vscode-languageclient (stdio) and
 * wires the protocol modules to VS Code's UI. The protocol itself lives in the
 * modules that do not import `vscode`.
 */
import * as vscode from 'vscode';
import { LanguageClient, LanguageClientOptions, ServerOptions, TransportKind } from 'vscode-languageclient/node';

import { AgentsClient } from './agentsClient';
import { Commands, DIFF_SCHEME } from './commands';
import { applyEditMiddleware } from './editorEdits';
import { formatEvent, workspaceRoot } from './format';
import { describeError } from './rpc';

export interface ExtensionApi {
  agents: AgentsClient;
  client: LanguageClient;
}

let client: LanguageClient | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<ExtensionApi> {
  const config = vscode.workspace.getConfiguration('cleveragents');
  const serverPath = config.get<string>('serverPath', 'cleveragents-lsp');
  const serverArgs = config.get<string[]>('serverArgs', []);
  const serverLog = vscode.window.createOutputChannel('CleverAgents Server', { log: true });
  const events = vscode.window.createOutputChannel('CleverAgents Events');
  const chat = vscode.window.createOutputChannel('CleverAgents');
  context.subscriptions.push(serverLog, events, chat);

  const serverOptions: ServerOptions = { command: serverPath, args: serverArgs, transport: TransportKind.stdio };
  // No documents are synced: the backend is used for its custom methods only. A plan's
  // apply and rollback come as workspace edits, saved at once (editorEdits.ts).
  const clientOptions: LanguageClientOptions = {
    documentSelector: [], outputChannel: serverLog, middleware: { workspace: applyEditMiddleware },
  };
  client = new LanguageClient('cleveragents', 'CleverAgents', serverOptions, clientOptions);
  await client.start();

  const agents = new AgentsClient(client);
  context.subscriptions.push(agents);
  const root = workspaceRoot(serverArgs, vscode.workspace.workspaceFolders?.[0]?.uri.fsPath) ?? process.cwd();
  const commands = new Commands(agents, chat, events, root,
    () => config.get<'manual' | 'supervised' | 'autonomous'>('automationProfile', 'supervised'));

  context.subscriptions.push(
    agents.onEvent((event) => events.appendLine(formatEvent(event))),
    // A gate's buttons run outside any command: a failed approval is shown all the same.
    agents.onGate((gate) => void reportingErrors(() => commands.offerGate(gate))),
    vscode.workspace.registerTextDocumentContentProvider(DIFF_SCHEME, commands.diffContent),
  );
  for (const [name, handler] of Object.entries(commands.handlers())) {
    context.subscriptions.push(vscode.commands.registerCommand(`cleveragents.${name}`,
      (...args: any[]) => reportingErrors(() => handler(...args))));
  }

  try {
    const subscription = await agents.subscribeEvents();
    events.appendLine(`subscribed to events (${subscription.subscription_id})`);
  } catch (error) {
    events.appendLine(`no event subscription: ${describeError(error)}`);
  }
  return { agents, client };
}

/** Runs `work`; a failure becomes an error notification (and undefined), never a silent rejection. */
async function reportingErrors<T>(work: () => Promise<T>): Promise<T | undefined> {
  try {
    return await work();
  } catch (error) {
    void vscode.window.showErrorMessage(`CleverAgents: ${describeError(error)}`);
    return undefined;
  }
}

export async function deactivate(): Promise<void> {
  const running = client;
  client = undefined;
  if (running) {
    await running.stop();
  }
}
