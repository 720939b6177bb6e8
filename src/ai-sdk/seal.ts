/**
 * A reasoning block's seal, both ways: what the AI SDK carries in a part's `providerMetadata` (a
 * prompt part's `providerOptions`) for a block to be accepted back — Anthropic's signature or
 * redacted data, other providers' metadata — read into our `reasoning-end` / `ReasoningPart`
 * fields, and written back from them.
 *
 * @module
 */
import type { SharedV3ProviderMetadata } from '@ai-sdk/provider';
import { isObject } from '../adapters/common.js';

/**
 * What a reasoning block needs to be accepted back, as the AI SDK carries it: Anthropic's
 * `signature` or `redactedData` under `anthropic` (in a part's `providerMetadata`, a prompt part's
 * `providerOptions`) — what `@ai-sdk/anthropic` writes and reads — and whatever else providers
 * attach (`providerMetadata`: OpenAI's reasoning `itemId` and encrypted content, Gemini's
 * thought signature), carried as it came. The fields of a `reasoning-end` and a `ReasoningPart`.
 */
export type Seal = { signature?: string; redactedData?: string; providerMetadata?: Record<string, Record<string, unknown>> };

/** Whether a seal carries anything. */
export const sealed = (seal: Seal): boolean => seal.signature !== undefined || seal.redactedData !== undefined || seal.providerMetadata !== undefined;

/**
 * Adds a part's provider metadata (or a prompt part's options) to `into`: Anthropic's signature
 * and redacted data as fields of their own, everything else by provider in `providerMetadata`.
 * Runs for every reasoning delta that carries metadata: writes in place, nothing per field.
 */
export function sealOf(metadata: unknown, into: Seal = {}): Seal {
  if (!isObject(metadata)) return into;
  for (const provider in metadata) {
    const value = metadata[provider];
    if (!isObject(value)) continue;
    for (const key in value) {
      const field = value[key];
      if (field === undefined) continue;
      if (provider === 'anthropic' && (key === 'signature' || key === 'redactedData')) {
        if (typeof field === 'string' && field !== '') into[key] = field;
      } else ((into.providerMetadata ??= {})[provider] ??= {})[key] = field;
    }
  }
  return into;
}

/** A seal (a reasoning part or event) as provider metadata: its `providerMetadata`, Anthropic's signature or redacted data added; `undefined` for none. */
export function sealMetadata(seal: {
  readonly signature?: string;
  readonly redactedData?: string;
  readonly providerMetadata?: Record<string, unknown>;
}): SharedV3ProviderMetadata | undefined {
  const out: Record<string, Record<string, unknown>> = {};
  if (seal.providerMetadata !== undefined)
    for (const [provider, value] of Object.entries(seal.providerMetadata)) if (isObject(value)) out[provider] = { ...value };
  if (seal.signature !== undefined) out['anthropic'] = { ...out['anthropic'], signature: seal.signature };
  else if (seal.redactedData !== undefined) out['anthropic'] = { ...out['anthropic'], redactedData: seal.redactedData };
  return Object.keys(out).length > 0 ? (out as SharedV3ProviderMetadata) : undefined;
}
