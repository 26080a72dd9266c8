// Traces and metrics of a Sluice worker (docs/operations.md lists every span and metric).
//
// Spans: Temporal's OpenTelemetry interceptors (workflow and activity spans, trace context carried
// through headers), plus Sluice's own: `sluice.stage.<activity>` around each stage activity attempt,
// and, built from the session events as the worker writes them, `sluice.batch`, `sluice.call` and
// `sluice.approval` with the events' own times. Attributes carry ids, tool names, outcomes and
// durations, never arguments or results.
//
// Metrics: prom-client counters and histograms, served with the Temporal runtime's own metrics
// (Core's Prometheus endpoint, read and appended) on one port, path /metrics.
import { Context } from '@temporalio/activity';
import type { Span, Tracer } from '@opentelemetry/api';
import type { Resource } from '@opentelemetry/resources';
import type { BasicTracerProvider, SpanExporter, SpanProcessor } from '@opentelemetry/sdk-trace-base';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Counter, Histogram, Registry } from 'prom-client';
import type { WorkerPlugin } from '@temporalio/worker';
import type { Json, SessionEvent } from '../pipeline/types';
import type { ResultStore } from '../stores/claim-check';
import { requireOptional } from '../support/optional';

/** The stage activities that run a tool body: their attempts are counted per tool. */
const BODY_STAGES = new Set(['executeBody', 'guardThenExecuteBody']);

// OpenTelemetry and prom-client are optional peer dependencies, loaded when a SluiceTelemetry is
// made (SLUICE_METRICS_PORT or an OTLP endpoint set, or one made in code); no telemetry, no load.
const TELEMETRY_PACKAGES = [
  'prom-client',
  '@opentelemetry/api',
  '@opentelemetry/resources',
  '@opentelemetry/sdk-trace-base',
];
interface TelemetryModules {
  api: typeof import('@opentelemetry/api');
  resources: typeof import('@opentelemetry/resources');
  traceBase: typeof import('@opentelemetry/sdk-trace-base');
  prom: typeof import('prom-client');
}
let modules: TelemetryModules | undefined;
function telemetryModules(): TelemetryModules {
  modules ??= requireOptional(
    TELEMETRY_PACKAGES[0],
    'Telemetry (SluiceTelemetry, SLUICE_METRICS_PORT, OTEL_EXPORTER_OTLP_ENDPOINT)',
    () => ({
      prom: require('prom-client'),
      api: require('@opentelemetry/api'),
      resources: require('@opentelemetry/resources'),
      traceBase: require('@opentelemetry/sdk-trace-base'),
    }),
    TELEMETRY_PACKAGES.slice(1),
  );
  return modules;
}
function otlpExporter(): typeof import('@opentelemetry/exporter-trace-otlp-http') {
  return requireOptional(
    '@opentelemetry/exporter-trace-otlp-http',
    'Traces over OTLP (OTEL_EXPORTER_OTLP_ENDPOINT)',
    () => require('@opentelemetry/exporter-trace-otlp-http'),
  );
}
/** Loaded by the first SluiceTelemetry: every use below runs after one was made. */
const otel = () => modules!.api;

/**
 * An OpenTelemetry SpanExporter (@opentelemetry/sdk-trace-base), typed by its shape: sluice/worker's
 * declarations name no OpenTelemetry or prom-client package, optional peers an app without
 * telemetry does not install. For the same reason the OpenTelemetry and prom-client objects below
 * are internal: read the metrics with metricsText(), send spans through spanExporter.
 */
interface SpanExporterLike {
  export: (...args: never[]) => unknown;
  shutdown: () => Promise<void>;
}

export interface TelemetryOptions {
  /** Where spans go; with none (and no OTLP endpoint) no spans are made. */
  spanExporter?: SpanExporterLike;
  /** OTLP/HTTP endpoint (`http://collector:4318`); default OTEL_EXPORTER_OTLP_ENDPOINT. */
  otlpEndpoint?: string;
  /** Export each span as it ends (tests); default batches them. */
  simpleProcessor?: boolean;
  serviceName?: string;
  /** Counts pending approvals at scrape time (the worker asks Temporal's visibility). */
  pendingApprovals?: () => Promise<number>;
}

