/**
 * What the demo's two tools answer, in one place: the MCP server's (examples/demo/mcpTools.ts) and
 * the in-process stand-ins a downloaded replay runs with (examples/demo/replay.ts).
 */

/** How long the knowledge search takes: 300 ms, or 6 s when slow (past the agent's 3 s deadline). */
export const SEARCH_MS = { normal: 300, slow: 6_000 } as const;

/**
 * `get_weather`'s answer.
 *
 * @example
 * ```ts
 * weatherIn('Paris', 'celsius'); // { city: 'Paris', temperature: 22, units: 'celsius', condition: 'sunny' }
 * ```
 */
export function weatherIn(city: string, units: 'celsius' | 'fahrenheit'): { city: string; temperature: number; units: string; condition: string } {
  return { city, temperature: units === 'celsius' ? 22 : 72, units, condition: 'sunny' };
}

/**
 * `knowledge_search`'s answer.
 *
 * @example
 * ```ts
 * articleFor('refund policy'); // 'Article "refund policy": refunds are accepted within 30 days with the receipt.'
 * ```
 */
export function articleFor(query: string): string {
  return `Article "${query}": refunds are accepted within 30 days with the receipt.`;
}
