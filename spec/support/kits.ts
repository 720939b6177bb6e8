/**
 * Both majors of each framework the adapter specs drive, as one "kit" per major: the AI SDK 6
 * line (`ai` 6, `@ai-sdk/provider` 3 and its providers, the project's devDependencies) and the
 * AI SDK 7 line (`ai` 7, `@ai-sdk/provider` 4 and its providers); `openai` 6 and `openai` 7. A spec
 * runs its cases once per kit (`for (const kit of AI_SDK_KITS) describe(kit.label, …)`); the 7.x
 * kits come from spec/support/nextMajors.ts, on Node ≥ 22 — on Node 20 the list holds the 6.x
 * kit alone and {@link skippedMajors} says why (the spec reports the 7.x cases as skipped).
 */
import { createAnthropic } from '@ai-sdk/anthropic';
import { createGoogleGenerativeAI } from '@ai-sdk/google';
import { createOpenAI } from '@ai-sdk/openai';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { APICallError } from '@ai-sdk/provider';
import { generateText, jsonSchema, stepCountIs, streamText, tool, wrapLanguageModel } from 'ai';
import { MockLanguageModelV3, simulateReadableStream } from 'ai/test';
import { readFileSync } from 'node:fs';
import OpenAI from 'openai';
import { nextMajors } from './nextMajors.js';

/** One major of the AI SDK: what the specs call of it (typed as the 6.x line's). */
export interface AiSdkKit {
  /** `AI SDK 6 (ai 6.0.326, @ai-sdk/provider 3.0.19)`: the specs' describe title. */
  readonly label: string;
  readonly major: 6 | 7;
  /** The language model spec version its providers and mock implement. */
  readonly specificationVersion: 'v3' | 'v4';
  readonly streamText: typeof streamText;
  readonly generateText: typeof generateText;
  readonly jsonSchema: typeof jsonSchema;
  readonly tool: typeof tool;
  readonly stepCountIs: typeof stepCountIs;
  readonly wrapLanguageModel: typeof wrapLanguageModel;
  /** `MockLanguageModelV3` (6) or `MockLanguageModelV4` (7): the same constructor and `doStreamCalls`. */
  readonly MockLanguageModel: typeof MockLanguageModelV3;
  readonly simulateReadableStream: typeof simulateReadableStream;
  readonly APICallError: typeof APICallError;
  readonly createOpenAICompatible: typeof createOpenAICompatible;
  readonly createOpenAI: typeof createOpenAI;
  readonly createAnthropic: typeof createAnthropic;
  readonly createGoogleGenerativeAI: typeof createGoogleGenerativeAI;
}

/** One major of the official `openai` SDK. */
export interface OpenAIKit {
  /** `openai 6.49.0`. */
  readonly label: string;
  readonly major: 6 | 7;
  readonly OpenAI: typeof OpenAI;
}

const version = (name: string): string =>
  (JSON.parse(readFileSync(new URL(`../../node_modules/${name}/package.json`, import.meta.url), 'utf8')) as { version: string }).version;

const AI_SDK_6: AiSdkKit = {
  label: `AI SDK 6 (ai ${version('ai')}, @ai-sdk/provider ${version('@ai-sdk/provider')})`,
  major: 6,
  specificationVersion: 'v3',
  streamText,
  generateText,
  jsonSchema,
  tool,
  stepCountIs,
  wrapLanguageModel,
  MockLanguageModel: MockLanguageModelV3,
  simulateReadableStream,
  APICallError,
  createOpenAICompatible,
  createOpenAI,
  createAnthropic,
  createGoogleGenerativeAI,
};

const OPENAI_6: OpenAIKit = { label: `openai ${version('openai')}`, major: 6, OpenAI };

const next = await nextMajors();

/** Why the 7.x kits are missing from the lists on this machine, or `undefined` when they are in. */
export const skippedMajors: string | undefined = next.ok ? undefined : next.reason;

/** The AI SDK kits this machine runs: 6, and 7 on Node ≥ 22. */
export const AI_SDK_KITS: readonly AiSdkKit[] = next.ok
  ? [
      AI_SDK_6,
      {
        label: `AI SDK 7 (ai ${next.majors.versions['ai']}, @ai-sdk/provider ${next.majors.versions['@ai-sdk/provider']})`,
        major: 7,
        specificationVersion: 'v4',
        streamText: next.majors.ai.streamText,
        generateText: next.majors.ai.generateText,
        jsonSchema: next.majors.ai.jsonSchema,
        tool: next.majors.ai.tool,
        stepCountIs: next.majors.ai.stepCountIs,
        wrapLanguageModel: next.majors.ai.wrapLanguageModel,
        MockLanguageModel: (next.majors.aiTest as unknown as { MockLanguageModelV4: typeof MockLanguageModelV3 }).MockLanguageModelV4,
        simulateReadableStream: next.majors.aiTest.simulateReadableStream,
        APICallError: next.majors.provider.APICallError,
        createOpenAICompatible: next.majors.openaiCompatible.createOpenAICompatible,
        createOpenAI: next.majors.aiOpenAI.createOpenAI,
        createAnthropic: next.majors.aiAnthropic.createAnthropic,
        createGoogleGenerativeAI: next.majors.aiGoogle.createGoogleGenerativeAI,
      },
    ]
  : [AI_SDK_6];

/** The openai SDK kits this machine runs: 6, and 7 on Node ≥ 22. */
export const OPENAI_KITS: readonly OpenAIKit[] = next.ok
  ? [OPENAI_6, { label: `openai ${next.majors.versions['openai']}`, major: 7, OpenAI: next.majors.OpenAI }]
  : [OPENAI_6];

/**
 * In a describe of a spec that runs per kit: one skipped case naming the 7.x lines and why they
 * don't run here (nothing when they do), so a run on Node 20 reports them as skipped, not as absent.
 */
export function reportSkippedMajors(what: string): void {
  if (skippedMajors === undefined) return;
  it(`${what} on the 7.x lines`, function () {
    this.skip();
  });
}