export class SluiceTelemetry {
  /** @internal */
  readonly registry: Registry;
  /** @internal */
  readonly tracer?: Tracer;
  /** @internal */
  readonly spanProcessor?: SpanProcessor;
  /** @internal */
  readonly resource: Resource;
  private readonly provider?: BasicTracerProvider;
  private pendingApprovals?: () => Promise<number>;

  /** @internal */
  readonly calls: Counter<'tool' | 'outcome'>;
  /** @internal */
  readonly approvalWait: Histogram<'outcome'>;
  /** @internal */
  readonly bodyAttempts: Counter<'tool' | 'outcome'>;
  /** @internal */
  readonly stageSeconds: Histogram<'stage' | 'outcome'>;
  /** @internal */
  readonly storedResults: Counter<'kind'>;
  /** @internal */
  readonly storedBytes: Counter<'kind'>;

  constructor(opts: TelemetryOptions = {}) {
    const { prom, resources, traceBase } = telemetryModules();
    const { Counter, Gauge, Histogram, Registry } = prom;
    const { BasicTracerProvider, BatchSpanProcessor, SimpleSpanProcessor } = traceBase;
    this.registry = new Registry();
    this.resource = new resources.Resource({ 'service.name': opts.serviceName ?? 'sluice-worker' });
    const endpoint = opts.otlpEndpoint;
    const exporter =
      (opts.spanExporter as SpanExporter | undefined) ??
      (endpoint
        ? new (otlpExporter().OTLPTraceExporter)({ url: `${endpoint.replace(/\/$/, '')}/v1/traces` })
        : undefined);
    if (exporter) {
      this.spanProcessor = opts.simpleProcessor
        ? new SimpleSpanProcessor(exporter)
        : new BatchSpanProcessor(exporter, { scheduledDelayMillis: 1_000 });
      this.provider = new BasicTracerProvider({ resource: this.resource, spanProcessors: [this.spanProcessor] });
      this.tracer = this.provider.getTracer('sluice');
    }
    this.pendingApprovals = opts.pendingApprovals;
    const r = [this.registry];
    this.calls = new Counter({
      name: 'sluice_calls_total',
      help: 'Tool calls that reached their tool/result, by tool and outcome (ok, or the error code)',
      labelNames: ['tool', 'outcome'],
      registers: r,
    });
    this.approvalWait = new Histogram({
      name: 'sluice_approval_wait_seconds',
      help: 'Time from an approval being asked to its decision (approved, denied, expired)',
      labelNames: ['outcome'],
      buckets: [1, 5, 15, 60, 300, 900, 3600, 14400, 86400],
      registers: r,
    });
    this.bodyAttempts = new Counter({
      name: 'sluice_body_attempts_total',
      help: 'Tool body attempts run on this worker, by tool and outcome (ok, failed: the attempt threw)',
      labelNames: ['tool', 'outcome'],
      registers: r,
    });
    this.stageSeconds = new Histogram({
      name: 'sluice_stage_seconds',
      help: 'Duration of each stage activity attempt on this worker',
      labelNames: ['stage', 'outcome'],
      buckets: [0.005, 0.025, 0.1, 0.5, 1, 5, 30, 120, 600],
      registers: r,
    });
    this.storedResults = new Counter({
      name: 'sluice_stored_results_total',
      help: 'Results stored aside by the claim check (kind: result, or body for a stashed body result)',
      labelNames: ['kind'],
      registers: r,
    });
    this.storedBytes = new Counter({
      name: 'sluice_stored_result_bytes_total',
      help: 'Bytes of JSON stored aside by the claim check',
      labelNames: ['kind'],
      registers: r,
    });
    const self = this;
    new Gauge({
      name: 'sluice_pending_approvals',
      help: "Batches of this worker's task queue waiting for an approval decision now (from Temporal visibility, read at scrape time)",
      registers: r,
      async collect() {
        if (!self.pendingApprovals) return;
        try {
          this.set(await self.pendingApprovals());
        } catch {
          // visibility unreachable: keep the last value
        }
      },
    });
  }

  setPendingApprovals(count: () => Promise<number>): void {
    this.pendingApprovals = count;
  }

