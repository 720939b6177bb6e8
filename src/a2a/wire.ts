/**
 * The A2A 1.0 objects `rxheal/a2a` reads and writes, by shape (the fields it uses of the SDK's
 * `Task`, `Message`, `StreamResponse`, … — `@a2a-js/sdk` is never imported for its types), and
 * {@link TaskView}: one call's picture of a remote task, rebuilt from its stream events and from
 * each snapshot a resubscription starts with, so a resumed stream never doubles what was shown.
 *
 * @module
 */
import { A2ATaskError, type A2AFailedState } from './errors.js';

/**
 * One part of a message or an artifact: text, data, or a file (its `url` or raw bytes).
 *
 * @example
 * ```ts
 * const part: A2APart = { content: { $case: 'text', value: 'Two flights found.' } };
 * ```
 */
export interface A2APart {
  readonly content?: { readonly $case: 'text' | 'data' | 'url' | 'raw'; readonly value: unknown } | undefined;
  readonly mediaType?: string;
  readonly filename?: string;
  readonly metadata?: { readonly [key: string]: unknown } | undefined;
}

/**
 * A message (the SDK's `Message`, the fields read). `role` 1: the user; 2: the agent.
 *
 * @example
 * ```ts
 * const message: A2AMessage = { messageId: 'm1', role: 1, parts: [{ content: { $case: 'text', value: 'Flights to Paris?' } }] };
 * ```
 */
export interface A2AMessage {
  readonly messageId: string;
  readonly role: number;
  readonly parts: readonly A2APart[];
  readonly taskId?: string;
  readonly contextId?: string;
  readonly metadata?: { readonly [key: string]: unknown } | undefined;
}

/**
 * A task's status (the SDK's `TaskStatus`): `state` is the SDK's `TaskState` number.
 *
 * @example
 * ```ts
 * const working: A2ATaskStatus = { state: 2 }; // TaskState.TASK_STATE_WORKING
 * ```
 */
export interface A2ATaskStatus {
  readonly state: number;
  readonly message?: A2AMessage | undefined;
  readonly timestamp?: string | undefined;
}

/**
 * An artifact (the SDK's `Artifact`, the fields read).
 *
 * @example
 * ```ts
 * const artifact: A2AArtifact = { artifactId: 'answer', parts: [{ content: { $case: 'text', value: 'Two flights.' } }] };
 * ```
 */
export interface A2AArtifact {
  readonly artifactId: string;
  readonly name?: string;
  readonly parts: readonly A2APart[];
  readonly metadata?: { readonly [key: string]: unknown } | undefined;
}

/**
 * A task (the SDK's `Task`, the fields read).
 *
 * @example
 * ```ts
 * const task: A2ATask = { id: 't1', contextId: 'c1', status: { state: 1 }, artifacts: [] };
 * ```
 */
export interface A2ATask {
  readonly id: string;
  readonly contextId: string;
  readonly status?: A2ATaskStatus | undefined;
  readonly artifacts?: readonly A2AArtifact[];
}

/**
 * One event of a task's stream (the SDK's `StreamResponse`).
 *
 * @example
 * ```ts
 * const event: A2AStreamResponse = { payload: { $case: 'statusUpdate', value: { taskId: 't1', contextId: 'c1', status: { state: 3 } } } };
 * ```
 */
export interface A2AStreamResponse {
  readonly payload?:
    | { readonly $case: 'task'; readonly value: A2ATask }
    | { readonly $case: 'message'; readonly value: A2AMessage }
    | { readonly $case: 'statusUpdate'; readonly value: { readonly taskId: string; readonly contextId: string; readonly status?: A2ATaskStatus | undefined } }
    | {
        readonly $case: 'artifactUpdate';
        readonly value: { readonly taskId: string; readonly contextId: string; readonly artifact?: A2AArtifact | undefined; readonly append?: boolean };
      }
    | undefined;
}

/**
 * The SDK's `TaskState` values (A2A 1.0's `TASK_STATE_*`).
 *
 * @example
 * ```ts
 * TASK_STATE['input-required']; // 6
 * ```
 */
export const TASK_STATE = {
  submitted: 1,
  working: 2,
  completed: 3,
  failed: 4,
  canceled: 5,
  'input-required': 6,
  rejected: 7,
  'auth-required': 8,
} as const;

/**
 * The SDK's `Role.ROLE_USER`.
 *
 * @example
 * ```ts
 * const message: A2AMessage = { messageId: 'm1', role: ROLE_USER, parts: [] };
 * ```
 */
export const ROLE_USER = 1;
/**
 * The SDK's `Role.ROLE_AGENT`.
 *
 * @example
 * ```ts
 * const reply: A2AMessage = { messageId: 'm2', role: ROLE_AGENT, parts: [] };
 * ```
 */
export const ROLE_AGENT = 2;

const STATE_NAMES = new Map<number, keyof typeof TASK_STATE>(Object.entries(TASK_STATE).map(([name, value]) => [value, name as keyof typeof TASK_STATE]));

/**
 * One artifact of a remote task's result: its text parts joined, and its data parts.
 *
 * @example
 * ```ts
 * const artifact: A2AArtifactResult = { id: 'answer', name: 'answer', text: 'Two flights found.', data: [] };
 * ```
 */
