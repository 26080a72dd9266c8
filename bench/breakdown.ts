// Where a history's events and bytes go: per event type, and per payload (the JSON a workflow,
// an activity or a marker carries), divided by the batch's calls. Pure: used on fetched histories.
import { temporal } from '@temporalio/proto';
import { round } from './stats';
import type { SystemFigures } from './result';

type Breakdown = Pick<
  SystemFigures,
  'eventTypesPerCall' | 'eventBytesPerCall' | 'payloadBytesPerCall' | 'payloadKeyBytesPerCall'
>;

export function historyBreakdown(history: temporal.api.history.v1.IHistory, calls: number): Breakdown {
  const types: Record<string, number> = {};
  const eventBytes: NonNullable<SystemFigures['eventBytesPerCall']> = {};
  const payloads: Record<string, number> = {};
  const keys: Record<string, number> = {};
  for (const e of history.events ?? []) {
    const type = temporal.api.enums.v1.EventType[e.eventType ?? 0]?.replace(/^EVENT_TYPE_/, '') ?? String(e.eventType);
    const encoded = temporal.api.history.v1.HistoryEvent.encode(e).finish().length;
    types[type] = (types[type] ?? 0) + 1;
    const row = (eventBytes[type] ??= { bytes: 0, payloadBytes: 0 });
    row.bytes += encoded;
    const found = payloadsOf(e);
    // A marker of a local activity says which one in its `data` payload.
    const data = found.find(([field]) => field === 'details.data')?.[1];
    const local = e.markerRecordedEventAttributes
      ? (jsonOf(data) as { activity_type?: string })?.activity_type
      : undefined;
    const label = local ? `${type} (${local})` : type;
    for (const [field, payload] of found) {
      const size = temporal.api.common.v1.Payload.encode(payload).finish().length;
      row.payloadBytes += size;
      const name = `${label} ${field}`;
      payloads[name] = (payloads[name] ?? 0) + size;
      // The JSON inside, by top-level key: which parts of a large value weigh.
      const value = jsonOf(payload);
      if (value && typeof value === 'object' && !Array.isArray(value) && size > 200)
        for (const [k, v] of Object.entries(value)) {
          const part = `${name} .${k}`;
          keys[part] = (keys[part] ?? 0) + (JSON.stringify(v)?.length ?? 0) + k.length + 4;
          // A list of records (calls, results, events): by the records' keys too.
          if (Array.isArray(v))
            for (const item of v)
              if (item && typeof item === 'object' && !Array.isArray(item))
                for (const [ik, iv] of Object.entries(item)) {
                  const inner = `${part}[].${ik}`;
                  keys[inner] = (keys[inner] ?? 0) + (JSON.stringify(iv)?.length ?? 0) + ik.length + 4;
                }
        }
    }
  }
  const per = (x: number) => round(x / calls, 1);
  return {
    eventTypesPerCall: Object.fromEntries(Object.entries(types).map(([k, v]) => [k, round(v / calls, 2)])),
    eventBytesPerCall: Object.fromEntries(
      Object.entries(eventBytes).map(([k, v]) => [k, { bytes: per(v.bytes), payloadBytes: per(v.payloadBytes) }]),
    ),
    payloadBytesPerCall: Object.fromEntries(
      Object.entries(payloads)
        .sort((a, b) => b[1] - a[1])
        .map(([k, v]) => [k, per(v)]),
    ),
    payloadKeyBytesPerCall: Object.fromEntries(
      Object.entries(keys)
        .sort((a, b) => b[1] - a[1])
        .map(([k, v]) => [k, per(v)]),
    ),
  };
}

function jsonOf(payload: temporal.api.common.v1.IPayload | undefined): unknown {
  const encoding = payload?.metadata?.encoding;
  if (!payload?.data || !encoding || Buffer.from(encoding).toString() !== 'json/plain') return undefined;
  try {
    return JSON.parse(Buffer.from(payload.data).toString('utf8'));
  } catch {
    return undefined;
  }
}

/** Every payload in an event, named by its path without the event's attribute wrapper and list indexes. */
function payloadsOf(event: temporal.api.history.v1.IHistoryEvent): [string, temporal.api.common.v1.IPayload][] {
  const out: [string, temporal.api.common.v1.IPayload][] = [];
  const walk = (node: unknown, at: string[]) => {
    if (!node || typeof node !== 'object' || node instanceof Uint8Array) return;
    const o = node as Record<string, unknown>;
    if (o.data instanceof Uint8Array && o.metadata && typeof o.metadata === 'object') {
      out.push([at.join('.'), o as temporal.api.common.v1.IPayload]);
      return;
    }
    for (const [k, v] of Object.entries(o)) {
      if (v === null || v === undefined) continue;
      const part = /EventAttributes$/.test(k) || k === 'payloads' || /^\d+$/.test(k) ? [] : [k];
      walk(v, [...at, ...part]);
    }
  };
  walk(event, []);
  return out;
}
