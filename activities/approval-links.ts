// One-time approval links: a URL that opens the inbox's confirm page for exactly one approval. The
// token is signed (HMAC-SHA256 with a key the workers, which mint links for notices, and the
// inbox, which checks them, share) over the approval id, its batch, the argument digest, an expiry
// and a random link id. A leaked link therefore decides nothing else and nothing after its time;
// the batch itself records the link id when it takes the decision, so it is used once, restarts
// included. Opening the link only shows the card: a click on the page decides (link previews and
// scanners fetch URLs).
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { ApprovalLinkSettings } from '../define/config';

/** What a link is for: what the token carries, signed. */
interface ApprovalLinkClaims {
  approvalId: string;
  workflowId: string;
  argsDigest: string;
  /** Epoch milliseconds after which the link is refused. */
  expiresAt: number;
  /** The link's own id: the batch records it when the link decides, and refuses it afterwards. */
  linkId: string;
}

const MIN_LINK_KEY_CHARS = 32;

export function linkKeyProblem(key: string | undefined): string | undefined {
  if (!key) return 'approval links need a key: set SLUICE_LINK_KEY (the same on workers and the inbox)';
  if (key.length < MIN_LINK_KEY_CHARS)
    return `the approval link key must be at least ${MIN_LINK_KEY_CHARS} characters (openssl rand -base64 32)`;
  return undefined;
}

const b64 = (b: Buffer | string) => Buffer.from(b).toString('base64url');

function sign(key: string, body: string): string {
  return b64(createHmac('sha256', key).update(`sluice-approval-link:v1:${body}`).digest());
}

export function mintLinkToken(key: string, claims: Omit<ApprovalLinkClaims, 'linkId'>): string {
  const body = b64(
    JSON.stringify({
      a: claims.approvalId,
      w: claims.workflowId,
      d: claims.argsDigest,
      e: claims.expiresAt,
      n: b64(randomBytes(16)),
    }),
  );
  return `v1.${body}.${sign(key, body)}`;
}

/** The link for a notice, or undefined when links are off or the key is unusable. */
export function approvalLink(
  settings: ApprovalLinkSettings | undefined,
  n: { approvalId: string; workflowId: string; argsDigest: string; expiresAt: string },
  now = Date.now(),
): string | undefined {
  const key = settings?.key ?? process.env.SLUICE_LINK_KEY;
  if (!settings?.baseUrl || linkKeyProblem(key)) return undefined;
  const askExpires = Date.parse(n.expiresAt);
  const expiresAt = Math.min(Number.isFinite(askExpires) ? askExpires : now, now + (settings.ttlMs ?? Infinity));
  const token = mintLinkToken(key!, { ...n, expiresAt });
  return `${settings.baseUrl.replace(/\/+$/, '')}/link/${token}`;
}

type LinkCheck = { ok: true; claims: ApprovalLinkClaims } | { ok: false; code: 'link-forged'; message: string };

/**
 * Checks a token's signature and shape (not its expiry: the caller says when it is too late, so the
 * batch can record that). A token this key did not sign, or that was altered, is `link-forged`.
 */
export function readLinkToken(key: string, token: string): LinkCheck {
  const forged = (why: string): LinkCheck => ({
    ok: false,
    code: 'link-forged',
    message: `this approval link is not valid (${why}): it was not made by Sluice with this inbox's key, or it was altered; nothing was decided. Ask for a new link, or decide in the inbox`,
  });
  const parts = typeof token === 'string' ? token.split('.') : [];
  if (parts.length !== 3 || parts[0] !== 'v1' || token.length > 2000) return forged('malformed');
  const [, body, sig] = parts;
  const want = Buffer.from(sign(key, body));
  const got = Buffer.from(sig);
  if (want.length !== got.length || !timingSafeEqual(want, got)) return forged('bad signature');
  let c: { a?: unknown; w?: unknown; d?: unknown; e?: unknown; n?: unknown };
  try {
    c = JSON.parse(Buffer.from(body, 'base64url').toString('utf8'));
  } catch {
    return forged('unreadable');
  }
  if (
    typeof c.a !== 'string' ||
    typeof c.w !== 'string' ||
    typeof c.d !== 'string' ||
    typeof c.e !== 'number' ||
    typeof c.n !== 'string'
  )
    return forged('incomplete');
  return { ok: true, claims: { approvalId: c.a, workflowId: c.w, argsDigest: c.d, expiresAt: c.e, linkId: c.n } };
}
