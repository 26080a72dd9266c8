// One-time approval links on the real dev server: the chat notice carries a signed link to the
// inbox's confirm page; a plain GET shows the card and decides nothing; a click in Chromium
// approves once; a second use (also through a restarted inbox), an expired link, a link for
// another approval and a forged link are refused with a reason, and the batch records each
// refusal it can attribute.
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { mintLinkToken } from '../activities/approval-links';
import { type Inbox, startInbox } from '../servers/inbox/server';
import type { PendingApproval } from '../pipeline/types';
import { defineConfig, defineTool } from '../define/config';
import { launchBrowser } from './chromium';
import { eventually } from './eventually';
import { batch, type Harness, startHarness, text } from './harness';
import { deployTool } from './fixtures/deploy-tool';

const KEY = 'a-link-key-of-at-least-thirty-two-characters';
let h: Harness;
let inbox: Inbox;
let chat: http.Server;
const chatTexts: string[] = [];

async function freePort(): Promise<number> {
  const s = http.createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()));
  const { port } = s.address() as AddressInfo;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

beforeAll(async () => {
  chat = http.createServer((req, res) => {
    let body = '';
    req.on('data', (d) => (body += d));
    req.on('end', () => {
      chatTexts.push(JSON.parse(body).text);
      res.end('ok');
    });
  });
  await new Promise<void>((r) => chat.listen(0, '127.0.0.1', () => r()));
  const port = await freePort();
  h = await startHarness(
    'approval-link',
    defineConfig({
      tools: [
        deployTool(),
        defineTool({
          name: 'hold',
          description: 'waits for its own approval, keeping the batch running',
          input: z.object({}),
          approval: 'ask',
          execute: () => 'held',
        }),
      ],
      notifiers: [{ kind: 'chat', url: `http://127.0.0.1:${(chat.address() as AddressInfo).port}/chat` }],
      approvalLinks: { baseUrl: `http://127.0.0.1:${port}`, key: KEY },
    }),
  );
  inbox = await startInbox({ client: h.client, port, refreshMs: 300, taskQueue: h.taskQueue, linkKey: KEY });
});
afterAll(async () => {
  await inbox?.close();
  await h?.close();
  chat?.close();
});

async function pendingOf(workflowId: string, callId: string): Promise<PendingApproval> {
  return eventually(`${callId} pending in ${workflowId}`, async () =>
    (await h.client.readApprovals(workflowId)).pending.find((x) => x.callId === callId),
  );
}

