/**
 * The one rule every local server of ours applies (the local provider, the demo's page server):
 * a request is served only if its `Host` names this server on the loopback interface (DNS
 * rebinding: a page at `evil.example` rebound to 127.0.0.1 still sends `Host: evil.example`) and,
 * when a browser says where it comes from (`Origin`, `Sec-Fetch-Site`), only from an allowed
 * origin or from this server's own origin. Node only; no I/O.
 *
 * @module
 */
// Node-only module: the library's build has no ambient Node types (its other modules are browser-safe)
/// <reference types="node" />
import type { IncomingHttpHeaders } from 'node:http';
import { InvalidOptionError } from '../core/errors/errors.js';

/**
 * Who may call a local server.
 *
 * @example
 * ```ts
 * const guard = requestGuard({ port: 5173, origins: ['http://127.0.0.1:5173'] });
 * guard.refusal({ host: '127.0.0.1:5173', origin: 'https://evil.example' }); // "Origin https://evil.example is not allowed…"
 * ```
 */
export interface RequestGuard {
  /** Accepted `Host` values, normalised (`host:port`, lower case). */
  readonly hosts: ReadonlySet<string>;
  /** Allowed browser origins, normalised (`scheme://host:port` as `URL.origin` gives it). */
  readonly origins: ReadonlySet<string>;
  /**
   * Why a request with these headers must be refused, or `undefined` when it may be served.
   * `requireOrigin`: the request must come from a browser page of an allowed origin or of this
   * server's own origin (a request without `Origin` is refused) — for routes that carry a key.
   */
  refusal(headers: IncomingHttpHeaders, options?: { readonly requireOrigin?: boolean }): string | undefined;
  /** The request's `Origin` when it is one this guard allows (to echo in CORS headers), else `undefined`. */
  allowedOrigin(headers: IncomingHttpHeaders): string | undefined;
}

/**
 * Options of {@link requestGuard}.
 *
 * @example
 * ```ts
 * const options: RequestGuardOptions = { port: 8080, origins: ['http://localhost:5173'], hosts: ['dev.box:8080'] };
 * ```
 */
export interface RequestGuardOptions {
  /** The port the server listens on: `127.0.0.1:<port>`, `localhost:<port>` and `[::1]:<port>` are accepted hosts. */
  readonly port: number;
  /** The address it is bound to, when not a loopback one: `<bound>:<port>` is accepted too. */
  readonly bound?: string;
  /** More accepted `Host` values (`name:port`). */
  readonly hosts?: readonly string[];
  /** Allowed browser origins, besides the server's own. */
  readonly origins?: readonly string[];
  /** What to call the option holding the origins in error messages. Defaults to `'allowedOrigins'`. */
  readonly originsOption?: string;
  /** What to call the option holding extra hosts in error messages. Defaults to `'allowedHosts'`. */
  readonly hostsOption?: string;
}

const LOOPBACK_NAMES = ['127.0.0.1', 'localhost', '[::1]'];

/**
 * `Host` lower-cased with its port made explicit.
 *
 * @example
 * ```ts
 * normaliseHost('LocalHost'); // 'localhost:80'
 * normaliseHost('[::1]:5173'); // '[::1]:5173'
 * ```
 */
export function normaliseHost(host: string): string {
  const h = host.trim().toLowerCase();
  const hasPort = h.startsWith('[') ? h.includes(']:') : h.includes(':');
  return hasPort ? h : `${h}:80`;
}

/**
 * An origin as browsers send it (`http://127.0.0.1:5173`), checked and normalised; throws
 * {@link InvalidOptionError} naming `option` for anything else (a path, a wildcard, `null`).
 *
 * @example
 * ```ts
 * parseOrigin('startLocalProvider', 'allowedOrigins', 'http://LOCALHOST:5173'); // 'http://localhost:5173'
 * ```
 */