  /** Wraps stage activities: a span per attempt, a duration histogram, body attempts by tool. */
  wrapActivities<T extends Record<string, unknown>>(activities: T): T {
    const out: Record<string, unknown> = {};
    for (const [name, fn] of Object.entries(activities)) {
      if (typeof fn !== 'function') {
        out[name] = fn;
        continue;
      }
      out[name] = async (...args: unknown[]) => {
        const ids = refIds(args[0]);
        // A body's packed input leaves the workflow id out (pipeline/stages.ts): the activity knows it.
        if (!('sluice.workflow_id' in ids)) {
          const workflowId = activityWorkflowId();
          if (workflowId) ids['sluice.workflow_id'] = workflowId;
        }
        const started = process.hrtime.bigint();
        const span = this.tracer?.startSpan(`sluice.stage.${name}`, {
          attributes: { 'sluice.stage': name, ...ids },
        });
        const finish = (outcome: string, err?: unknown) => {
          const seconds = Number(process.hrtime.bigint() - started) / 1e9;
          this.stageSeconds.labels(name, outcome).observe(seconds);
          // A body its guards stopped (guardThenExecuteBody) made no attempt.
          const attempted = outcome !== 'denied' && outcome !== 'guards-failed';
          if (BODY_STAGES.has(name) && attempted && typeof ids['sluice.tool'] === 'string')
            this.bodyAttempts.labels(ids['sluice.tool'], outcome).inc();
          if (span) {
            span.setAttribute('sluice.outcome', outcome);
            span.setAttribute('sluice.duration_ms', Math.round(seconds * 1000));
            if (err) span.setStatus({ code: otel().SpanStatusCode.ERROR, message: errorKind(err) });
            span.end();
          }
        };
        try {
          const run = () => (fn as (...a: unknown[]) => Promise<unknown>)(...args);
          // The stage's own work (a tool body's calls) nests under its span.
          const result = await (span
            ? otel().context.with(otel().trace.setSpan(otel().context.active(), span), run)
            : run());
          finish(BODY_STAGES.has(name) ? bodyOutcome(result) : 'ok');
          return result;
        } catch (err) {
          finish('failed', err);
          throw err;
        }
      };
    }
    return out as T;
  }

  /** A result store that counts what it stores. */
  countingStore(store: ResultStore): ResultStore {
    return {
      put: async (key: string, value: Json) => {
        const ref = await store.put(key, value);
        const kind = key.endsWith('#body') ? 'body' : 'result';
        this.storedResults.labels(kind).inc();
        this.storedBytes.labels(kind).inc(Buffer.byteLength(JSON.stringify(value)));
        return ref;
      },
      get: (ref: string) => store.get(ref),
    };
  }

  // Spans built from session events: open batches and calls, per workflow id.
  private readonly batches = new Map<
    string,
    { span?: Span; open: Map<string, { span?: Span; started: number }>; calls: number; errors: number }
  >();
  private readonly asks = new Map<string, { span?: Span }>();

  /** Called with each chunk of a batch's events as the worker writes them (not on replay). */
  observeEvents(workflowId: string, sessionId: string, events: SessionEvent[]): void {
    for (const e of events) {
      const at = { workflowId, sessionId, seq: e.seq, t: Date.parse(e.time) };
      const d = e.data as Record<string, unknown>;
      if (e.type === 'tool/call') this.callStarted(at, d);
      else if (e.type === 'approval/asked') this.approvalAsked(at, d);
      else if (e.type === 'approval/decided') this.approvalDecided(at, d);
      else if (e.type === 'tool/result') this.callFinished(at, d);
    }
  }

  /** A call opens its span under its batch's, opening the batch's span with the batch's first call. */
  private callStarted(at: EventAt, d: Record<string, unknown>): void {
    const { workflowId, sessionId, t } = at;
    let b = this.batches.get(workflowId);
    if (!b) {
      b = {
        span: this.tracer?.startSpan('sluice.batch', {
          startTime: t,
          attributes: {
            'sluice.workflow_id': workflowId,
            'sluice.session_id': sessionId,
            'sluice.turn': Number(d.turn),
            'sluice.step': Number(d.step),
          },
        }),
        open: new Map(),
        calls: 0,
        errors: 0,
      };
      this.batches.set(workflowId, b);
    }
    b.calls++;
    const parent = b.span ? otel().trace.setSpan(activeContext(), b.span) : undefined;
    b.open.set(String(d.callId), {
      started: t,
      span: this.tracer?.startSpan(
        'sluice.call',
        {
          startTime: t,
          attributes: {
            'sluice.workflow_id': workflowId,
            'sluice.session_id': sessionId,
            'sluice.call_id': String(d.callId),
            'sluice.tool': String(d.name),
            'sluice.seq': at.seq,
          },
        },
        parent,
      ),
    });
  }

