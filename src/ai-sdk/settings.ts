/**
 * The AI SDK call's settings, handed from {@link toAiSdk} to the {@link fromAiSdk} models inside:
 * the settings type, the symbol they travel under on a request, the mark of the models that take
 * them, and the warnings for the settings a model inside can't take (the only part of the AI SDK
 * adapter both directions share besides the reasoning seal, `seal.ts`).
 *
 * @module
 */
import type { LanguageModelV3CallOptions, SharedV3Warning } from '@ai-sdk/provider';
import { modelsInside, type Model, type ModelRequest } from '../core/model/model.js';

/**
 * Call settings of one AI SDK call: `temperature`, `maxOutputTokens`, `topP`, `stopSequences`,
 * `seed`, `toolChoice`, `responseFormat`, `headers`, `providerOptions`…, and AI SDK 7's
 * `reasoning` (how hard a reasoning model thinks: `'none'` … `'max'`), which a spec v4 model
 * reads and a v3 or v2 model ignores (as `ai@7` itself passes it to them).
 *
 * @example
 * ```ts
 * const settings: AiSdkCallSettings = { temperature: 0, maxOutputTokens: 1024, reasoning: 'low' };
 * ```
 */
export type AiSdkCallSettings = Omit<LanguageModelV3CallOptions, 'prompt' | 'tools' | 'abortSignal' | 'includeRawChunks'> & {
  readonly reasoning?: 'provider-default' | 'none' | 'minimal' | 'low' | 'medium' | 'high' | 'xhigh' | 'max';
};

/** The values of AI SDK 7's `reasoning` call option (spec v4), in its order. */
export const REASONING_EFFORTS: readonly NonNullable<AiSdkCallSettings['reasoning']>[] = [
  'provider-default',
  'none',
  'minimal',
  'low',
  'medium',
  'high',
  'xhigh',
  'max',
];

/**
 * Where {@link toAiSdk} puts the AI SDK call's settings on the request it hands its rxheal
 * model, for the {@link fromAiSdk} models inside to send. A symbol key: it travels through
 * `{ ...request }` copies (fallbackModel's continuation, `adapt`), other models ignore it.
 */
export const CALL_SETTINGS = Symbol.for('rxheal.ai-sdk.callSettings');
/** Marks the models `fromAiSdk` makes: they take the call settings `toAiSdk` hands on. */
export const TAKES_SETTINGS = Symbol.for('rxheal.ai-sdk.takesCallSettings');
/** A request as `toAiSdk` hands it on: with the call's settings under {@link CALL_SETTINGS}. */
export type RequestWithSettings = ModelRequest & { readonly [CALL_SETTINGS]?: AiSdkCallSettings };

/** The ids of the models in `model` (itself, or those it is made of, all the way down) that take no AI SDK call settings: not `fromAiSdk` models. */
export function settingsIgnoredBy(model: Model, out: string[] = []): string[] {
  if ((model as { [TAKES_SETTINGS]?: boolean })[TAKES_SETTINGS] === true) return out;
  const inside = modelsInside(model);
  if (inside === undefined) out.push(model.id);
  else for (const m of inside) settingsIgnoredBy(m, out);
  return out;
}

/**
 * What an AI SDK provider says of a setting it can't honour (`'unsupported'`), for each setting
 * the call set that some model inside takes no part of (`ignoredBy`: their ids). Provider options
 * are not warned about (every AI SDK provider ignores those of others), nor headers (the AI SDK
 * sends its own, a user-agent, on every call).
 */
export function settingsWarnings(settings: Readonly<Record<string, unknown>>, ignoredBy: readonly string[]): SharedV3Warning[] {
  if (ignoredBy.length === 0) return [];
  const names = ignoredBy.map((id) => `'${id}'`);
  const details =
    names.length === 1
      ? `rxheal model ${names[0]} takes no AI SDK call settings (only fromAiSdk models do): set it on the model itself`
      : `rxheal models ${names.slice(0, -1).join(', ')} and ${names.at(-1)} take no AI ` +
        `SDK call settings (only fromAiSdk models do): set it on the models themselves`;
  return Object.keys(settings)
    .filter((key) => key !== 'providerOptions' && key !== 'headers')
    .map((feature) => ({ type: 'unsupported', feature, details }));
}