async function postLink(base: string, body: object) {
  const r = await fetch(new URL('/api/link', base), {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: r.status, body: (await r.json()) as { status: string; code?: string; message: string } };
}

describe('one-time approval links', () => {
  it('a chat notice carries the link; a GET decides nothing; a click approves once; a second use, an expired link, another approval and a forged link are refused', async () => {
    const handle = await h.client.startBatch(
      batch([
        { id: 'd', name: 'deploy', args: { env: 'prod' } },
        { id: 'w', name: 'hold', args: {} },
      ]),
    );
    const p = await pendingOf(handle.workflowId, 'd');
    const hold = await pendingOf(handle.workflowId, 'w');
    const link = await eventually('a chat notice with a link', () => {
      const line = chatTexts.find((t) => t.includes(p.approvalId));
      return line && /Decide: (http:\/\/\S+\/link\/\S+) \(opens a confirm page; one use\)/.exec(line)?.[1];
    });
    expect(link.startsWith(inbox.url.replace(/\/$/, ''))).toBe(true);

    // A link preview or a scanner fetching the URL: the card, and nothing decided.
    const preview = await fetch(link);
    expect(preview.status).toBe(200);
    expect(await preview.text()).toContain(p.argsDigest);
    expect((await h.client.readApprovals(handle.workflowId)).pending.map((x) => x.approvalId)).toContain(p.approvalId);

    const { browser, close } = await launchBrowser();
    try {
      const page = await browser.newPage();
      await page.goto(link);
      await page.fill('#by', 'alice');
      await page.click('button.approve');
      await page.locator('#status[data-status="applied"]').waitFor({ timeout: 30_000 });
      expect(await page.locator('#status').textContent()).toContain('Approved by alice');

      // The same link again, in the page: it says so before anyone clicks.
      await page.goto(link);
      expect(await page.locator('.status').getAttribute('data-code')).toBe('link-used');
    } finally {
      await close();
    }
    const token = link.slice(link.indexOf('/link/') + '/link/'.length);
    // Used again by posting, through another inbox (a restart): the batch remembers the link.
    const second = await startInbox({ client: h.client, port: 0, taskQueue: h.taskQueue, linkKey: KEY });
    try {
      const again = await postLink(second.url, { token, decision: 'approve', by: 'mallory' });
      expect(again.status).toBe(409);
      expect(again.body).toMatchObject({ status: 'link-used' });
      expect(again.body.message).toContain('already used');
    } finally {
      await second.close();
    }

    // A link for `deploy` used to decide `hold`: refused, recorded.
    const fresh = mintLinkToken(KEY, {
      approvalId: p.approvalId,
      workflowId: handle.workflowId,
      argsDigest: p.argsDigest,
      expiresAt: Date.now() + 60_000,
    });
    const cross = await postLink(inbox.url, {
      token: fresh,
      approvalId: hold.approvalId,
      decision: 'approve',
      by: 'bob',
    });
    expect(cross.body).toMatchObject({ status: 'link-mismatch' });
    expect(cross.body.message).toContain(`is for approval ${p.approvalId}, not ${hold.approvalId}`);

    // An expired link for `hold`: the page says so, and a post is refused by the batch.
    const expired = mintLinkToken(KEY, {
      approvalId: hold.approvalId,
      workflowId: handle.workflowId,
      argsDigest: hold.argsDigest,
      expiresAt: Date.now() - 1000,
    });
    expect(await (await fetch(new URL(`/link/${expired}`, inbox.url))).text()).toContain('link-expired');
    const late = await postLink(inbox.url, { token: expired, decision: 'approve', by: 'bob' });
    expect(late.body).toMatchObject({ status: 'link-expired' });

    // Forged: signed with another key, or altered. The inbox refuses it; no batch is touched.
    const other = mintLinkToken('another-key-of-at-least-thirty-two-characters!', {
      approvalId: hold.approvalId,
      workflowId: handle.workflowId,
      argsDigest: hold.argsDigest,
      expiresAt: Date.now() + 60_000,
    });
    for (const bad of [other, `${fresh.slice(0, -2)}xx`]) {
      const forged = await postLink(inbox.url, { token: bad, decision: 'approve', by: 'eve' });
      expect(forged.status).toBe(403);
      expect(forged.body).toMatchObject({ status: 'link-forged' });
      expect(await (await fetch(new URL(`/link/${bad}`, inbox.url))).text()).toContain('link-forged');
    }
    expect((await h.client.readApprovals(handle.workflowId)).pending.map((x) => x.approvalId)).toEqual([
      hold.approvalId,
    ]);

    await h.client.decide({ workflowId: handle.workflowId, approvalId: hold.approvalId, decision: 'deny', by: 'ops' });
    const out = await handle.result();
    expect(text(out.results[0].result)).toBe('deployed prod');
    const decided = out.events.find((e) => e.type === 'approval/decided' && e.data.callId === 'd')!.data;
    expect(decided).toMatchObject({ outcome: 'allowed-once', by: 'alice' });
    expect(typeof decided.link).toBe('string');
    const refused = out.events.filter((e) => e.type === 'approval/refused').map((e) => [e.data.code, e.data.by]);
    expect(refused).toEqual([
      ['link-used', 'mallory'],
      ['link-mismatch', 'bob'],
      ['link-expired', 'bob'],
    ]);
  });
});
