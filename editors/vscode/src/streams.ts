/**
 * Streams over stdio: each item of a `message/stream` arrives as a
 * `task/statusUpdate` or `task/artifactUpdate` notification whose `requestId` is
 * the stream request's id. The libraries do not expose that id, so a stream is
 * recognised by its first item, the task, whose history holds the message we sent
 * (its `messageId` is ours); later items follow that `requestId`.
 */
import { CancellationToken, Disposable, RpcPeer } from './rpc';

export const STATUS_NOTIFICATION = 'task/statusUpdate';
export const ARTIFACT_NOTIFICATION = 'task/artifactUpdate';

export interface StreamHandlers {
  /** A chunk of the agent's reply text. */
  onText?: (text: string) => void;
  /** The task's state changed (0.3 names: working, completed, input-required, ...). */
  onStatus?: (state: string, item: any) => void;
}

export interface StreamOutcome {
  taskId?: string;
  contextId?: string;
  state?: string;
  /** The whole reply, as streamed. */
  text: string;
  /** How many stream items arrived. */
  items: number;
}

interface Stream {
  handlers: StreamHandlers;
  outcome: StreamOutcome;
}

/** Text of the parts of an artifact or message. */
export function textOf(parts: unknown): string {
  if (!Array.isArray(parts)) {
    return '';
  }
  return parts.map((part) => (part && typeof part.text === 'string' ? part.text : '')).join('');
}

export class MessageStreams implements Disposable {
  private readonly waiting = new Map<string, Stream>(); // by messageId, until the first item
  private readonly running = new Map<string | number, Stream>(); // by requestId
  private readonly registrations: Disposable[];

  constructor(peer: RpcPeer) {
    this.registrations = [
      peer.onNotification(STATUS_NOTIFICATION, (params) => this.route(params)),
      peer.onNotification(ARTIFACT_NOTIFICATION, (params) => this.route(params)),
    ];
  }

  dispose(): void {
    this.registrations.forEach((registration) => registration.dispose());
    this.waiting.clear();
    this.running.clear();
  }

  /** Runs `send` (the stream request) and feeds its items to `handlers`. */
  async run(messageId: string, handlers: StreamHandlers, send: (token?: CancellationToken) => Promise<any>,
    token?: CancellationToken): Promise<StreamOutcome> {
    const stream: Stream = { handlers, outcome: { text: '', items: 0 } };
    this.waiting.set(messageId, stream);
    try {
      const last = await send(token);
      if (stream.outcome.items === 0 && last) {
        this.apply(stream, last); // the server sent no item before the answer
      }
      return stream.outcome;
    } finally {
      this.waiting.delete(messageId);
      for (const [requestId, candidate] of this.running) {
        if (candidate === stream) {
          this.running.delete(requestId);
        }
      }
    }
  }

  private route(params: any): void {
    if (!params || params.requestId === undefined) {
      return; // a subscriber's plan or task event, not a stream item
    }
    let stream = this.running.get(params.requestId);
    if (!stream) {
      const history: any[] = Array.isArray(params.history) ? params.history : [];
      const sent = history.map((message) => message?.messageId).find((id) => this.waiting.has(id));
      if (sent === undefined) {
        return;
      }
      stream = this.waiting.get(sent)!;
      this.waiting.delete(sent);
      this.running.set(params.requestId, stream);
    }
    this.apply(stream, params);
  }

  private apply(stream: Stream, item: any): void {
    const outcome = stream.outcome;
    outcome.items += 1;
    outcome.taskId = item.taskId ?? (item.kind === 'task' ? item.id : outcome.taskId);
    outcome.contextId = item.contextId ?? outcome.contextId;
    if (item.kind === 'artifact-update' && item.artifact) {
      const text = textOf(item.artifact.parts);
      if (text) {
        outcome.text += text;
        stream.handlers.onText?.(text);
      }
    } else if (item.status?.state) {
      outcome.state = item.status.state;
      stream.handlers.onStatus?.(item.status.state, item);
    }
  }
}