export function parseOrigin(target: string, option: string, value: unknown): string {
  const expected = "an origin such as 'http://127.0.0.1:5173' (scheme, host and port; no path, no wildcard)";
  if (typeof value !== 'string') throw new InvalidOptionError(target, option, value, expected);
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new InvalidOptionError(target, option, value, expected);
  }
  const bare = value.endsWith('/') ? value.slice(0, -1) : value;
  if ((url.protocol !== 'http:' && url.protocol !== 'https:') || url.origin.toLowerCase() !== bare.toLowerCase()) {
    throw new InvalidOptionError(target, option, value, expected);
  }
  return url.origin;
}

/**
 * Builds the guard of a server listening on `port` (see {@link RequestGuard}). The rule:
 * - `Host` must be `127.0.0.1:<port>`, `localhost:<port>`, `[::1]:<port>`, the bound address, or
 *   one of `hosts`; anything else (or none) is refused — the DNS-rebinding guard;
 * - an `Origin` must be one of `origins` or the server's own (`http://<Host>`); `Origin: null`
 *   is refused;
 * - a request without `Origin` passes (Node, curl, SDKs: not a web page), unless the browser says
 *   it is cross-site or same-site (`Sec-Fetch-Site`), or `requireOrigin` is set.
 *
 * @example
 * ```ts
 * const guard = requestGuard({ port: 4000, origins: ['http://127.0.0.1:5173'] });
 * guard.refusal({ host: '127.0.0.1:4000' });                                      // undefined: curl
 * guard.refusal({ host: '127.0.0.1:4000', origin: 'http://127.0.0.1:5173' });     // undefined: the page
 * guard.refusal({ host: 'evil.example:4000' });                                   // 'Host evil.example:4000 is not allowed…'
 * ```
 */
export function requestGuard(options: RequestGuardOptions): RequestGuard {
  const { port, originsOption = 'allowedOrigins', hostsOption = 'allowedHosts' } = options;
  const hosts = new Set(LOOPBACK_NAMES.map((name) => `${name}:${port}`));
  if (options.bound !== undefined && options.bound !== '') {
    const bound = options.bound.includes(':') && !options.bound.startsWith('[') ? `[${options.bound}]` : options.bound;
    hosts.add(normaliseHost(`${bound}:${port}`));
  }
  for (const host of options.hosts ?? []) hosts.add(normaliseHost(host));
  const origins = new Set((options.origins ?? []).map((o) => parseOrigin('requestGuard', originsOption, o)));

  const header = (headers: IncomingHttpHeaders, name: string): string | undefined => {
    const value = headers[name];
    return typeof value === 'string' ? value : undefined;
  };
  const hostOf = (headers: IncomingHttpHeaders): string | undefined => {
    const host = header(headers, 'host');
    return host === undefined ? undefined : normaliseHost(host);
  };
  const allowedOrigin = (headers: IncomingHttpHeaders): string | undefined => {
    const origin = header(headers, 'origin')?.toLowerCase();
    const host = hostOf(headers);
    if (origin === undefined || origin === 'null' || host === undefined || !hosts.has(host)) return undefined;
    if (origins.has(origin)) return origin;
    // the server's own origin (a page it served, or the user typing its URL)
    const own = host.endsWith(':80') ? [`http://${host}`, `http://${host.slice(0, -3)}`] : [`http://${host}`];
    return own.includes(origin) ? origin : undefined;
  };

  return {
    hosts,
    origins,
    allowedOrigin,
    refusal(headers, { requireOrigin = false } = {}) {
      const host = hostOf(headers);
      if (host === undefined || !hosts.has(host)) {
        return (
          `Host ${host === undefined ? '(none)' : JSON.stringify(header(headers, 'host'))} is not allowed: this ` +
          `server answers only to ${[...hosts].join(', ')} (DNS-rebinding guard; add it to ${hostsOption})`
        );
      }
      const origin = header(headers, 'origin');
      if (origin !== undefined) {
        return allowedOrigin(headers) === undefined ? `Origin ${JSON.stringify(origin)} is not allowed (add it to ${originsOption})` : undefined;
      }
      const site = header(headers, 'sec-fetch-site');
      if (site === 'cross-site' || site === 'same-site') return `a ${site} request without an Origin is not allowed`;
      if (requireOrigin) return 'a request without an Origin is not allowed here: only the page served by this server may call it';
      return undefined;
    },
  };
}
