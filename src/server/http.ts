/**
 * The local provider's HTTP plumbing, shared by its admin routes and its model endpoints: a JSON
 * response, and a request's JSON body read within a size limit (413 past it, 400 when it is not
 * JSON). Node only.
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
