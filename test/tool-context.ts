// Calls a tool body directly, outside Temporal, with a ToolContext that keeps session state and
// recorded events the way the pipeline would between calls.
import type { EventDraft, JsonObject, SessionState } from '../pipeline/types';
import { ToolOutput, type ToolContext, type ToolDefinition } from '../define/config';
import { checkToolArgs } from '../define/tool-schema';

export interface Session {
  state: SessionState;
  events: EventDraft[];
  ctx(signal?: AbortSignal): ToolContext;
}

export function session(id = 'unit'): Session {
  const s: Session = {
    state: {},
    events: [],
    ctx(signal = new AbortController().signal) {
      return {
        call: { id: 'c', name: 't', args: {}, argsDigest: '' },
        sessionId: id,
        turn: 1,
        step: 1,
        workflowId: 'wf',
        idempotencyKey: 'wf/c',
        state: structuredClone(s.state),
        attempt: 1,
        toolNames: [],
        signal,
        heartbeat() {},
        addContext() {},
        emit(type, data) {
          s.events.push({ type, data: structuredClone(data) });
        },
        setState(ns, key, value) {
          const target = (s.state[ns] ??= {});
          if (value === null) delete target[key];
          else target[key] = structuredClone(value);
        },
      };
    },
  };
  return s;
}

export interface Outcome {
  text: string;
  isError: boolean;
  code?: string;
  meta?: JsonObject;
}

/** Parses the args with the tool's schema (as preflight does) and runs the body. */
export async function call(
  tools: ToolDefinition[],
  name: string,
  args: object,
  s: Session,
  signal?: AbortSignal,
): Promise<Outcome> {
  const tool = tools.find((t) => t.name === name);
  if (!tool) throw new Error(`no tool ${name}`);
  const parsed = checkToolArgs(tool, args);
  if (!parsed.ok) throw new Error(`invalid arguments for ${name}: ${parsed.issues}`);
  const out = await tool.execute(parsed.value, s.ctx(signal));
  if (!(out instanceof ToolOutput)) return { text: String(out), isError: false };
  const f = out.fields;
  return {
    text: (f.content ?? []).map((b) => (b.type === 'text' ? b.text : `[${b.type}]`)).join(''),
    isError: f.isError === true,
    ...(f.error?.code ? { code: f.error.code } : {}),
    ...(f.meta ? { meta: f.meta } : {}),
  };
}
