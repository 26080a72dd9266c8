// `sluice gateway` over Streamable HTTP across restarts: what a gateway process holds in memory only
// saves round trips to Temporal (counted at the gRPC layer of the gateway's own connection), and a
// restarted gateway finds the same answers through Temporal; a client that declared elicitation is
// still asked after the gateway it initialized with was killed (the MCP SDK's client, real
// `bin/sluice.js gateway` processes), and one whose call waited for a person when its gateway was
// killed resumes the call by itself at the restarted one (Last-Event-ID). A worker on the run's dev server runs
// test/fixtures/gateway.config.ts, in front of test/fixtures/gateway/upstream.mjs (which logs every
// call it receives).
import { InterceptingCall } from '@grpc/grpc-js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { type CallToolResult, type ElicitRequest, ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import {
  Connection,
  type ConnectionOptions,
  defaultGrpcRetryOptions,
  makeGrpcRetryInterceptor,
} from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, inject, it, vi } from 'vitest';
import { SluiceClient } from '../client/client';
import { startGatewayHttp } from '../servers/gateway';
import { type SluiceConfig, toolSchemas } from '../define/config';
import { loadConfig } from '../worker/load-config';
import { eventually } from './eventually';
import {
  authorized,
  GATEWAY_CONFIG,
  GATEWAY_TOKEN,
  gatewayMarks,
  gatewayProcesses,
  post,
  textOf,
  upstreamCalls as callsIn,
} from './gateway-fixture';
import { type Harness, startHarness } from './harness';

// Real processes that load TypeScript through tsx (the gateway): minutes at a load of 16.
vi.setConfig({ testTimeout: 300_000, hookTimeout: 300_000 });

let h: Harness;
let config: SluiceConfig;
let marks: string;
const gateways = gatewayProcesses(() => h.taskQueue);
const connections: Connection[] = [];

beforeAll(async () => {
  marks = gatewayMarks('gateway-resume');
  config = await loadConfig(GATEWAY_CONFIG);
  h = await startHarness('gateway-resume', config);
});

afterAll(async () => {
  await gateways.stopAll();
  for (const c of connections) await c.close().catch(() => undefined);
  await h?.close();
});

const upstreamCalls = () => callsIn(marks);

/**
 * An in-process HTTP gateway whose Sluice client talks to Temporal over a connection of its own
 * that notes the name of every RPC it sends, so a test can tell which requests cost round trips.
 */
async function countedGateway(port = 0) {
  const rpcs: string[] = [];
  const counting: NonNullable<ConnectionOptions['interceptors']>[number] = (options, next) => {
    rpcs.push(String(options.method_definition.path).split('/').pop()!);
    return new InterceptingCall(next(options));
  };
  const connection = await Connection.connect({
    address: inject('temporalAddress'),
    interceptors: [makeGrpcRetryInterceptor(defaultGrpcRetryOptions()), counting],
  });
  connections.push(connection);
  const sluice = new SluiceClient({ connection, taskQueue: h.taskQueue });
  const served = await startGatewayHttp(
    { tools: toolSchemas(config), sluice },
    { host: '127.0.0.1', port, token: GATEWAY_TOKEN },
  );
  return { ...served, rpcs };
}

/** Starts `sluice gateway --http` on a loopback port (0: a free one); resolves to the process and its /mcp URL. */
const gatewayProcess = (port = 0, extra: string[] = []) =>
  gateways.start(['--port', String(port), ...extra], { GATEWAY_MARKS: marks });