  /** An approval opens its span under its call's. */
  private approvalAsked({ workflowId, t }: EventAt, d: Record<string, unknown>): void {
    const call = this.batches.get(workflowId)?.open.get(String(d.callId));
    const parent = call?.span ? otel().trace.setSpan(activeContext(), call.span) : undefined;
    this.asks.set(`${workflowId}/${d.id}`, {
      span: this.tracer?.startSpan(
        'sluice.approval',
        {
          startTime: t,
          attributes: {
            'sluice.workflow_id': workflowId,
            'sluice.approval_id': String(d.id),
            'sluice.call_id': String(d.callId),
            'sluice.tool': String(d.toolName),
          },
        },
        parent,
      ),
    });
  }

  /** A decision counts its wait and ends its approval's span. */
  private approvalDecided({ workflowId, t }: EventAt, d: Record<string, unknown>): void {
    const outcome = d.expired ? 'expired' : String(d.outcome);
    if (typeof d.latencyMs === 'number') this.approvalWait.labels(outcome).observe(d.latencyMs / 1000);
    const ask = this.asks.get(`${workflowId}/${d.id}`);
    this.asks.delete(`${workflowId}/${d.id}`);
    if (ask?.span) {
      ask.span.setAttribute('sluice.outcome', outcome);
      if (typeof d.latencyMs === 'number') ask.span.setAttribute('sluice.wait_ms', d.latencyMs);
      if (typeof d.by === 'string') ask.span.setAttribute('sluice.decided_by', d.by);
      ask.span.end(t);
    }
  }

  /** A result counts the call and ends its span; the batch's last result ends the batch's. */
  private callFinished({ workflowId, t }: EventAt, d: Record<string, unknown>): void {
    const outcome = d.isError ? String((d.error as { code?: string } | undefined)?.code ?? 'error') : 'ok';
    this.calls.labels(String(d.name), outcome).inc();
    const b = this.batches.get(workflowId);
    const call = b?.open.get(String(d.callId));
    if (!b || !call) return;
    b.open.delete(String(d.callId));
    if (d.isError) b.errors++;
    if (call.span) {
      call.span.setAttribute('sluice.outcome', outcome);
      call.span.setAttribute('sluice.duration_ms', t - call.started);
      if (d.isError) call.span.setStatus({ code: otel().SpanStatusCode.ERROR, message: outcome });
      call.span.end(t);
    }
    if (b.open.size === 0) {
      this.batches.delete(workflowId);
      if (b.span) {
        b.span.setAttribute('sluice.calls', b.calls);
        b.span.setAttribute('sluice.errors', b.errors);
        b.span.end(t);
      }
    }
  }

  /**
   * Temporal's own workflow and activity spans (OpenTelemetryPlugin from
   * @temporalio/interceptors-opentelemetry), into the same span processor as Sluice's: add it to
   * your Worker.create plugins beside SluicePlugin. createSluiceWorker adds it itself.
   */
  temporalPlugin(): WorkerPlugin {
    const { OpenTelemetryPlugin } = requireOptional(
      '@temporalio/interceptors-opentelemetry',
      "Temporal's own spans (SluiceTelemetry.temporalPlugin)",
      () =>
        require('@temporalio/interceptors-opentelemetry') as typeof import('@temporalio/interceptors-opentelemetry'),
    );
    if (!this.spanProcessor)
      throw new Error(
        "SluiceTelemetry.temporalPlugin(): this telemetry makes no spans (no spanExporter and no OTLP endpoint); give it one, or leave Temporal's spans out",
      );
    return new OpenTelemetryPlugin({
      resource: this.resource,
      spanProcessor: this.spanProcessor,
      ...(this.tracer ? { tracer: this.tracer } : {}),
    }) as unknown as WorkerPlugin;
  }

