// A local fake provider that streams: OpenAI chat completions, OpenAI Responses and Anthropic
// Messages, each in its own SSE wire format, so the real SDK clients parse what they parse from
// the real services. A model name says what the stream does (the test decides by name):
//
//   <anything>       the answer's text in pieces, then the end
//   gate-*           the first piece, then waits for release(name) before the rest
//   cut-*            first request: a piece, then the connection is cut mid-answer; later requests: whole
//   badjson-*        first request: a piece, then a data line that is not JSON; later requests: whole
//   hang-*           first request: a piece, then nothing, never an end; later requests: whole
//   huge-*           first request: 10 MB of text in pieces; later requests: whole
//   tool-*           a tool call (note {"n": 7}) whose arguments stream in pieces; after its result, text
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';

export const ANSWER = ['Hello', ' from', ' a', ' streamed', ' answer.'];

export interface StreamProvider {
  base: string;
  /** Releases a gated stream (gate-*): it sends the rest. */
  release(model: string): void;
  /** Requests per model so far. */
  requests(model: string): number;
  close(): Promise<void>;
}

type Wire = 'chat' | 'responses' | 'anthropic';

/** The events of one answer in a wire format: text pieces, or one tool call with argument pieces. */
function frames(wire: Wire, model: string, pieces: string[], tool?: { args: string[] }): string[][] {
  const sse = (o: object, event?: string) => `${event ? `event: ${event}\n` : ''}data: ${JSON.stringify(o)}\n\n`;
  // Each element is what is written at once; the first is the head, the last the end.
  if (wire === 'chat') {
    const chunk = (delta: object, finish: string | null = null, usage?: object) =>
      sse({
        id: 'chatcmpl-s',
        object: 'chat.completion.chunk',
        created: 1,
        model,
        choices: finish === 'usage' ? [] : [{ index: 0, delta, finish_reason: finish, logprobs: null }],
        ...(usage ? { usage } : {}),
      });
    const usage = { prompt_tokens: 11, completion_tokens: 5, total_tokens: 16 };
    const body = tool
      ? [
          chunk({
            role: 'assistant',
            tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'note', arguments: '' } }],
          }),
          ...tool.args.map((a) => chunk({ tool_calls: [{ index: 0, function: { arguments: a } }] })),
        ]
      : [chunk({ role: 'assistant', content: '' }), ...pieces.map((p) => chunk({ content: p }))];
    return [
      [body[0] + body[1]],
      ...body.slice(2).map((b) => [b]),
      [chunk({}, tool ? 'tool_calls' : 'stop'), chunk({}, 'usage', usage), 'data: [DONE]\n\n'],
    ];
  }
  if (wire === 'responses') {
    const text = pieces.join('');
    const item = tool
      ? {
          type: 'function_call',
          id: 'fc_1',
          call_id: 'call_1',
          name: 'note',
          arguments: tool.args.join(''),
          status: 'completed',
        }
      : {
          type: 'message',
          id: 'msg_1',
          role: 'assistant',
          status: 'completed',
          content: [{ type: 'output_text', text, annotations: [] }],
        };
    const response = (status: string, output: object[]) => ({
      id: 'resp_s',
      object: 'response',
      created_at: 1,
      status,
      model,
      output,
      usage: {
        input_tokens: 13,
        output_tokens: 6,
        total_tokens: 19,
        input_tokens_details: { cached_tokens: 0 },
        output_tokens_details: { reasoning_tokens: 0 },
      },
    });
    let sn = 0;
    const ev = (o: Record<string, unknown>) => sse({ ...o, sequence_number: sn++ }, String(o.type));
    const head = [
      ev({ type: 'response.created', response: response('in_progress', []) }),
      ev({
        type: 'response.output_item.added',
        output_index: 0,
        item: tool
          ? { ...item, arguments: '', status: 'in_progress' }
          : { ...item, content: [], status: 'in_progress' },
      }),
    ];
    const body = tool
      ? tool.args.map((a) =>
          ev({ type: 'response.function_call_arguments.delta', item_id: 'fc_1', output_index: 0, delta: a }),
        )
      : pieces.map((p) =>
          ev({
            type: 'response.output_text.delta',
            item_id: 'msg_1',
            output_index: 0,
            content_index: 0,
            delta: p,
            logprobs: [],
          }),
        );
    return [
      [head.join('') + (body[0] ?? '')],
      ...body.slice(1).map((b) => [b]),
      [
        ev({ type: 'response.output_item.done', output_index: 0, item }),
        ev({ type: 'response.completed', response: response('completed', [item]) }),
      ],
    ];
  }
  const ev = (o: Record<string, unknown>) => sse(o, String(o.type));
  const start = ev({
    type: 'message_start',
    message: {
      id: 'msg_s',
      type: 'message',
      role: 'assistant',
      model,
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: { input_tokens: 17, output_tokens: 1 },
    },
  });
  const body = tool
    ? [
        ev({
          type: 'content_block_start',
          index: 0,
          content_block: { type: 'tool_use', id: 'toolu_1', name: 'note', input: {} },
        }),
        ...tool.args.map((a) =>
          ev({ type: 'content_block_delta', index: 0, delta: { type: 'input_json_delta', partial_json: a } }),
        ),
      ]
    : [
        ev({ type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }),
        ...pieces.map((p) => ev({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: p } })),
      ];
  return [
    [start + body[0] + (body[1] ?? '')],
    ...body.slice(2).map((b) => [b]),
    [
      ev({ type: 'content_block_stop', index: 0 }),
      ev({
        type: 'message_delta',
        delta: { stop_reason: tool ? 'tool_use' : 'end_turn', stop_sequence: null },
        usage: { output_tokens: 7 },
      }),
      ev({ type: 'message_stop' }),
    ],
  ];
}

