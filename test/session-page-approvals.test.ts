// The session page's approval cards are the inbox's own (servers/inbox/cards.html), in a real
// headless Chromium against the real dev server: the same buttons where the inbox offers them
// (Allow for this session, Reassign), verified approvers when the inbox requires them (a typed
// name is refused, a signed-in subject decides), a session grant that lets the next call of the
// session run without asking; and a page opened while no worker runs the session says so, queues
// what the person sends, and shows the answer once a worker starts.
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { defineConfig } from '../define/config';
import { poll } from './eventually';
import sessionConfig from './fixtures/session.config';
import { useSessionPage } from './session-page-setup';

let signingKey: CryptoKey;

// Conditions, not times: generous bounds for a machine at load 16.
const eventually = <T>(fn: () => Promise<T> | T) => poll(fn, { timeoutMs: 90_000, intervalMs: 250 });

const fx = useSessionPage('session-page-approvals', async () => {
  const signing = await generateKeyPair('ES256', { extractable: true });
  signingKey = signing.privateKey;
  const seal = await generateKeyPair('ECDH-ES', { crv: 'P-256', extractable: true });
  const publicJwk = { ...(await exportJWK(signing.publicKey)), kid: 'page-idp', alg: 'ES256' };
  return {
    // The session fixture's tools and scripted model, with verified approvers: every ask needs a
    // signed-in approver. The worker starts in the first test, after the page has seen none.
    config: defineConfig({
      ...sessionConfig,
      approvers: {
        require: true,
        sealKey: (await exportJWK(seal.privateKey)) as Record<string, unknown>,
        jwks: { keys: [publicJwk as Record<string, unknown>] },
        issuer: 'https://idp.test',
        audience: 'sluice',
      },
    }),
    harness: { autoStart: false },
    inbox: { identityTokenHeader: 'Authorization', sealKey: await exportJWK(seal.publicKey) },
  };
});
const start = () => fx.start();
const open = (s: Parameters<typeof fx.open>[0], name: string) => fx.open(s, name);

function token(sub: string) {
  return new SignJWT({ groups: [] })
    .setProtectedHeader({ alg: 'ES256', kid: 'page-idp' })
    .setSubject(sub)
    .setIssuer('https://idp.test')
    .setAudience('sluice')
    .setIssuedAt()
    .setExpirationTime('10m')
    .sign(signingKey);
}

/** The worker the first test starts once the page has seen none (for a test run on its own too). */
async function workerUp(): Promise<void> {
  if (!fx.h.worker) await fx.h.startWorker();
}

async function send(page: Page, text: string): Promise<void> {
  await page.fill('#message', text);
  await page.click('#send');
  await eventually(() => page.locator('#message').inputValue()).toBe('');
}

describe('the session page with no worker', () => {
  it('says no worker runs the session, queues the message, and shows the answer once a worker starts', async () => {
    const s = await start();
    const page = await open(s, 'alice');
    // The state query finds no worker (it waits up to its deadline): the page says so.
    await page.locator('#no-worker').waitFor({ state: 'visible', timeout: 90_000 });
    expect(await page.locator('#no-worker').textContent()).toContain('No worker is running this session');
    await send(page, 'hello');
    expect(await page.locator('#sent').textContent()).toBe(
      'Queued: no worker runs this session now; it answers when one starts.',
    );
    // Nothing answers while no worker runs: the message waits in the session's queue.
    expect(await page.locator('.msg.model').count()).toBe(0);

    await fx.h.startWorker();
    await eventually(() => page.locator('.msg.model[data-turn="1"][data-step="1"] .text').textContent()).toBe(
      'echo hello',
    );
    expect(await page.locator('.msg.user').allTextContents()).toEqual(['you · turn 1hello']);
    await eventually(() => page.locator('.turn-end').allTextContents()).toEqual(['turn 1 ended: done']);
    // The answer came: the "Queued: no worker" note has said all it had to.
    expect(await page.locator('#sent').textContent()).toBe('');
    await page.locator('#no-worker').waitFor({ state: 'hidden', timeout: 90_000 });
    await page.close();
  }, 240_000);
});

