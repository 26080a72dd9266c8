// The model adapters with the real SDK clients: `openai` (chat completions and Responses) and
// `@anthropic-ai/sdk` pointed by base URL at a local server that speaks their wire formats, and
// the AI SDK through its mock model. The SDKs ask with `stream: true`: the server answers in SSE.
// Keys come from the environment and never reach history.
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import * as path from 'node:path';
import { MockLanguageModelV3 } from 'ai/test';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSession } from '../client/session';
import type { AgentMessage } from '../pipeline/session';
import { FileResultStore } from '../stores/claim-check';
import sessionConfig from './fixtures/session.config';
import { startHarness, type Harness } from './harness';
import { asStream } from './stream-provider';

const SECRET_OPENAI = 'sk-test-openai-secret-value';
const SECRET_ANTHROPIC = 'sk-ant-test-secret-value';

interface Seen {
  path: string;
  auth: string;
  body: Record<string, unknown>;
}
const seen: Seen[] = [];
const failures = new Map<string, number>(); // model → 500s still to send

function reply(p: string, body: Record<string, any>): [number, unknown] {
  const model = String(body.model);
  if (model === 'refused') return [401, { error: { message: 'invalid api key', type: 'authentication_error' } }];
  const left = failures.get(model) ?? 0;
  if (left > 0) {
    failures.set(model, left - 1);
    return [500, { error: { message: 'overloaded', type: 'server_error' } }];
  }
  if (p === '/v1/chat/completions') {
    const tool = (body.messages as any[]).find((m) => m.role === 'tool');
    const message = tool
      ? { role: 'assistant', content: `final: ${tool.content}`, refusal: null }
      : {
          role: 'assistant',
          content: null,
          refusal: null,
          tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'note', arguments: '{"n":7}' } }],
        };
    return [
      200,
      {
        id: 'chatcmpl-1',
        object: 'chat.completion',
        created: 1,
        model,
        choices: [{ index: 0, message, finish_reason: tool ? 'stop' : 'tool_calls', logprobs: null }],
        usage: { prompt_tokens: 11, completion_tokens: 5, total_tokens: 16 },
      },
    ];
  }
  if (p === '/v1/responses') {
    const out = (body.input as any[]).find((i) => i.type === 'function_call_output');
    const output = out
      ? [
          {
            type: 'message',
            id: 'msg_1',
            role: 'assistant',
            status: 'completed',
            content: [{ type: 'output_text', text: `final: ${out.output}`, annotations: [] }],
          },
        ]
      : [
          {
            type: 'function_call',
            id: 'fc_1',
            call_id: 'call_1',
            name: 'note',
            arguments: '{"n":7}',
            status: 'completed',
          },
        ];
    return [
      200,
      {
        id: 'resp_1',
        object: 'response',
        created_at: 1,
        status: 'completed',
        model,
        output,
        usage: {
          input_tokens: 13,
          output_tokens: 6,
          total_tokens: 19,
          input_tokens_details: { cached_tokens: 0 },
          output_tokens_details: { reasoning_tokens: 0 },
        },
      },
    ];
  }
  if (p === '/v1/messages') {
    const results = (body.messages as any[]).flatMap((m) =>
      Array.isArray(m.content) ? m.content.filter((b: any) => b.type === 'tool_result') : [],
    );
    const content = results.length
      ? [{ type: 'text', text: `final: ${results[0].content[0].text}` }]
      : [
          { type: 'text', text: 'Let me note.' },
          { type: 'tool_use', id: 'toolu_1', name: 'note', input: { n: 7 } },
        ];
    return [
      200,
      {
        id: 'msg_1',
        type: 'message',
        role: 'assistant',
        model,
        content,
        stop_reason: results.length ? 'end_turn' : 'tool_use',
        stop_sequence: null,
        usage: { input_tokens: 17, output_tokens: 7 },
      },
    ];
  }
  return [404, { error: { message: `no route ${p}` } }];
}

