// Signal, query and update definitions, made here rather than by @temporalio/workflow's
// defineSignal / defineQuery / defineUpdate: the client side imports these names too, and a
// client-only app has no @temporalio/workflow (it is an optional peer, so an app on an older
// Temporal never gets a second, newer copy). The objects are the ones the SDK's functions return.
import type { QueryDefinition, SignalDefinition, UpdateDefinition } from '@temporalio/common';

export function defineSignal<Args extends unknown[] = [], Name extends string = string>(
  name: Name,
): SignalDefinition<Args, Name> {
  return { type: 'signal', name } as SignalDefinition<Args, Name>;
}

export function defineQuery<Ret, Args extends unknown[] = [], Name extends string = string>(
  name: Name,
): QueryDefinition<Ret, Args, Name> {
  return { type: 'query', name } as QueryDefinition<Ret, Args, Name>;
}

export function defineUpdate<Ret, Args extends unknown[] = [], Name extends string = string>(
  name: Name,
): UpdateDefinition<Ret, Args, Name> {
  return { type: 'update', name } as UpdateDefinition<Ret, Args, Name>;
}