describe('what a gateway holds in memory saves round trips, and nothing more', () => {
  it('a repeated call costs no Temporal request; after a restart the session re-opens with none and the same result comes back', async () => {
    const first = await countedGateway();
    const init = await post(first.url, {
      jsonrpc: '2.0',
      id: 0,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
    });
    expect(init.status).toBe(200);
    const headers = { 'mcp-session-id': init.session!, 'mcp-protocol-version': '2025-06-18' };
    expect((await post(first.url, { jsonrpc: '2.0', method: 'notifications/initialized' }, headers)).status).toBe(202);
    const marker = `cached-${Date.now()}`;
    const call = {
      jsonrpc: '2.0',
      id: 7,
      method: 'tools/call',
      params: { name: 'mcp__up__echo', arguments: { text: marker } },
    };
    const answered = await post(first.url, call, headers);
    expect(answered.json.result.content[0].text).toBe(`echo: ${marker}`);
    expect(first.rpcs).toContain('StartWorkflowExecution');

    // The same request again: the finished batch's output is known, so no request reaches Temporal.
    first.rpcs.length = 0;
    expect((await post(first.url, call, headers)).json.result).toEqual(answered.json.result);
    expect(first.rpcs).toEqual([]);

    // A new gateway on the same address holds nothing: it finds the session and the batch in Temporal.
    const port = Number(new URL(first.url).port);
    await first.close();
    const second = await countedGateway(port);
    try {
      const again = await post(second.url, call, headers);
      expect(again.status).toBe(200);
      expect(again.json.result).toEqual(answered.json.result);
      // Re-opening the session costs no request: its id says how the client initialized it.
      expect(second.rpcs.filter((r) => r === 'ListWorkflowExecutions')).toEqual([]);
      // Once answered, the batch is known: it costs no request again.
      second.rpcs.length = 0;
      expect((await post(second.url, call, headers)).json.result).toEqual(answered.json.result);
      expect((await post(second.url, { jsonrpc: '2.0', id: 8, method: 'tools/list' }, headers)).status).toBe(200);
      expect(second.rpcs).toEqual([]);
    } finally {
      await second.close();
    }

    // Requests that arrive together at a restarted gateway share one re-opening of their session.
    const third = await countedGateway(port);
    try {
      const together = await Promise.all([
        post(third.url, { jsonrpc: '2.0', id: 20, method: 'tools/list' }, headers),
        post(third.url, { jsonrpc: '2.0', id: 21, method: 'tools/list' }, headers),
        post(third.url, call, headers),
      ]);
      expect(together.map((r) => r.status)).toEqual([200, 200, 200]);
      expect(together[2].json.result).toEqual(answered.json.result);
      // An id not of the gateway's shape is unknown.
      const stranger = { ...headers, 'mcp-session-id': 'not-a-gateway-session' };
      expect((await post(third.url, { jsonrpc: '2.0', id: 1, method: 'tools/list' }, stranger)).status).toBe(404);
      // A session its client ended is not re-opened by the process that saw it end.
      const ended = await fetch(third.url, { method: 'DELETE', headers: { ...authorized, ...headers } });
      expect(ended.status).toBe(200);
      const after = await post(third.url, { jsonrpc: '2.0', id: 22, method: 'tools/list' }, headers);
      expect(after.status).toBe(404);
    } finally {
      await third.close();
    }
    expect(upstreamCalls().filter((c) => c.args.text === marker)).toHaveLength(1);
  });
});

