/**
 * {@link watchMcpTools}: an MCP server's tools as `fromMcp` makes them, again each time the
 * server says its list changed — on either SDK major and either revision of the spec.
 *
 * @module
 */
import { Observable } from 'rxjs';
import { InvalidOptionError } from '../core/errors/errors.js';
import type { Tool } from '../sources/tool.js';
import type { McpAnyClient } from './clients.js';
import { toolset, type FromMcpOptions } from './fromMcp.js';

/**
 * `fromMcp`'s tools, then the tools again each time the server says its list changed
 * (`notifications/tools/list_changed`): hand the latest to the next `runAgent`. All the lists
 * share one breaker and one reconnection. Subscribing sets the client's handler for that
 * notification (the SDK keeps one per method) and unsubscribing removes it; on a 2026-07-28
 * connection, where a server sends changes only on a subscription the client opens, it also opens
 * one (`subscriptions/listen`) and closes it. Errors when a listing fails.
 *
 * @example
 * ```ts
 * let tools: Tool[] = [];
 * watchMcpTools(client, { id: 'kb' }).subscribe((latest) => (tools = latest));
 * // each user message: runAgent({ model, tools, messages })
 * ```
 * @throws {InvalidOptionError} at once, for a client that is not an MCP `Client` of either major or an invalid option.
 */
export function watchMcpTools(client: McpWatchableClient, options?: FromMcpOptions): Observable<Tool<Record<string, unknown>, unknown>[]> {
  if (typeof client?.setNotificationHandler !== 'function' || typeof client?.removeNotificationHandler !== 'function') {
    throw new InvalidOptionError('watchMcpTools', 'client', client, 'an MCP Client of either SDK major (with setNotificationHandler)');
  }
  const tools = toolset('watchMcpTools', client, options);
  return new Observable<Tool<Record<string, unknown>, unknown>[]>((subscriber) => {
    // an older listing that answers late is dropped (undefined): the newest list wins
    const refresh = (): void => {
      tools.list().then(
        (list) => {
          if (list !== undefined) subscriber.next(list);
        },
        (error: unknown) => subscriber.error(error),
      );
    };
    let active = true;
    let listening: McpListening | undefined;
    // 1.x keys a handler by the notification's schema, 2.x by its method
    const key =
      tools.major === 1
        ? import('@modelcontextprotocol/sdk/types.js').then(({ ToolListChangedNotificationSchema }) => ToolListChangedNotificationSchema as unknown)
        : Promise.resolve<unknown>(TOOLS_CHANGED);
    key
      .then(async (schemaOrMethod) => {
        if (!active) return;
        client.setNotificationHandler(schemaOrMethod as never, (() => refresh()) as never);
        if (tools.stateless() && typeof client.listen === 'function') {
          const opened = await client.listen({ toolsListChanged: true });
          if (active) listening = opened;
          else await opened.close();
        }
        if (active) refresh();
      })
      .catch((error: unknown) => subscriber.error(error));
    return () => {
      active = false;
      client.removeNotificationHandler(TOOLS_CHANGED);
      listening?.close().catch(() => undefined);
    };
  });
}

const TOOLS_CHANGED = 'notifications/tools/list_changed';

/**
 * An open `subscriptions/listen` of a 2.x client (what `listen` resolves to; closed when the watch ends).
 *
 * @example
 * ```ts
 * const listening: McpListening = await client.listen({ toolsListChanged: true });
 * await listening.close();
 * ```
 */
export interface McpListening {
  close(): Promise<void>;
}

/**
 * A client {@link watchMcpTools} can follow: a client of either major with the SDK's
 * notification handlers (and, 2.x, `listen`).
 *
 * @example
 * ```ts
 * const client: McpWatchableClient = new Client({ name: 'my-agent', version: '1.0.0' });
 * ```
 */
export type McpWatchableClient = McpAnyClient & {
  /** Sets the one handler of a notification (1.x: by its schema; 2.x: by its method). */
  setNotificationHandler(schemaOrMethod: never, handler: never): void;
  /** Removes the handler of a notification method. */
  removeNotificationHandler(method: string): void;
  /** 2.x: opens a `subscriptions/listen` stream (2026-07-28). */
  listen?(filter: { toolsListChanged?: boolean }): Promise<McpListening>;
};