let server: http.Server;
let h: Harness;
let store: FileResultStore;
let n = 0;

const mockPrompts: unknown[] = [];
const mock = new MockLanguageModelV3({
  doGenerate: async (options: any) => {
    mockPrompts.push(options.prompt);
    const result = options.prompt.find((m: any) => m.role === 'tool')?.content[0];
    const usage = {
      inputTokens: { total: 19, noCache: 19, cacheRead: 0, cacheWrite: 0 },
      outputTokens: { total: 3, text: 3, reasoning: 0 },
    };
    return result
      ? {
          content: [{ type: 'text', text: `final: ${JSON.stringify(result.output)}` }],
          finishReason: { unified: 'stop', raw: 'stop' },
          usage,
          warnings: [],
        }
      : {
          content: [{ type: 'tool-call', toolCallId: 'mock-1', toolName: 'note', input: '{"n":7}' }],
          finishReason: { unified: 'tool-calls', raw: 'tool_calls' },
          usage,
          warnings: [],
        };
  },
});

beforeAll(async () => {
  server = http.createServer((req, res) => {
    let raw = '';
    req.on('data', (d) => (raw += d));
    req.on('end', () => {
      const body = JSON.parse(raw || '{}');
      const auth = String(req.headers.authorization ?? req.headers['x-api-key'] ?? '');
      seen.push({ path: req.url ?? '', auth, body });
      const [status, payload] = reply(req.url ?? '', body);
      if (status === 200 && body.stream) {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.end(asStream(req.url ?? '', payload));
        return;
      }
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(payload));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  Object.assign(process.env, {
    OPENAI_API_KEY: SECRET_OPENAI,
    OPENAI_BASE_URL: `${base}/v1`,
    ANTHROPIC_API_KEY: SECRET_ANTHROPIC,
    ANTHROPIC_BASE_URL: base,
  });
  h = await startHarness('models', { ...sessionConfig, models: { ...sessionConfig.models, mock } });
  process.env.SLUICE_TEST_DIR = h.stateDir;
  store = new FileResultStore(path.join(h.stateDir, 'results'));
});
afterAll(async () => {
  await h?.close();
  server?.close();
});

async function oneTurn(model: string) {
  const s = await startSession(h.client, {
    sessionId: `models-${process.pid}-${Date.now()}-${++n}`,
    model,
    system: 'You note numbers.',
    modelCall: { initialIntervalMs: 50, maxAttempts: 3 },
  });
  const outcome = await s.send('note seven');
  if (outcome.reason === 'model-error' && !model.includes('refused')) throw new Error(outcome.error);
  const view = await s.state();
  const transcript = await s.transcript(store, view);
  await s.cancel();
  await s.result();
  const history = JSON.stringify(await h.client.temporal.workflow.getHandle(s.workflowId).fetchHistory());
  return { outcome, view, transcript, history };
}

const kinds = (t: AgentMessage[]) =>
  t.map((m) => (m.role === 'assistant' ? `assistant(${m.toolCalls.length})` : m.role));

describe('model adapters through the real SDK clients', () => {
  it('OpenAI chat completions: tool_calls in, a role:tool message out, usage per step, key from the environment', async () => {
    seen.length = 0;
    const { outcome, view, transcript, history } = await oneTurn('openai:gpt-test');
    expect(outcome).toMatchObject({ reason: 'done', steps: 2 });
    expect(outcome.text).toBe('final: {\n  "noted": 7\n}');
    expect(kinds(transcript)).toEqual(['user', 'assistant(1)', 'tool', 'assistant(0)']);
    expect(view.usage).toEqual({ inputTokens: 22, outputTokens: 10, steps: 2 });
    const second = seen[1].body as any;
    expect(seen.map((s) => s.path)).toEqual(['/v1/chat/completions', '/v1/chat/completions']);
    expect(seen[0].auth).toBe(`Bearer ${SECRET_OPENAI}`);
    expect(second.messages[0]).toEqual({ role: 'system', content: 'You note numbers.' });
    expect(second.messages.slice(2)).toEqual([
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'note', arguments: '{"n":7}' } }],
      },
      { role: 'tool', tool_call_id: 'call_1', content: '{\n  "noted": 7\n}' },
    ]);
    expect(second.tools[0].function.name).toBe('note');
    expect(second.tools[0].function.parameters.properties.n).toBeDefined();
    expect(history).not.toContain(SECRET_OPENAI);
  });

  it('OpenAI Responses: function_call in, function_call_output out', async () => {
    seen.length = 0;
    const { outcome, view } = await oneTurn('openai-responses:gpt-test');
    expect(outcome).toMatchObject({ reason: 'done', steps: 2, text: 'final: {\n  "noted": 7\n}' });
    expect(view.usage).toEqual({ inputTokens: 26, outputTokens: 12, steps: 2 });
    const input = (seen[1].body as any).input;
    expect(input.slice(-2)).toEqual([
      { type: 'function_call', call_id: 'call_1', name: 'note', arguments: '{"n":7}' },
      { type: 'function_call_output', call_id: 'call_1', output: '{\n  "noted": 7\n}' },
    ]);
  });

  it('Anthropic messages: tool_use in, tool_result out, the key never in history', async () => {
    seen.length = 0;
    const { outcome, view, history } = await oneTurn('anthropic:claude-test');
    expect(outcome).toMatchObject({ reason: 'done', steps: 2, text: 'final: {\n  "noted": 7\n}' });
    expect(view.usage).toEqual({ inputTokens: 34, outputTokens: 14, steps: 2 });
    const body = seen[1].body as any;
    expect(seen[1].auth).toContain(SECRET_ANTHROPIC);
    expect(body.system).toBe('You note numbers.');
    expect(body.messages.map((m: any) => m.role)).toEqual(['user', 'assistant', 'user']);
    expect(body.messages[2].content).toEqual([
      { type: 'tool_result', tool_use_id: 'toolu_1', content: [{ type: 'text', text: '{\n  "noted": 7\n}' }] },
    ]);
    expect(body.tools[0]).toMatchObject({ name: 'note', input_schema: { type: 'object' } });
    expect(history).not.toContain(SECRET_ANTHROPIC);
  });

  it('the AI SDK mock model: tool-call parts in, tool-result parts out', async () => {
    mockPrompts.length = 0;
    const { outcome, view } = await oneTurn('mock');
    expect(outcome).toMatchObject({ reason: 'done', steps: 2 });
    expect(view.usage).toEqual({ inputTokens: 38, outputTokens: 6, steps: 2 });
    const prompt = mockPrompts[1] as any[];
    expect(prompt[0]).toEqual({ role: 'system', content: 'You note numbers.' });
    expect(prompt.find((m) => m.role === 'tool').content[0]).toMatchObject({
      type: 'tool-result',
      toolCallId: 'mock-1',
      toolName: 'note',
      // The tool's structured value reaches the model as JSON (the batch's tool message carries it).
      output: { type: 'json', value: { noted: 7 } },
    });
  });

  it('a server error is retried per model call; a refused request ends the turn at once with the reason', async () => {
    failures.set('flaky', 1);
    seen.length = 0;
    const flaky = await oneTurn('openai:flaky');
    expect(flaky.outcome.reason).toBe('done');
    expect(seen.filter((s) => s.body.model === 'flaky')).toHaveLength(3); // 500, retried, then the second step

    seen.length = 0;
    const refused = await oneTurn('anthropic:refused');
    expect(refused.outcome).toMatchObject({ reason: 'model-error', error: expect.stringMatching(/HTTP 401/) });
    expect(seen).toHaveLength(1); // not retried
  });
});
