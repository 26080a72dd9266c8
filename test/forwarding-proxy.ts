// The reverse proxy a user puts in front of the inbox, for tests of pages served through one: it
// keeps the browser's Host (so the page's Origin is the proxy's, which the inbox must allow),
// forwards everything it does not serve itself, and streams answers through unbuffered (the
// pages' event streams are server-sent events). A test may serve some requests itself (a page of
// its own) and rewrite the headers it forwards (a sign-in proxy's user and shared secret).
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ForwardingProxy {
  url: string;
  port: number;
  /** Where requests go; set once the inbox listens (it must allow the proxy's Host first). */
  target?: URL;
  close(): Promise<void>;
}

export interface ForwardingOptions {
  /** Answers a request itself and says so (true), or leaves it to be forwarded (false). */
  serve?(req: http.IncomingMessage, res: http.ServerResponse): boolean;
  /** The headers forwarded, from the browser's (as they came, when left out). */
  headers?(incoming: http.IncomingHttpHeaders): http.OutgoingHttpHeaders;
}

export async function startForwardingProxy(options: ForwardingOptions = {}): Promise<ForwardingProxy> {
  const self: ForwardingProxy = { url: '', port: 0, close: async () => undefined };
  const server = http.createServer((req, res) => {
    if (options.serve?.(req, res)) return;
    const target = self.target;
    if (!target) {
      res.writeHead(503).end('the inbox behind this proxy is not up yet');
      return;
    }
    const headers = options.headers ? options.headers(req.headers) : req.headers;
    const upstream = http.request(
      { host: target.hostname, port: target.port, method: req.method, path: req.url, headers },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        res.flushHeaders();
        answer.pipe(res);
      },
    );
    upstream.on('error', (err) => {
      if (!res.headersSent) res.writeHead(502).end(`the inbox did not answer the proxy: ${err.message}`);
      else res.destroy();
    });
    // The browser went away (a page closed, an event stream dropped): so does the upstream request.
    res.on('close', () => upstream.destroy());
    req.pipe(upstream);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  self.port = (server.address() as AddressInfo).port;
  self.url = `http://127.0.0.1:${self.port}/`;
  self.close = async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  };
  return self;
}
