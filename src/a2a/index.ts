/**
 * `rxheal/a2a`: remote agents over A2A 1.0, both ways. {@link fromA2A} makes a remote agent a
 * streaming rxheal tool that heals (a breaker per agent, first-event and idle deadlines, a cut
 * stream resubscribed without a second task, `tasks/cancel` on cancellation, the task's end
 * mapped); {@link toA2A} serves an rxheal agent as an A2A server on 127.0.0.1 whose task events
 * carry the run's healing. `@a2a-js/sdk` (1.x) is an optional peer dependency: only this subpath
 * needs it.
 *
 * @example
 * ```ts
 * import { ClientFactory } from '@a2a-js/sdk/client';
 * import { fromA2A } from 'rxheal/a2a';
 * const travel = await fromA2A(await new ClientFactory().createFromUrl('http://127.0.0.1:41241'), { id: 'travel' });
 * ```
 *
 * @module
 */
export { fromA2A } from './fromA2A.js';
export type { A2AClient, A2ARequestOptions, A2AToolArgs, FromA2AOptions } from './fromA2A.js';
export { toA2A } from './toA2A.js';
export type { A2AIncoming, A2AServer, A2ASkill, ToA2AConfig } from './toA2A.js';
export { A2AProtocolError, A2AStreamEndedError, A2ATaskError, A2ATimeoutError } from './errors.js';
export type { A2AFailedState } from './errors.js';
export type { A2AArtifact, A2AArtifactResult, A2AMessage, A2APart, A2AResult, A2AStreamResponse, A2ATask, A2ATaskStatus } from './wire.js';