describe('a resumed session keeps what its client declared', () => {
  it('a client that declared elicitation and ran no call before the gateway was killed goes on in its session, asked in a form by the new gateway', async () => {
    // The form's answer decides only where the operator let it (--elicitation-decides).
    const first = await gatewayProcess(0, ['--elicitation-decides']);
    const asked: ElicitRequest['params'][] = [];
    const client = new Client(
      { name: 'resuming-client', version: '1' },
      { capabilities: { elicitation: { form: {} } } },
    );
    client.setRequestHandler(ElicitRequestSchema, async (request) => {
      asked.push(request.params);
      return { action: 'accept', content: { decision: 'approve', reason: 'fine after the restart' } };
    });
    const transport = new StreamableHTTPClientTransport(new URL(first.url), { requestInit: { headers: authorized } });
    await client.connect(transport);
    try {
      const sessionId = transport.sessionId;
      expect(sessionId).toBeTruthy();
      // No call before the kill: Temporal holds no batch of the session, only its id says it was issued.
      expect((await client.listTools()).tools.map((t) => t.name)).toContain('mcp__up__write_note');
      let batches = 0;
      for await (const _ of h.client.temporal.workflow.list({ query: `SluiceSessionId = "gateway-${sessionId}"` }))
        batches++;
      expect(batches).toBe(0);

      first.child.kill('SIGKILL');
      await new Promise((resolve) =>
        first.child.exitCode !== null ? resolve(null) : first.child.once('exit', resolve),
      );
      await gatewayProcess(Number(new URL(first.url).port), ['--elicitation-decides']);

      // The client goes on in its session; the call that asks is put to it as a form, and runs once approved.
      const call = client.callTool(
        { name: 'mcp__up__write_note', arguments: { name: 'resumed-1', text: 'asked after restart' } },
        undefined,
        { timeout: 290_000 },
      );
      await eventually('the form put to the client by the restarted gateway', () => asked.length > 0, {
        timeoutMs: 120_000,
      });
      const r = (await call) as CallToolResult;
      expect(r.isError, textOf(r)).toBeFalsy();
      expect(textOf(r)).toBe('wrote resumed-1');
      expect(transport.sessionId).toBe(sessionId);
      expect(String(r._meta?.['sluice/batch'])).toContain(`gateway-${sessionId}`);
      expect(asked).toHaveLength(1);
      expect(asked[0].mode).toBe('form');
      expect(asked[0].message).toContain('mcp__up__write_note');
      const { memo } = await h.client.readApprovals(String(r._meta?.['sluice/batch']));
      expect(memo?.decided[0]).toMatchObject({ outcome: 'allowed-once', reason: 'fine after the restart' });
      expect(memo?.decided[0]?.by).toBe('MCP client "MCP client, session resumed" (unverified elicitation answer)');
      await eventually('the upstream ran the approved call', () =>
        upstreamCalls().some((c) => c.tool === 'write_note' && c.args.name === 'resumed-1'),
      );
      expect(upstreamCalls().filter((c) => c.tool === 'write_note' && c.args.name === 'resumed-1')).toHaveLength(1);
    } finally {
      await client.close().catch(() => undefined);
    }
  });
});

