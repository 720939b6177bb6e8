/**
 * The command line of `rxheal-mcp-proxy` (cli.ts), read without the MCP SDK: `--help`,
 * `--version` and a bad command line answer even where the optional peer is not installed.
 *
 * @module
 */

/**
 * Where the upstream is: a command to run (stdio) or a URL (Streamable HTTP).
 *
 * @example
 * ```ts
 * const upstream: Upstream = { command: 'node', args: ['server.js'] };
 * ```
 */
export type Upstream = { readonly command: string; readonly args: readonly string[] } | { readonly url: string };

/**
 * What the proxy is told (cli.ts reads it from the command line).
 *
 * @example
 * ```ts
 * const settings: ProxySettings = { upstream: { url: 'http://127.0.0.1:3000/mcp' }, retries: 2, timeoutMs: 60_000, failureThreshold: 5, resetTimeoutMs: 10_000 };
 * ```
 */
export interface ProxySettings {
  readonly upstream: Upstream;
  /** Retries of a safe tool's failed call. */
  readonly retries: number;
  /** `fromMcp`'s `timeoutMs`. */
  readonly timeoutMs: number;
  /** The upstream's breaker: failures in a row that open it. */
  readonly failureThreshold: number;
  /** The upstream's breaker: how long it stays open before a call may probe the upstream again. */
  readonly resetTimeoutMs: number;
}

/**
 * What a command line asks for: to serve, to print the help or the version, or the reason it is wrong.
 *
 * @example
 * ```ts
 * const command: ProxyCommand = parseArgs(process.argv.slice(2));
 * if ('error' in command) console.error(command.error);
 * ```
 */
export type ProxyCommand = { readonly serve: ProxySettings } | { readonly help: true } | { readonly version: true } | { readonly error: string };

const USAGE = 'usage: rxheal-mcp-proxy [--retries N] [--timeout MS] [--failure-threshold N] [--reset-timeout MS] (--url URL | -- COMMAND [ARGS...])';

/**
 * What `--help` prints: the usage, each option and its default, and a host's configuration.
 *
 * @example
 * ```ts
 * process.stdout.write(PROXY_HELP);
 * ```
 */
export const PROXY_HELP = `${USAGE}

An MCP server on stdio that forwards to an upstream MCP server and heals its tool calls:
arguments checked before the upstream sees them, a breaker, progress-aware timeouts,
reconnection, and retries only for tools whose annotations say they are safe. Prompts,
resources, completions, logging and the upstream's requests to the host (sampling,
elicitation, roots) pass through as they are. Put it in the host's configuration in place
of the server.

  -- COMMAND [ARGS...]     the upstream is this command, on stdio (it gets the proxy's environment)
  --url URL                the upstream is this Streamable HTTP endpoint
  --retries N              retries of a safe tool's failed call (default 2)
  --timeout MS             a call with no result nor progress for MS fails (default 60000)
  --failure-threshold N    failures in a row that open the upstream's breaker (default 5)
  --reset-timeout MS       how long the breaker stays open before a call may probe (default 60000)
  --help, --version

Needs @modelcontextprotocol/sdk 1.x: npm install @modelcontextprotocol/sdk

A host's configuration (e.g. Claude Desktop's claude_desktop_config.json):

  {
    "mcpServers": {
      "weather": {
        "command": "npx",
        "args": ["rxheal-mcp-proxy", "--retries", "2", "--reset-timeout", "10000", "--", "node", "weather-server.js"]
      }
    }
  }
`;

/** Options that take a number, what it must be, and the setting it sets. */
const NUMBERS: ReadonlyMap<string, { readonly key: Exclude<keyof ProxySettings, 'upstream'>; readonly min: number }> = new Map([
  ['--retries', { key: 'retries', min: 0 }],
  ['--timeout', { key: 'timeoutMs', min: 1 }],
  ['--failure-threshold', { key: 'failureThreshold', min: 1 }],
  ['--reset-timeout', { key: 'resetTimeoutMs', min: 0 }],
]);

/**
 * What a command line asks for (the arguments after the program's name).
 *
 * @example
 * ```ts
 * parseArgs(['--retries', '1', '--', 'node', 'server.js']); // { serve: { upstream: { command: 'node', args: ['server.js'] }, retries: 1, … } }
 * parseArgs(['--help']); // { help: true }
 * ```
 */
export function parseArgs(argv: readonly string[]): ProxyCommand {
  const settings: { -readonly [K in Exclude<keyof ProxySettings, 'upstream'>]: number } = {
    retries: 2,
    timeoutMs: 60_000,
    failureThreshold: 5,
    resetTimeoutMs: 60_000,
  };
  let url: string | undefined;
  const wrong = (detail: string): ProxyCommand => ({ error: `${detail}\n${USAGE}\n(rxheal-mcp-proxy --help says more)` });
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === '--help' || arg === '-h') return { help: true };
    if (arg === '--version') return { version: true };
    if (arg === '--') {
      const [command, ...args] = argv.slice(i + 1);
      if (command === undefined) return wrong('no command after --');
      return { serve: { upstream: { command, args }, ...settings } };
    }
    const value = argv[i + 1];
    const number = NUMBERS.get(arg);
    if (number && value !== undefined && /^\d+$/.test(value) && Number(value) >= number.min) settings[number.key] = Number(value);
    else if (arg === '--url' && value !== undefined && URL.canParse(value)) url = value;
    else return wrong(`bad argument ${JSON.stringify(arg)}${value === undefined ? '' : ` ${JSON.stringify(value)}`}`);
    i++;
  }
  return url === undefined ? wrong('no upstream: --url URL or -- COMMAND') : { serve: { upstream: { url }, ...settings } };
}
