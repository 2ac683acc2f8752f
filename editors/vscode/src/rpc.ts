/**
 * The little a JSON-RPC peer must offer the protocol modules. Both a plain
 * vscode-jsonrpc MessageConnection and a vscode-languageclient LanguageClient fit,
 * so the protocol logic runs (and is tested) without VS Code.
 */
import { ProgressType } from 'vscode-jsonrpc';

export interface Disposable {
  dispose(): void;
}

/** Structurally the same as the cancellation tokens of vscode and vscode-jsonrpc. */
export interface CancellationToken {
  readonly isCancellationRequested: boolean;
  onCancellationRequested(listener: () => void): Disposable;
}

export interface RpcPeer {
  sendRequest<R>(method: string, params: unknown, token?: CancellationToken): Promise<R>;
  sendRequest<R>(method: string, params: unknown): Promise<R>;
  onNotification(method: string, handler: (params: any) => void): Disposable;
  onProgress<P>(type: ProgressType<P>, token: string | number, handler: (params: P) => void): Disposable;
}

/** The value of a `$/progress` notification for LSP work-done progress. */
export interface WorkDoneProgressValue {
  kind: 'begin' | 'report' | 'end';
  title?: string;
  message?: string;
  percentage?: number;
  cancellable?: boolean;
}

export const workDoneProgress = new ProgressType<WorkDoneProgressValue>();

/** A JSON-RPC error as both libraries raise it. */
export interface RpcError {
  code: number;
  message: string;
  data?: unknown;
}

export function isRpcError(error: unknown): error is RpcError {
  return typeof error === 'object' && error !== null && typeof (error as RpcError).code === 'number';
}

/** One line for a failed call: the message, the code, and what `data` names. */
export function describeError(error: unknown): string {
  if (!isRpcError(error)) {
    return error instanceof Error ? error.message : String(error);
  }
  const data = error.data === undefined ? '' : ` ${JSON.stringify(error.data)}`;
  return `${error.message} (${error.code})${data}`;
}
