/**
 * The local provider's HTTP plumbing, shared by its admin routes and its model endpoints: a JSON
 * response, a request's JSON body read within a size limit (413 past it, 400 when it is not
 * JSON), and an id in a path decoded. Node only.
 *
 * @module
 */
// Node-only module: the library's build has no ambient Node types (its other modules are browser-safe)
/// <reference types="node" />
import type { IncomingMessage, ServerResponse } from 'node:http';
import { BadRequest } from './protocols.js';

/** Sends `body` as JSON with `status` (and `headers`). */
export function json(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(text), ...headers });
  res.end(text);
}

/** A request's body, at most `maxBodyBytes` (a larger one is a 413 `BadRequest`, by its `content-length` or as it arrives). */
function readBody(req: IncomingMessage, maxBodyBytes: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const declared = Number(req.headers['content-length']);
    if (Number.isFinite(declared) && declared > maxBodyBytes) {
      reject(new BadRequest(`request body too large: ${declared} bytes, the limit is ${maxBodyBytes} (maxBodyBytes)`, 413));
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > maxBodyBytes) {
        reject(new BadRequest(`request body too large: the limit is ${maxBodyBytes} bytes (maxBodyBytes)`, 413));
        req.destroy();
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

/** A request's JSON body (`undefined` for an empty one) and its size in bytes; a `BadRequest` when it is not JSON or too large. */
export async function readJson(req: IncomingMessage, maxBodyBytes: number): Promise<{ value: unknown; bytes: number }> {
  const raw = await readBody(req, maxBodyBytes);
  const text = raw.toString('utf8');
  if (text.trim() === '') return { value: undefined, bytes: raw.length };
  try {
    return { value: JSON.parse(text) as unknown, bytes: raw.length };
  } catch {
    throw new BadRequest('the body is not valid JSON');
  }
}

/**
 * A path segment (an id in `/v1/responses/{id}`, `/admin/faults/{id}`) percent-decoded, or
 * `undefined` when it is not valid percent-encoding (`%E0`: no UTF-8 character), which
 * `decodeURIComponent` throws on: the route answers 400 then.
 *
 * @example
 * ```ts
 * pathSegment('resp%5F1'); // 'resp_1'
 * pathSegment('%E0'); // undefined
 * ```
 */
export function pathSegment(segment: string): string | undefined {
  try {
    return decodeURIComponent(segment);
  } catch {
    return undefined;
  }
}

/**
 * Why a path segment that {@link pathSegment} refused is not an id, for a 400: `what` names the id.
 *
 * @example
 * ```ts
 * badSegment("Invalid 'response_id'", '%E0'); // "Invalid 'response_id': '%E0' is not a valid percent-encoded id."
 * ```
 */
export function badSegment(what: string, segment: string): string {
  return `${what}: '${segment}' is not a valid percent-encoded id.`;
}
