// Traces and metrics. In process: spans collected by an in-memory exporter match the stages of a
// batch with an approval and a retried body, and carry ids, tools, outcomes and durations but never
// arguments or results. As `sluice worker` runs it: the metrics port serves Sluice's metrics and the
// Temporal runtime's, and spans reach a local OTLP/HTTP receiver.
import { InMemorySpanExporter, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineConfig, defineTool } from '../define/config';
import { freePort } from '../temporal/dev-server';
import { SluiceTelemetry } from '../worker/telemetry';
import { eventually } from './eventually';
import { batch, spawnWorker, startHarness, type ChildWorker, type Harness } from './harness';

const SECRET_ARG = 'secret-argument-7f3a';
const SECRET_RESULT = 'secret-result-9c2e';

const config = defineConfig({
  tools: [
    defineTool({
      name: 'guarded',
      description: 'needs a person',
      input: z.object({ note: z.string() }),
      approval: 'ask',
      execute: ({ note }) => `${SECRET_RESULT} ${note.length}`,
    }),
    defineTool({
      name: 'flaky',
      description: 'fails its first attempt',
      input: z.object({ note: z.string() }),
      retry: { maximumAttempts: 3, initialIntervalMs: 100 },
      execute: (_args, ctx) => {
        if (ctx.attempt === 1) throw new Error('first attempt fails');
        return SECRET_RESULT;
      },
    }),
  ],
  guards: [(ctx) => (ctx.call.args.note === 'frozen' ? 'frozen for the release' : undefined)],
});

describe('spans and metrics in process', () => {
  let h: Harness;
  const exporter = new InMemorySpanExporter();
  const telemetry = new SluiceTelemetry({ spanExporter: exporter, simpleProcessor: true });
  beforeAll(async () => {
    h = await startHarness('telemetry', config, { telemetry });
  });
  afterAll(async () => {
    await h?.close();
    await telemetry.shutdown();
  });

  it('a batch with an approval and a retried body: batch, call, approval and stage spans; metrics counted', async () => {
    const req = batch(
      [
        { id: 'g1', name: 'guarded', args: { note: SECRET_ARG } },
        { id: 'f1', name: 'flaky', args: { note: SECRET_ARG } },
      ],
      { options: { approvalTimeoutMs: 60_000 } },
    );
    const handle = await h.client.startBatch(req);
    const pending = await eventually('the approval', async () => {
      const { pending } = await h.client.batchState(handle.workflowId);
      return pending.length > 0 && pending;
    });
    await h.client.approve(pending[0].approvalId, { by: 'alice', argsDigest: pending[0].argsDigest });
    const out = await handle.result();
    expect(out.results.map((r) => r.result.isError)).toEqual([false, false]);

    const spans = await eventually('the batch span', () => {
      const all = exporter.getFinishedSpans();
      return (
        all.some((s) => s.name === 'sluice.batch' && s.attributes['sluice.workflow_id'] === handle.workflowId) && all
      );
    });
    const mine = (s: ReadableSpan) => s.attributes['sluice.workflow_id'] === handle.workflowId;
    const named = (name: string) => spans.filter((s) => s.name === name && mine(s));

    const [batchSpan] = named('sluice.batch');
    expect(batchSpan.attributes).toMatchObject({
      'sluice.session_id': req.sessionId,
      'sluice.calls': 2,
      'sluice.errors': 0,
    });
    const calls = named('sluice.call');
    expect(
      calls
        .map((s) => [s.attributes['sluice.call_id'], s.attributes['sluice.tool'], s.attributes['sluice.outcome']])
        .sort(),
    ).toEqual([
      ['f1', 'flaky', 'ok'],
      ['g1', 'guarded', 'ok'],
    ]);
    for (const c of calls) {
      expect(
        c.parentSpanId ?? (c as unknown as { parentSpanContext?: { spanId: string } }).parentSpanContext?.spanId,
      ).toBe(batchSpan.spanContext().spanId);
      expect(typeof c.attributes['sluice.duration_ms']).toBe('number');
    }
    const [approval] = named('sluice.approval');
    expect(approval.attributes).toMatchObject({
      'sluice.call_id': 'g1',
      'sluice.tool': 'guarded',
      'sluice.outcome': 'allowed-once',
      'sluice.decided_by': 'alice',
    });
    expect(approval.attributes['sluice.wait_ms']).toBeGreaterThanOrEqual(0);

    // Stage spans: the body twice for flaky (the first attempt failed); guarded, approved, runs its
    // guards and its body in one stage.
    const bodies = named('sluice.stage.executeBody');
    expect(
      bodies.filter((s) => s.attributes['sluice.tool'] === 'flaky').map((s) => s.attributes['sluice.outcome']),
    ).toEqual(['failed', 'ok']);
    expect(bodies.filter((s) => s.attributes['sluice.tool'] === 'guarded')).toHaveLength(0);
    expect(
      named('sluice.stage.guardThenExecuteBody').map((s) => [
        s.attributes['sluice.call_id'],
        s.attributes['sluice.tool'],
      ]),
    ).toEqual([['g1', 'guarded']]);
    // Pre-execute ran as a stage activity for each call; the guards after the approval ran in the body's.
    const preflights = named('sluice.stage.preflight');
    expect(preflights.length).toBeGreaterThan(0);
    expect(new Set(preflights.map((s) => s.attributes['sluice.outcome']))).toEqual(new Set(['ok']));
    expect(named('sluice.stage.runGuards')).toEqual([]);
    // Temporal's activity interceptor wraps each activity attempt in its own span.
    expect(spans.filter((s) => s.name === 'RunActivity:executeBody').length).toBeGreaterThanOrEqual(2);
    expect(spans.filter((s) => s.name === 'RunActivity:guardThenExecuteBody')).toHaveLength(1);

    // Never arguments or results, in any attribute of any span.
    for (const s of spans)
      for (const v of Object.values(s.attributes)) {
        expect(String(v)).not.toContain(SECRET_ARG);
        expect(String(v)).not.toContain(SECRET_RESULT);
      }

    const metrics = await telemetry.metricsText();
    expect(metrics).toContain('sluice_calls_total{tool="flaky",outcome="ok"} 1');
    expect(metrics).toContain('sluice_calls_total{tool="guarded",outcome="ok"} 1');
    expect(metrics).toContain('sluice_body_attempts_total{tool="flaky",outcome="failed"} 1');
    expect(metrics).toContain('sluice_body_attempts_total{tool="flaky",outcome="ok"} 1');
    expect(metrics).toMatch(/sluice_approval_wait_seconds_count\{outcome="allowed-once"\} 1/);
  });

  it('a body its guards stop after the yes: the stage says denied, and no body attempt is counted', async () => {
    const attempts = async () =>
      /sluice_body_attempts_total\{tool="guarded",outcome="ok"\} (\d+)/.exec(await telemetry.metricsText())?.[1] ?? '0';
    const before = await attempts();
    const handle = await h.client.startBatch(batch([{ id: 'z1', name: 'guarded', args: { note: 'frozen' } }]));
    const pending = await eventually('the approval', async () => {
      const { pending } = await h.client.batchState(handle.workflowId);
      return pending.length > 0 && pending;
    });
    await h.client.approve(pending[0].approvalId, { by: 'alice', argsDigest: pending[0].argsDigest });
    const out = await handle.result();
    expect(out.results[0].result.error?.code).toBe('DENIED');
    const stage = await eventually('the stage span', () =>
      exporter
        .getFinishedSpans()
        .find(
          (s) =>
            s.name === 'sluice.stage.guardThenExecuteBody' && s.attributes['sluice.workflow_id'] === handle.workflowId,
        ),
    );
    expect(stage.attributes['sluice.outcome']).toBe('denied');
    const metrics = await telemetry.metricsText();
    expect(metrics).toMatch(/sluice_stage_seconds_count\{stage="guardThenExecuteBody",outcome="denied"\} 1/);
    expect(metrics).not.toContain('sluice_body_attempts_total{tool="guarded",outcome="denied"}');
    expect(await attempts()).toBe(before);
  });
});