export interface A2AArtifactResult {
  readonly id: string;
  readonly name: string;
  readonly text: string;
  readonly data: readonly unknown[];
}

/**
 * What a {@link fromA2A} tool emits: the remote task as it stands — each value whole (a
 * resubscription replaces it; nothing is a delta), the last one its result. `state`: the task's
 * (`'submitted'`, `'working'`, `'completed'`, `'input-required'`), or `'message'` when the agent
 * answered with a message and no task. `text`: the artifacts' text (or the message's); `question`:
 * what an `input-required` task asks (its status message).
 *
 * @example
 * ```ts
 * const done: A2AResult = { state: 'completed', taskId: 't1', contextId: 'c1', text: 'Two flights found.', artifacts: [] };
 * ```
 */
export interface A2AResult {
  readonly state: 'submitted' | 'working' | 'completed' | 'input-required' | 'message';
  readonly taskId?: string;
  readonly contextId?: string;
  readonly text: string;
  readonly artifacts: readonly A2AArtifactResult[];
  readonly question?: string;
}

/**
 * The text parts of some parts, joined.
 *
 * @example
 * ```ts
 * partsText([{ content: { $case: 'text', value: 'Hel' } }, { content: { $case: 'text', value: 'lo' } }]); // 'Hello'
 * ```
 */
export function partsText(parts: readonly A2APart[] | undefined): string {
  return (parts ?? [])
    .filter((p) => p.content?.$case === 'text')
    .map((p) => String(p.content!.value))
    .join('');
}

const FAILED: ReadonlySet<string> = new Set<A2AFailedState>(['failed', 'rejected', 'canceled', 'auth-required']);

/**
 * One call's picture of a remote task: `push` takes each stream event — a task (a snapshot: what
 * it says replaces what was known, so a resubscription's first event never doubles an artifact),
 * a status update, an artifact chunk (appended or replacing, as it says), or a message (the
 * answer, when there is no task) — and returns the result as it now stands. A terminal state ends
 * it: `completed` and `input-required` as the last result, `failed`, `rejected`, `canceled` and
 * `auth-required` as an {@link A2ATaskError}.
 *
 * @example
 * ```ts
 * const view = new TaskView('travel');
 * view.push({ payload: { $case: 'task', value: task } }); // { state: 'submitted', … }
 * ```
 */
export class TaskView {
  taskId: string | undefined;
  private contextId: string | undefined;
  private state: A2AResult['state'] = 'submitted';
  private readonly artifacts = new Map<string, A2AArtifact>();
  private statusText = '';
  private message: string | undefined;
  /** The task reached a terminal or interrupted state (or the agent answered with a message). */
  done = false;

  constructor(private readonly agent: string) {}

  push(event: A2AStreamResponse): A2AResult {
    const payload = event.payload;
    if (payload?.$case === 'task') {
      this.taskId = payload.value.id;
      this.contextId = payload.value.contextId;
      this.artifacts.clear();
      for (const artifact of payload.value.artifacts ?? []) this.artifacts.set(artifact.artifactId, artifact);
      this.status(payload.value.status);
    } else if (payload?.$case === 'statusUpdate') {
      this.taskId ??= payload.value.taskId;
      this.status(payload.value.status);
    } else if (payload?.$case === 'artifactUpdate') {
      const artifact = payload.value.artifact;
      if (artifact !== undefined) {
        const known = this.artifacts.get(artifact.artifactId);
        this.artifacts.set(artifact.artifactId, payload.value.append === true && known ? { ...known, parts: [...known.parts, ...artifact.parts] } : artifact);
      }
    } else if (payload?.$case === 'message') {
      this.message = partsText(payload.value.parts);
      this.contextId ??= payload.value.contextId || undefined;
      if (this.taskId === undefined) {
        this.state = 'message';
        this.done = true;
      }
    }
    return this.result();
  }

  private status(status: A2ATaskStatus | undefined): void {
    if (status === undefined) return;
    const name = STATE_NAMES.get(status.state);
    const text = partsText(status.message?.parts);
    if (text !== '') this.statusText = text;
    if (name === undefined) return;
    if (FAILED.has(name)) {
      this.done = true;
      throw new A2ATaskError(this.agent, this.taskId ?? '(unknown)', name as A2AFailedState, text);
    }
    this.state = name as A2AResult['state'];
    if (name === 'completed' || name === 'input-required') this.done = true;
  }

  private result(): A2AResult {
    const artifacts = [...this.artifacts.values()].map((a) => ({
      id: a.artifactId,
      name: a.name ?? '',
      text: partsText(a.parts),
      data: a.parts.filter((p) => p.content?.$case === 'data').map((p) => p.content!.value),
    }));
    const text = this.state === 'message' ? (this.message ?? '') : artifacts.map((a) => a.text).join('\n');
    return {
      state: this.state,
      ...(this.taskId === undefined ? {} : { taskId: this.taskId }),
      ...(this.contextId === undefined ? {} : { contextId: this.contextId }),
      text,
      artifacts,
      ...(this.state === 'input-required' ? { question: this.statusText } : {}),
    };
  }
}
