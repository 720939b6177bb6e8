// The agent frameworks, resolved from this folder's own node_modules (installed with the 7.x
// lines by spec/support/nextMajors.ts, on Node >= 22): loaded apart from load.mjs, so only the
// agent specs pay for loading them (@mastra/core is large).
import { setTracingDisabled } from '@openai/agents';

// no trace export: it would want an OpenAI key and the network (the specs run on loopback only)
setTracingDisabled(true);

export { Agent as OpenAIAgent, run, tool } from '@openai/agents';
export { aisdk } from '@openai/agents-extensions/ai-sdk';
export { Agent as MastraAgent } from '@mastra/core/agent';
export { createTool } from '@mastra/core/tools';
export { noopLogger } from '@mastra/core/logger';
export { z } from 'zod';