describe('sluice worker with SLUICE_METRICS_PORT and OTEL_EXPORTER_OTLP_ENDPOINT', () => {
  let h: Harness;
  let worker: ChildWorker | undefined;
  let receiver: http.Server;
  const received: { path: string; type: string; body: string }[] = [];
  beforeAll(async () => {
    h = await startHarness('telemetry-proc', { tools: [] }, { autoStart: false });
    receiver = http.createServer((req, res) => {
      let body = '';
      req.on('data', (d) => (body += d));
      req.on('end', () => {
        received.push({ path: req.url ?? '', type: String(req.headers['content-type']), body });
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end('{}');
      });
    });
    await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', () => r()));
  });
  afterAll(async () => {
    await worker?.kill('SIGTERM');
    await h?.close();
    await new Promise((r) => receiver?.close(r));
  });

  it('serves Sluice and Temporal runtime metrics on the port, and exports spans over OTLP', async () => {
    const port = await freePort();
    worker = spawnWorker(path.join(__dirname, 'fixtures', 'scale.config.ts'), h.taskQueue, h.stateDir, {
      SLUICE_METRICS_PORT: String(port),
      SLUICE_CORE_METRICS_PORT: String(await freePort()),
      SLUICE_METRICS_HOST: '127.0.0.1',
      OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`,
    });
    await worker.ready;
    const out = await h.client.runBatch(batch([{ name: 'work', args: { ms: 1, n: 7 } }]));
    expect(out.results[0].result.isError).toBe(false);

    const text = await eventually('the metrics', async () => {
      const t = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
      return t.includes('sluice_calls_total{tool="work",outcome="ok"} 1') && t.includes('temporal_') && t;
    });
    expect(text).toMatch(/sluice_body_attempts_total\{tool="work",outcome="ok"\} 1/);
    expect(text).toMatch(/sluice_stage_seconds_count\{stage="executeBody",outcome="ok"\} 1/);
    expect(text).toMatch(/# TYPE sluice_pending_approvals gauge\nsluice_pending_approvals 0/);
    // The runtime's own: workflow task and activity metrics from Temporal's Core.
    expect(text).toMatch(/temporal_workflow_completed|temporal_activity_execution_latency|temporal_request/);

    const traces = await eventually(
      'spans at the receiver',
      () => {
        const hit = received.filter((r) => r.path === '/v1/traces' && r.body.includes('"name":"sluice.batch"'));
        return hit.length > 0 && hit;
      },
      { timeoutMs: 20_000 },
    );
    const body = JSON.parse(traces[0].body);
    const spans = body.resourceSpans.flatMap((rs: { scopeSpans: { spans: { name: string }[] }[] }) =>
      rs.scopeSpans.flatMap((ss) => ss.spans),
    );
    const all = received
      .filter((r) => r.path === '/v1/traces')
      .flatMap((r) =>
        JSON.parse(r.body).resourceSpans.flatMap((rs: { scopeSpans: { spans: { name: string }[] }[] }) =>
          rs.scopeSpans.flatMap((ss) => ss.spans.map((s) => s.name)),
        ),
      );
    expect(spans.map((s: { name: string }) => s.name)).toContain('sluice.batch');
    expect(all).toEqual(
      expect.arrayContaining(['sluice.batch', 'sluice.call', 'sluice.stage.executeBody', 'RunActivity:executeBody']),
    );
  });
});
