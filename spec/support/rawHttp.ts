/**
 * One HTTP request on 127.0.0.1 with exactly the headers given — `Host` included, which `fetch`
 * won't let a spec set — for the specs of our local servers' Host / Origin guards. The whole
 * response is read, except an event stream or a body past 64 KiB: then the connection is dropped
 * after the first chunk that shows it.
 */
import { request, type IncomingHttpHeaders } from 'node:http';

export interface RawResponse {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  readonly text: string;
}

export function rawRequest(port: number, init: { method: string; path: string; headers?: Record<string, string>; body?: unknown }): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const body = init.body === undefined ? undefined : typeof init.body === 'string' ? init.body : JSON.stringify(init.body);
    const headers = { host: `127.0.0.1:${port}`, ...init.headers, ...(body === undefined ? {} : { 'content-length': String(Buffer.byteLength(body)) }) };
    const req = request({ host: '127.0.0.1', port, method: init.method, path: init.path, headers }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        text += chunk;
        if (text.length > 65536 || (res.headers['content-type'] ?? '').startsWith('text/event-stream')) req.destroy();
      });
      const done = (): void => resolve({ status: res.statusCode ?? 0, headers: res.headers, text });
      res.on('end', done);
      res.on('close', done);
    });
    req.on('error', reject);
    req.end(body);
  });
}