  /** Prometheus text: Sluice's metrics, then the runtime's from `coreUrl` when given. */
  async metricsText(coreUrl?: string): Promise<string> {
    let text = await this.registry.metrics();
    if (coreUrl) {
      try {
        const res = await fetch(coreUrl);
        if (res.ok) text += `\n${await res.text()}`;
      } catch {
        text += '\n# the Temporal runtime metrics endpoint did not answer\n';
      }
    }
    return text;
  }

  async shutdown(): Promise<void> {
    await this.provider?.shutdown();
  }
}

/** The root context: each batch's event spans make a trace of their own. */
function activeContext() {
  return otel().ROOT_CONTEXT;
}

/** Ids and the tool name from a stage activity's input (a CallRef, a list of them, or settle requests). */
function activityWorkflowId(): string | undefined {
  try {
    return Context.current().info.workflowExecution?.workflowId;
  } catch {
    return undefined; // not inside an activity
  }
}

function refIds(input: unknown): Record<string, string | number> {
  const first = Array.isArray(input) ? input[0] : input;
  const ref = (first as { ref?: unknown })?.ref ?? first;
  const r = ref as { workflowId?: string; sessionId?: string; callId?: string; name?: string } | undefined;
  const out: Record<string, string | number> = {};
  if (typeof r?.workflowId === 'string') out['sluice.workflow_id'] = r.workflowId;
  if (typeof r?.sessionId === 'string') out['sluice.session_id'] = r.sessionId;
  if (typeof r?.callId === 'string') out['sluice.call_id'] = r.callId;
  if (typeof r?.name === 'string') out['sluice.tool'] = r.name;
  if (Array.isArray(input)) out['sluice.calls'] = input.length;
  return out;
}

/** The error's kind, not its message (a message may quote a result). */
function errorKind(err: unknown): string {
  const e = err as { type?: string; name?: string };
  return e?.type ?? e?.name ?? 'Error';
}

export function telemetryFromEnv(env: NodeJS.ProcessEnv = process.env): SluiceTelemetry | undefined {
  const endpoint = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT
    ? env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT.replace(/\/v1\/traces\/?$/, '')
    : env.OTEL_EXPORTER_OTLP_ENDPOINT;
  if (!endpoint && !env.SLUICE_METRICS_PORT) return undefined;
  return new SluiceTelemetry({
    ...(endpoint ? { otlpEndpoint: endpoint } : {}),
    serviceName: env.OTEL_SERVICE_NAME ?? 'sluice-worker',
  });
}

/** Serves /metrics: Sluice's and the runtime's. */
export async function startMetricsServer(
  telemetry: SluiceTelemetry,
  opts: { port: number; host?: string; coreUrl?: string },
): Promise<{ url: string; close(): Promise<void> }> {
  const server = http.createServer((req, res) => {
    if (req.method !== 'GET' || !req.url?.startsWith('/metrics')) {
      res.writeHead(404, { 'content-type': 'text/plain' });
      res.end('metrics are at /metrics\n');
      return;
    }
    telemetry.metricsText(opts.coreUrl).then(
      (text) => {
        res.writeHead(200, { 'content-type': telemetry.registry.contentType });
        res.end(text);
      },
      (err) => {
        res.writeHead(500, { 'content-type': 'text/plain' });
        res.end(`metrics failed: ${(err as Error).message}\n`);
      },
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, opts.host ?? '0.0.0.0', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://${opts.host ?? '127.0.0.1'}:${port}/metrics`,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

/** Where a session event sits: its workflow, session, place in the log and time (ms since the epoch). */
interface EventAt {
  workflowId: string;
  sessionId: string;
  seq: number;
  t: number;
}

/**
 * How a body stage ended, from its (packed) result: `failed` when a wrapper threw; `denied` or
 * `guards-failed` when the guards run first (guardThenExecuteBody) denied or threw, and the body
 * never started; else `ok`.
 */
function bodyOutcome(result: unknown): string {
  if (!result || typeof result !== 'object') return 'ok';
  const r = result as { outcome?: string; guards?: { gate?: { kind?: string } } };
  const gate = r.guards?.gate?.kind;
  if (gate === 'denied') return 'denied';
  if (gate === 'failed') return 'guards-failed';
  return r.outcome ?? 'ok';
}