describe("the session page's approval cards", () => {
  it('are the inbox cards: a typed name is refused where approvers are verified, Reassign moves the ask, and a signed-in "Allow for this session" lets the next call run unasked', async () => {
    await workerUp();
    const s = await start();
    const page = await open(s, 'mallory');
    await send(page, 'publish');
    const call = page.locator('article.call[data-turn="1"][data-call-id="p"]');
    const ask = call.locator('.ask');
    await ask.locator('button.approve').waitFor({ timeout: 90_000 });
    // The inbox's buttons and notes, on the digest of the call pending.
    const pending = await s.pendingApprovals();
    expect(await ask.getAttribute('data-digest')).toBe(pending[0].argsDigest);
    expect(await ask.locator('.digest-value').textContent()).toBe(pending[0].argsDigest);
    expect(await ask.locator('button').allTextContents()).toEqual([
      'Approve',
      'Allow for this session',
      'Deny',
      'Reassign',
    ]);
    expect(await ask.locator('.verified-only').textContent()).toContain('Only a verified approver may decide');

    // Reassign: a signal; the card shows the new assignee from the next snapshot.
    await ask.locator('input.reassign-to').fill('bob');
    await ask.locator('button.reassign').click();
    await eventually(() => ask.locator('.status').textContent()).toBe('Reassigned to bob by mallory.');
    await eventually(() => ask.locator('.assignee').textContent()).toBe('Assigned to bob');

    // A typed name where the inbox requires a signed-in approver: refused, and the buttons stay.
    await ask.locator('button.approve').click();
    await eventually(() => ask.locator('.status').textContent()).toMatch(/^Refused: .*typed name is not enough/);
    expect(await ask.locator('button.approve').isEnabled()).toBe(true);
    expect(await call.getAttribute('data-state')).toBe('asked');

    // Signed in (the identity header the inbox reads), allowed for the rest of the session.
    await page.setExtraHTTPHeaders({ authorization: `Bearer ${await token('ada@example.com')}` });
    await ask.locator('button.session').click();
    await eventually(() => call.getAttribute('data-state')).toBe('done');
    expect(await call.locator('.approval').textContent()).toContain('allowed for this session by ada@example.com');
    expect(await call.locator('.result pre').textContent()).toBe('published notes');
    await eventually(() => page.locator('.turn-end').allTextContents()).toEqual(['turn 1 ended: done']);

    // The next turn's publish runs on the grant: nobody decides, and it completes.
    await send(page, 'publish');
    const next = page.locator('article.call[data-turn="2"][data-call-id="p"]');
    await eventually(() => next.getAttribute('data-state')).toBe('done');
    expect(await next.locator('.result pre').textContent()).toBe('published notes');
    expect(await next.locator('.ask').count()).toBe(0);
    // One person's decision in the log: the grant, given by the verified subject.
    const decided = (await fx.stores.events(s.sessionId)).filter((e) => e.type === 'approval/decided');
    expect(decided.map((e) => e.data)).toMatchObject([{ outcome: 'allowed-session', by: 'ada@example.com' }]);
    await page.close();
  }, 240_000);
});

describe('the session page and markup', () => {
  it("shows a person's message and the model's answer that carry HTML as text, never as markup", async () => {
    await workerUp();
    const s = await start();
    const page = await open(s, 'alice');
    const markup = '<img src=x onerror="window.__pwned=1"><b>bold</b><script>window.__pwned=2</script>';
    await send(page, markup);
    const answer = page.locator('.msg.model[data-turn="1"][data-step="1"] .text');
    await eventually(() => answer.textContent()).toBe(`echo ${markup}`);
    expect(await page.locator('.msg.user').allTextContents()).toEqual([`you · turn 1${markup}`]);
    expect(await page.locator('#transcript img, #transcript b, #transcript script').count()).toBe(0);
    expect(await page.evaluate(() => (window as unknown as { __pwned?: number }).__pwned)).toBeUndefined();
    await page.close();
  }, 240_000);
});