describe('a call whose gateway died is resumed by the client itself', () => {
  it("the SDK client reconnects to the restarted gateway with the last event id it saw, and its own callTool resolves with the batch's result once the ask is approved", async () => {
    const first = await gatewayProcess();
    const port = Number(new URL(first.url).port);
    // What the client sends, as it sends it: its tools/call requests, and its GETs that resume a
    // stream (Last-Event-ID) with the status each was answered with.
    const posted: { method?: string; id?: unknown }[] = [];
    const resumed: { lastEventId: string; status: number }[] = [];
    const counting: typeof fetch = async (input, init) => {
      const headers = new Headers(init?.headers);
      if (init?.method === 'POST' && typeof init.body === 'string') posted.push(JSON.parse(init.body));
      const res = await fetch(input, init);
      const lastEventId = headers.get('last-event-id');
      if (init?.method === 'GET' && lastEventId) resumed.push({ lastEventId, status: res.status });
      return res;
    };
    const client = new Client({ name: 'reconnecting-client', version: '1' });
    const transport = new StreamableHTTPClientTransport(new URL(first.url), {
      fetch: counting,
      requestInit: { headers: authorized },
      // The SDK's default gives up after two attempts (about 2.5 s): a gateway restarted at a load
      // of 16 takes longer to listen again.
      reconnectionOptions: {
        initialReconnectionDelay: 500,
        maxReconnectionDelay: 2_000,
        reconnectionDelayGrowFactor: 1.5,
        maxRetries: 1_000,
      },
    });
    const errors: string[] = [];
    await client.connect(transport);
    client.onerror = (err) => void errors.push(err.message);
    try {
      const sessionId = transport.sessionId;
      const call = client.callTool(
        { name: 'mcp__up__write_note', arguments: { name: 'reconnected-1', text: 'once' } },
        undefined,
        { timeout: 290_000 },
      );
      // Awaited below; until then a rejection must not count as unhandled.
      call.catch(() => undefined);
      const pending = await eventually(
        'the ask of the call',
        async () =>
          (await h.client.pendingApprovals()).find(
            (p) => p.toolName === 'mcp__up__write_note' && JSON.stringify(p.arguments).includes('reconnected-1'),
          ),
        { timeoutMs: 120_000 },
      );
      expect(pending.workflowId).toContain(`gateway-${sessionId}`);

      first.child.kill('SIGKILL');
      await new Promise((resolve) =>
        first.child.exitCode !== null ? resolve(null) : first.child.once('exit', resolve),
      );
      await eventually('the client to see its stream break', () =>
        errors.some((e) => /SSE stream disconnected/.test(e)),
      );
      await gatewayProcess(port);
      // The client found the new gateway by itself: a GET with the last event id it saw, taken.
      const taken = await eventually(
        'the client to resume its stream at the new gateway',
        () => resumed.find((r) => r.status === 200),
        { timeoutMs: 120_000 },
      );
      expect(taken.lastEventId).toMatch(/^sluice1\./);

      // The batch still waits for a person; once approved, the resumed stream carries its result.
      await h.client.decide({
        approvalId: pending.approvalId,
        decision: 'approve',
        by: 'erin',
        argsDigest: pending.argsDigest,
        workflowId: pending.workflowId,
      });
      const r = (await call) as CallToolResult;
      expect(r.isError, textOf(r)).toBeFalsy();
      expect(textOf(r)).toBe('wrote reconnected-1');
      expect(r._meta?.['sluice/batch']).toBe(pending.workflowId);
      expect(transport.sessionId).toBe(sessionId);
      // The client sent the call once: the result came on the resumed stream, not from a repeat.
      expect(posted.filter((m) => m.method === 'tools/call')).toHaveLength(1);
      expect(upstreamCalls().filter((c) => c.tool === 'write_note' && c.args.name === 'reconnected-1')).toHaveLength(1);

      // The session goes on at the new gateway.
      expect((await client.listTools()).tools.map((t) => t.name)).toContain('mcp__up__write_note');
    } finally {
      await client.close().catch(() => undefined);
    }
  });

  it('a resumed stream is answered only in the session its event id names', async () => {
    const served = await startGatewayHttp(
      { tools: toolSchemas(config), sluice: h.client },
      { host: '127.0.0.1', port: 0, token: GATEWAY_TOKEN },
    );
    try {
      const session = async () => {
        const init = await post(served.url, {
          jsonrpc: '2.0',
          id: 0,
          method: 'initialize',
          params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
        });
        const headers = { 'mcp-session-id': init.session!, 'mcp-protocol-version': '2025-11-25' };
        await post(served.url, { jsonrpc: '2.0', method: 'notifications/initialized' }, headers);
        return headers;
      };
      const a = await session();
      const b = await session();
      const marker = `mine-${Date.now()}`;
      const res = await fetch(served.url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          ...authorized,
          ...a,
        },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 5,
          method: 'tools/call',
          params: { name: 'mcp__up__echo', arguments: { text: marker } },
        }),
      });
      const text = await res.text();
      const eventId = /^id: (\S+)$/m.exec(text)?.[1];
      expect(eventId).toMatch(/^sluice1\./);
      const resume = (headers: Record<string, string>) =>
        fetch(served.url, {
          headers: { accept: 'text/event-stream', 'last-event-id': eventId!, ...authorized, ...headers },
        });
      // Another session's id with this event id: refused, nothing of session a is sent.
      const other = await resume(b);
      expect(other.status).toBe(500);
      expect(await other.text()).not.toContain(marker);
      // Its own session: the call's answer again, and the stream ends with it.
      const own = await resume(a);
      expect(own.status).toBe(200);
      const replayed = await own.text();
      expect(replayed).toContain(`echo: ${marker}`);
      expect(replayed).toContain('"id":5');
      // An id of a call whose batch never started (the gateway died first): no batch is started,
      // the answer says nothing ran; so for a request of another method, whose answer was lost.
      const made = (mark: object) =>
        fetch(served.url, {
          headers: {
            accept: 'text/event-stream',
            'last-event-id': `sluice1.${Buffer.from(JSON.stringify({ s: a['mcp-session-id'], n: 'x', ...mark })).toString('base64url')}`,
            ...authorized,
            ...a,
          },
        }).then((r) => r.text());
      const never = await made({ r: 6, m: 'tools/call', k: 123456789 });
      expect(never).toContain('"id":6');
      expect(never).toContain('nothing ran; send the call again');
      const listed = await made({ r: 7, m: 'tools/list' });
      expect(listed).toContain('"id":7');
      expect(listed).toContain('before it answered tools/list (request 7); send the request again');
    } finally {
      await served.close();
    }
  });
});
