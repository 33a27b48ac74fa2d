/**
 * Serves a Fetch API handler `(Request) => Promise<Response>` over Node's
 * http, the way Next.js, Hono's node-server and the like do: the request's
 * body streams in, the Response body streams out chunk by chunk, and the
 * request's `signal` aborts when the client goes away (that is how a
 * disconnecting page reaches the handler's live stream).
 */
import type http from 'node:http';
import { Readable } from 'node:stream';

export function fetchToNode(handler: (request: Request) => Promise<Response>): http.RequestListener {
  return (req, res) => {
    const aborted = new AbortController();
    // 'close' also fires after a normal end; aborting a finished request is harmless.
    res.on('close', () => aborted.abort());
    const headers = new Headers();
    for (let i = 0; i < req.rawHeaders.length; i += 2) headers.append(req.rawHeaders[i]!, req.rawHeaders[i + 1]!);
    const method = req.method ?? 'GET';
    const hasBody = method !== 'GET' && method !== 'HEAD';
    const request = new Request(`http://${req.headers.host ?? '127.0.0.1'}${req.url ?? '/'}`, {
      method,
      headers,
      body: hasBody ? (Readable.toWeb(req) as ReadableStream<Uint8Array>) : null,
      signal: aborted.signal,
      duplex: 'half',
    } as RequestInit);
    void (async () => {
      const response = await handler(request);
      const outgoing: [string, string][] = [];
      response.headers.forEach((value, name) => {
        if (name !== 'set-cookie') outgoing.push([name, value]);
      });
      for (const cookie of response.headers.getSetCookie()) outgoing.push(['set-cookie', cookie]);
      res.writeHead(response.status, outgoing.flat());
      if (response.body) {
        for await (const chunk of response.body) res.write(chunk);
      }
      res.end();
    })().catch(() => res.destroy());
  };
}
