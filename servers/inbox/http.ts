// The inbox's small HTTP vocabulary, shared by its routes: JSON answers, request bodies, the
// headers every page carries, and the cross-site check every state-changing request passes.
import * as fs from 'node:fs';
import type * as http from 'node:http';
import { isIP } from 'node:net';
import * as path from 'node:path';

const MAX_BODY = 64 * 1024;

export const SECURITY_HEADERS = {
  'content-security-policy':
    "default-src 'self'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src 'self' data:",
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
};

/** A decision must come from this page: JSON (no plain form post) and, when named, our own origin. */
export function crossSiteProblem(req: http.IncomingMessage): string | undefined {
  if (!(req.headers['content-type'] ?? '').startsWith('application/json'))
    return 'decisions are JSON requests from the inbox page';
  const origin = req.headers.origin;
  if (origin && origin !== 'null') {
    let host: string;
    try {
      host = new URL(origin).host;
    } catch {
      return 'unreadable Origin header';
    }
    if (host !== req.headers.host) return `a page at ${origin} may not decide through this inbox`;
  }
  return undefined;
}

/** The peer's address, IPv4 without the IPv6-mapped prefix. */
export function plainAddress(a: string | undefined): string {
  if (!a) return 'an unknown address';
  return a.startsWith('::ffff:') && isIP(a.slice(7)) === 4 ? a.slice(7) : a;
}

export function headerValue(req: http.IncomingMessage, name: string): string | undefined {
  const v = req.headers[name];
  const s = (Array.isArray(v) ? v[0] : v)?.trim();
  return s ? s.slice(0, 200) : undefined;
}

export function send(res: http.ServerResponse, status: number, body: unknown): void {
  if (res.headersSent) return void res.end();
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'cache-control': 'no-store',
    'x-content-type-options': 'nosniff',
  });
  res.end(JSON.stringify(body));
}

/** The request's JSON body (as parsed, whatever it holds), or undefined after answering 400 when it is not JSON. */
export async function jsonBody(
  req: http.IncomingMessage,
  res: http.ServerResponse,
): Promise<Record<string, unknown> | undefined> {
  try {
    return JSON.parse(await readBody(req));
  } catch (err) {
    send(res, 400, {
      status: 'invalid',
      message: `the request body must be JSON (${(err as Error).message})`,
    });
    return undefined;
  }
}

function readBody(req: http.IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    let size = 0;
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > MAX_BODY) {
        reject(new Error('the request body is too large'));
        req.destroy();
      } else chunks.push(c);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

/** Where a page takes the approval cards shared by the inbox and the session page (cards.html). */
const CARDS_MARK = '<!--sluice:cards-->';

/**
 * An HTML page of the inbox read from its file, with cards.html in place of its cards marker: one
 * copy of the cards' code and rules for every page that shows them. Inlined, not a script of its
 * own, so the pages' content security policy stays as it is (inline scripts only, nothing fetched).
 */
export function readPage(file: string): string {
  const html = fs.readFileSync(file, 'utf8');
  // A function, so the `$` in the cards' script is not read as a replacement pattern.
  return html.replace(CARDS_MARK, () => fs.readFileSync(path.join(path.dirname(file), 'cards.html'), 'utf8'));
}

/** An HTML page of the inbox, with the headers every page carries. */
export function sendPage(res: http.ServerResponse, html: Buffer | string): void {
  res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store', ...SECURITY_HEADERS });
  res.end(html);
}
