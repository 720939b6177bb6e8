// The frameworks' newest majors, resolved from this folder's own node_modules (installed by
// spec/support/nextMajors.ts with `npm ci` on Node >= 22): one module, so a spec anywhere can
// import them by this file's path.
export * as ai from 'ai-7';
export * as aiTest from 'ai-7/test';
export * as provider from '@ai-sdk/provider-4';
export * as openaiCompatible from '@ai-sdk/openai-compatible-3';
export * as aiOpenAI from '@ai-sdk/openai-4';
export * as aiAnthropic from '@ai-sdk/anthropic-4';
export * as aiGoogle from '@ai-sdk/google-4';
export { default as OpenAI } from 'openai-7';
