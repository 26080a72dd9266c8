// A workflow history to and from the JSON of `temporal workflow show -o json`, with the protobufjs
// copy that built @temporalio/proto's types. @temporalio/common's own helpers (lib/proto-utils)
// check `type instanceof Type` against the protobufjs copy *they* resolve, and npm gives
// @temporalio/common and @temporalio/proto a nested protobufjs 8 each in an app where
// @grpc/proto-loader's protobufjs 7 takes the top level: every export, replay and audit of a file
// then failed with "type must be a Type". Asking @temporalio/proto's folder for protobufjs gets the
// one copy its types are instances of, however npm laid the app out.
import * as path from 'node:path';
import type { temporal } from '@temporalio/proto';

type History = temporal.api.history.v1.IHistory;

interface ProtoType {
  fromObject(o: unknown): unknown;
}
interface ProtoRoot {
  lookupType(name: string): ProtoType;
}
interface ProtoJson {
  fromJson(type: ProtoType, json: unknown, options?: { ignoreUnknownFields?: boolean }): unknown;
  toJson(type: ProtoType, message: unknown): unknown;
}

let loaded: { historyType: ProtoType; protojson: ProtoJson } | undefined;

/** The History type and the protojson of the same protobufjs, loaded on first use. */
function proto(): { historyType: ProtoType; protojson: ProtoJson } {
  if (loaded) return loaded;
  const root = require('@temporalio/proto') as ProtoRoot;
  const protoDir = path.dirname(require.resolve('@temporalio/proto/package.json'));
  const protojson = require(require.resolve('protobufjs/ext/protojson', { paths: [protoDir] })) as ProtoJson;
  loaded = { historyType: root.lookupType('temporal.api.history.v1.History'), protojson };
  return loaded;
}

// Histories from newer servers or SDKs carry fields this one does not know: skip them, as the
// Temporal SDK does.
const PARSE_OPTIONS = { ignoreUnknownFields: true };

/** A history from its JSON (Temporal CLI, UI or `sluice export`), older enum spellings included. */
export function historyFromJson(json: unknown): History {
  const h = json as { events?: unknown };
  if (typeof json !== 'object' || json === null || !Array.isArray(h.events))
    throw new TypeError('Invalid history, expected an object with an array of events');
  const { historyType, protojson } = proto();
  const history = protojson.fromJson(
    historyType,
    { events: (h.events as Record<string, unknown>[]).map(fixEvent) },
    PARSE_OPTIONS,
  );
  if (history === null) throw new TypeError('Invalid history');
  return history as History;
}

/** A history as the JSON the Temporal CLI and UI export (pretty-printed, no trailing newline). */
export function historyToJsonText(history: History): string {
  const { historyType, protojson } = proto();
  return JSON.stringify(protojson.toJson(historyType, historyType.fromObject(history)), null, 2);
}

// Older exports (the UI's, tctl's) write enums as `WorkflowExecutionStarted` where proto JSON wants
// `EVENT_TYPE_WORKFLOW_EXECUTION_STARTED`; the same repair @temporalio/common's historyFromJSON does.
const constantCase = (s: string) => s.replace(/[^\b][A-Z]/g, (m) => `${m[0]}_${m[1]}`).toUpperCase();

function fixEnum(obj: Record<string, unknown> | undefined, attr: string, prefix: string): Record<string, unknown> {
  const v = obj?.[attr];
  if (typeof v !== 'string' || !v) return {};
  return { [attr]: v.startsWith(prefix) ? v : `${prefix}_${constantCase(v)}` };
}

function fixEvent(e: Record<string, unknown>): Record<string, unknown> {
  const type = Object.keys(e).find((k) => k.endsWith('EventAttributes'));
  if (!type) throw new TypeError(`Missing attributes in history event: ${JSON.stringify(e)}`);
  const a = (e[type] ?? {}) as Record<string, Record<string, unknown> | undefined>;
  const taskQueue = a.taskQueue && {
    taskQueue: { ...a.taskQueue, ...fixEnum(a.taskQueue, 'kind', 'TASK_QUEUE_KIND') },
  };
  const childFailure = a.childWorkflowExecutionFailureInfo && {
    childWorkflowExecutionFailureInfo: {
      ...a.childWorkflowExecutionFailureInfo,
      ...fixEnum(a.childWorkflowExecutionFailureInfo, 'retryState', 'RETRY_STATE'),
    },
  };
  return {
    ...e,
    ...fixEnum(e, 'eventType', 'EVENT_TYPE'),
    [type]: {
      ...a,
      ...taskQueue,
      ...fixEnum(a, 'parentClosePolicy', 'PARENT_CLOSE_POLICY'),
      ...fixEnum(a, 'workflowIdReusePolicy', 'WORKFLOW_ID_REUSE_POLICY'),
      ...fixEnum(a, 'initiator', 'CONTINUE_AS_NEW_INITIATOR'),
      ...fixEnum(a, 'retryState', 'RETRY_STATE'),
      ...childFailure,
    },
  };
}