export async function startStreamProvider(
  opts: {
    pieceMs?: number;
    /** The answer's pieces for a model of no special kind (default ANSWER); a bench asks for longer ones. */
    answer?: string[];
  } = {},
): Promise<StreamProvider> {
  const gates = new Map<string, () => void>();
  const waiting = new Map<string, Promise<void>>();
  const counts = new Map<string, number>();
  const gate = (model: string) => {
    if (!waiting.has(model)) waiting.set(model, new Promise<void>((r) => gates.set(model, r)));
    return waiting.get(model)!;
  };
  const sockets = new Set<import('node:net').Socket>();
  const server = http.createServer((req, res) => {
    let raw = '';
    req.on('data', (d) => (raw += d));
    req.on('end', async () => {
      const body = JSON.parse(raw || '{}');
      const model = String(body.model);
      const n = (counts.get(model) ?? 0) + 1;
      counts.set(model, n);
      const wire: Wire = req.url?.endsWith('/chat/completions')
        ? 'chat'
        : req.url?.endsWith('/responses')
          ? 'responses'
          : 'anthropic';
      const hasResult = JSON.stringify(body).match(/"(tool_result|function_call_output)"|"role":"tool"/);
      const pieces = model.startsWith('tool-') && hasResult ? ['Noted', ' seven.'] : (opts.answer ?? ANSWER);
      const tool = model.startsWith('tool-') && !hasResult ? { args: ['{"n"', ': ', '7}'] } : undefined;
      let out = frames(wire, model, pieces, tool);
      const first = n === 1;
      if (model.startsWith('huge-') && first) {
        const mb = 'x'.repeat(64 * 1024);
        out = frames(
          wire,
          model,
          Array.from({ length: 160 }, () => mb),
        );
      }
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      const pause = () => new Promise((r) => setTimeout(r, opts.pieceMs ?? 5));
      for (let i = 0; i < out.length; i++) {
        if (res.destroyed) return;
        if (i === 1 && first) {
          if (model.startsWith('cut-')) return void res.destroy();
          if (model.startsWith('badjson-')) return void res.end('data: {"choices": [{"delta": {"content": "oops"\n\n');
          if (model.startsWith('hang-')) return; // never another byte, never an end
        }
        if (i === 1 && model.startsWith('gate-')) await gate(model);
        for (const f of out[i]) res.write(f);
        await pause();
      }
      res.end();
    });
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    release(model) {
      gate(model);
      gates.get(model)!();
    },
    requests: (model) => counts.get(model) ?? 0,
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise((r) => server.close(r));
    },
  };
}

/**
 * A whole JSON answer as the same answer streamed (SSE in the path's wire format), for fake
 * providers written before the adapters streamed: the SDKs now always ask with `stream: true`.
 */
export function asStream(urlPath: string, payload: any): string {
  const sse = (o: object, event?: string) => `${event ? `event: ${event}\n` : ''}data: ${JSON.stringify(o)}\n\n`;
  if (urlPath.endsWith('/chat/completions')) {
    const choice = payload.choices[0];
    const base = { id: payload.id, object: 'chat.completion.chunk', created: payload.created, model: payload.model };
    const chunk = (delta: object, finish: string | null = null) =>
      sse({ ...base, choices: [{ index: 0, delta, finish_reason: finish, logprobs: null }] });
    return [
      chunk({ role: 'assistant', content: '' }),
      ...(choice.message.content ? [chunk({ content: choice.message.content })] : []),
      ...(choice.message.tool_calls ?? []).map((t: any, index: number) =>
        chunk({ tool_calls: [{ index, id: t.id, type: 'function', function: t.function }] }),
      ),
      chunk({}, choice.finish_reason),
      sse({ ...base, choices: [], usage: payload.usage }),
      'data: [DONE]\n\n',
    ].join('');
  }
  if (urlPath.endsWith('/responses')) {
    let sn = 0;
    const ev = (o: Record<string, unknown>) => sse({ ...o, sequence_number: sn++ }, String(o.type));
    return [
      ev({ type: 'response.created', response: { ...payload, status: 'in_progress', output: [] } }),
      ...payload.output.flatMap((item: any, i: number) => [
        ev({ type: 'response.output_item.added', output_index: i, item }),
        ...(item.type === 'message'
          ? item.content.map((c: any) =>
              ev({
                type: 'response.output_text.delta',
                item_id: item.id,
                output_index: i,
                content_index: 0,
                delta: c.text,
                logprobs: [],
              }),
            )
          : []),
        ev({ type: 'response.output_item.done', output_index: i, item }),
      ]),
      ev({ type: 'response.completed', response: payload }),
    ].join('');
  }
  const ev = (o: Record<string, unknown>) => sse(o, String(o.type));
  return [
    ev({
      type: 'message_start',
      message: {
        ...payload,
        content: [],
        stop_reason: null,
        usage: { input_tokens: payload.usage.input_tokens, output_tokens: 1 },
      },
    }),
    ...payload.content.flatMap((b: any, index: number) => [
      ev({
        type: 'content_block_start',
        index,
        content_block: b.type === 'text' ? { type: 'text', text: '' } : { ...b, input: {} },
      }),
      ev({
        type: 'content_block_delta',
        index,
        delta:
          b.type === 'text'
            ? { type: 'text_delta', text: b.text }
            : { type: 'input_json_delta', partial_json: JSON.stringify(b.input) },
      }),
      ev({ type: 'content_block_stop', index }),
    ]),
    ev({
      type: 'message_delta',
      delta: { stop_reason: payload.stop_reason, stop_sequence: null },
      usage: { output_tokens: payload.usage.output_tokens },
    }),
    ev({ type: 'message_stop' }),
  ].join('');
}
