/**
 * {@link ModelCheckpoint}: how far a model's turn got on the provider's side — what a model that
 * can resume its turn reports (`context.checkpoint`) and takes back (`Model.resume`).
 *
 * @module
 */

/**
 * How far a model's turn got, in the provider's own terms: `responseId` names the turn on the
 * provider's side (a stored background response), `sequence` the last event received of it;
 * `model` is the id of the model that made it (the one whose {@link Model.resume} takes it).
 *
 * @example
 * ```ts
 * const checkpoint: ModelCheckpoint = { model: 'openai-responses:gpt-5-mini', responseId: 'resp_123', sequence: 41 };
 * ```
 */
export interface ModelCheckpoint {
  /** The id of the model that made it (`Model.id`). */
  readonly model: string;
  /** The turn on the provider's side: a stored response's id. */
  readonly responseId: string;
  /** The last event of it received (its `sequence_number`). */
  readonly sequence: number;
}
