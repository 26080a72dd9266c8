// `sluice gateway` answered from the inbox: the MCP SDK's client calls, through an in-process HTTP
// gateway, the upstream's destructive tool (test/fixtures/gateway.config.ts asks a person for it);
// while the client's call waits, the approval is clicked in the inbox in a real headless Chromium,
// and the client's call returns the upstream's result, the upstream having run it once
// (test/fixtures/gateway/upstream.mjs logs every call it receives).
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { BrowserContext } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startGatewayHttp } from '../servers/gateway';
import type { Inbox } from '../servers/inbox/server';
import { toolSchemas } from '../define/config';
import type { PendingApproval } from '../pipeline/types';
import { loadConfig } from '../worker/load-config';
import { eventually, poll } from './eventually';
import {
  authorized,
  GATEWAY_CONFIG,
  GATEWAY_TOKEN,
  gatewayMarks,
  textOf,
  upstreamCalls as callsIn,
} from './gateway-fixture';
import type { Harness } from './harness';
import { type InboxSetup, startInboxSetup } from './inbox-setup';

// The upstream server and Chromium are real processes: minutes at a load of 16.
vi.setConfig({ testTimeout: 300_000, hookTimeout: 300_000 });

let setup: InboxSetup | undefined;
let h: Harness;
let inbox: Inbox;
let browser: BrowserContext;
let marks: string;
let gateway: { url: string; close(): Promise<void> } | undefined;
let client: Client | undefined;

beforeAll(async () => {
  // The fixture config reads GATEWAY_MARKS when it loads: where the upstream logs its calls.
  marks = gatewayMarks('gateway-inbox');
  const config = await loadConfig(GATEWAY_CONFIG);
  setup = await startInboxSetup('gateway-inbox', config);
  ({ h, inbox, browser } = setup);
  gateway = await startGatewayHttp(
    { tools: toolSchemas(config), sluice: h.client, approvalTimeoutMs: 240_000 },
    { host: '127.0.0.1', port: 0, token: GATEWAY_TOKEN },
  );
  client = new Client({ name: 'gateway-inbox-test', version: '1' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(gateway.url), { requestInit: { headers: authorized } }),
  );
});

afterAll(async () => {
  await client?.close().catch(() => undefined);
  await gateway?.close();
  await setup?.close();
});

const upstreamCalls = () => callsIn(marks);

describe('sluice gateway with the inbox', () => {
  it("an ask is approved in the inbox in Chromium while the client's call waits; the call returns the tool's result, run once", async () => {
    let settled = false;
    const call = client!
      .callTool(
        { name: 'mcp__up__write_note', arguments: { name: 'inbox-note', text: 'approved in the page' } },
        undefined,
        {
          timeout: 290_000,
          resetTimeoutOnProgress: true,
        },
      )
      .finally(() => {
        settled = true;
      });
    // Awaited below; until then a rejection must not count as unhandled.
    call.catch(() => undefined);

    const pending: PendingApproval = await eventually(
      'the pending approval of mcp__up__write_note',
      async () =>
        (await h.client.pendingApprovals()).find(
          (p) => p.toolName === 'mcp__up__write_note' && JSON.stringify(p).includes('inbox-note'),
        ),
      { timeoutMs: 120_000 },
    );

    const page = await browser.newPage();
    await page.goto(inbox.url);
    await page.fill('#approver', 'alice');
    const card = page.locator(`article.card[data-approval-id="${pending.approvalId}"]`);
    await card.waitFor({ timeout: 120_000 });
    // The card is this call's: its arguments' digest and the tool's name.
    expect(await card.getAttribute('data-digest')).toBe(pending.argsDigest);
    expect(await card.getAttribute('data-workflow-id')).toBe(pending.workflowId);
    expect(await card.locator('h3').textContent()).toBe('mcp__up__write_note');
    expect(await card.locator('table.fields').textContent()).toContain('approved in the page');
    // Still waiting: nothing has reached the upstream, and the client has no answer.
    expect(upstreamCalls().some((c) => c.tool === 'write_note')).toBe(false);
    expect(settled).toBe(false);

    await card.locator('button.approve').click();
    await poll(() => card.getAttribute('data-state'), { timeoutMs: 120_000 }).toBe('completed');
    expect(await card.locator('.status').textContent()).toBe('approved by alice');

    const r = (await call) as CallToolResult;
    expect(r.isError, textOf(r)).toBeFalsy();
    expect(textOf(r)).toBe('wrote inbox-note');
    expect(upstreamCalls().filter((c) => c.tool === 'write_note')).toEqual([
      { tool: 'write_note', args: { name: 'inbox-note', text: 'approved in the page' } },
    ]);
    await page.close();
  });
});
