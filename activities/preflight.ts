// Stages 4 and 6 worker-side: the pre-execute waterfall (opened by the tool's own approval
// policy) and the monotonic guards. An extension's throw becomes a `failed` gate here; only a
// crash of the worker itself makes Temporal retry the stage.
import { shadowVerdictOf } from '../pipeline/ask';
import { foldPreDecision, parseGuardAnswer, parsePreDecision } from '../pipeline/fold';
import { ErrorCodes } from '../pipeline/errors';
import { type CallRef, type Gate, genericCard, type PreflightResult, type ToolProfile } from '../pipeline/stages';
import type { WireCallRef } from '../codec/stages';
import type { AskTerms, Card, JsonObject, PolicyBinding, PreDecision, ShadowVerdict } from '../pipeline/types';
import {
  handlerOf,
  mayReadFacts,
  policyOf,
  policyRecheckOf,
  type SluiceConfig,
  type ToolDefinition,
} from '../define/config';
import { runInOrder, threwMessage } from './extensions';
import { withFactsScope } from './facts-scope';
import { type Collector, checkCard, parseArgs, profileOf, type StageKit } from './kit';

export function preflightStages(kit: StageKit) {
  return {
    /** Calls in model order, one at a time, stopping after any call the next must wait for. */
    async preflightInOrder(refs: WireCallRef[]): Promise<PreflightResult[]> {
      const results: PreflightResult[] = [];
      for (const { argsDigest: _sent, ...unkeyed } of refs) {
        // The digest approvers see and decisions are bound to is keyed here, where the key is
        // (codec/args-digest.ts), whatever the workflow sent. It goes back only for a call the
        // workflow binds to it; every other stage keys the arguments again where it runs.
        const ref = await withFactsScope(
          kit,
          kit.keyed(unkeyed),
          readsFactsBefore(kit.config, toolNameOf(kit, unkeyed.name)),
        );
        const result = await preflightOne(kit, ref);
        results.push(bindsDigest(result) ? { ...result, argsDigest: ref.argsDigest } : result);
        if (!admitsNext(result)) break;
      }
      return results;
    },

    async guards(sent: WireCallRef) {
      const ref = await withFactsScope(
        kit,
        kit.keyed(sent),
        readsFactsInGuards(kit.config, toolNameOf(kit, sent.name), sent),
      );
      const c = kit.collector(ref, 'guard');
      const changed = ref.askedUnder ? await recheckPolicy(kit.config, c, ref.askedUnder) : undefined;
      const gate = changed ?? (await guardChain(kit.config, c));
      return { callId: ref.callId, gate, contexts: c.contexts, events: c.events };
    },
  };
}

/** Whether an extension of stage 4 (the waterfall, then the guards) may read the call's facts. */
function readsFactsBefore(config: SluiceConfig, toolName: string): boolean {
  return mayReadFacts(config.preExecute, toolName) || mayReadFacts(config.guards, toolName);
}

/** Whether stage 6 may read the call's facts: a guard, or the policy judging an approved call again under other files. */
function readsFactsInGuards(config: SluiceConfig, toolName: string, ref: WireCallRef): boolean {
  const policy = ref.askedUnder ? policyOf(config.preExecute) : undefined;
  return mayReadFacts(config.guards, toolName) || (policy?.readsFacts(toolName, ref.askedUnder) ?? false);
}

/** The tool's own name (a policy judges by it), for a call that names it or an alias of it. */
function toolNameOf(kit: StageKit, called: string): string {
  return kit.tool(called)?.name ?? called;
}

/** One call's stage 4: its tool and arguments, its card and profile, the waterfall, then (when nobody is asked) the guards. */
async function preflightOne(kit: StageKit, ref: CallRef): Promise<PreflightResult> {
  const c = kit.collector(ref, 'pre-execute');
  const tool = kit.tool(ref.name);
  if (!tool) return unknownTool(kit, ref);
  const parsed = parseArgs(tool, ref);
  const card = presentCallCard(tool, ref, parsed.ok ? parsed.args : ref.args);
  if (!parsed.ok) return { callId: ref.callId, gate: parsed.gate, card, contexts: [], events: [] };
  const { config } = kit;
  const profile = await profileOf(
    tool,
    parsed.args,
    config.approvers?.require === true,
    (config.notifiers?.length ?? 0) > 0,
  );
  const gate = (await waterfallGate(config, tool, profile, c)) ?? (await guardChain(config, c));
  return { callId: ref.callId, gate, card, profile, contexts: c.contexts, events: c.events };
}

function unknownTool(kit: StageKit, ref: CallRef): PreflightResult {
  return {
    callId: ref.callId,
    gate: {
      kind: 'denied',
      code: ErrorCodes.UNKNOWN_TOOL,
      message: `unknown tool ${JSON.stringify(ref.name)}; the available tools are: ${kit.toolNames.join(', ')}`,
    },
    card: genericCard(ref.name, ref.args),
    contexts: [],
    events: [],
  };
}

/**
 * The pre-execute waterfall's gate: failed, denied or ask; undefined when it allows the call,
 * which the guards then judge.
 */
async function waterfallGate(
  config: SluiceConfig,
  tool: ToolDefinition,
  profile: ToolProfile,
  c: Collector,
): Promise<Gate | undefined> {
  // A tool's own policy opens the waterfall: `ask` asks a person, `never` asks and is refused
  // at once (the asked/decided pair stays in the record), `auto` leaves it to the extensions.
  let decision: PreDecision =
    profile.approval === 'ask'
      ? { kind: 'ask', reason: `${tool.name} asks for approval before it runs` }
      : profile.approval === 'never'
        ? { kind: 'ask', reason: `${tool.name} is never approved` }
        : { kind: 'allow' };
  const threw = await runInOrder(
    config.preExecute,
    'pre-execute handler',
    async (h, who) => {
      decision = foldPreDecision(decision, parsePreDecision(await handlerOf(h)(c.ctx), who));
      return decision.kind === 'deny' ? 'stop' : 'next';
    },
    c,
  );
  if (threw) return { kind: 'failed', code: ErrorCodes.PIPELINE_FAILED, message: threwMessage(threw) };
  // Assigned in the steps above, which TypeScript's narrowing does not see.
  const decided = decision as PreDecision;
  if (decided.kind === 'deny') return { kind: 'denied', code: ErrorCodes.DENIED, message: decided.reason };
  // The ask whole: its terms (AskTerms: the reason, and the policy that judged the call, which
  // the guards after the decision judge again if the worker that runs it reads different files)
  // and its approvers; this worker's body activity can run the guards after a yes (guardThenExecuteBody).
  // What the policies recorded goes with the ask, unless a handler's own ask said it.
  if (decided.kind === 'ask') return { ...policySaw(c), ...decided, guardsInBody: true };
  return undefined;
}

/**
 * What the policies recorded of the call in this stage, for the person asked: the facts the deciding
 * policy read (policy/decided) and a shadow candidate's verdict (policy/shadow), the last of each.
 */
function policySaw(c: Collector): Pick<AskTerms, 'facts' | 'shadow'> {
  const mine = c.events.filter((e) => e.data.callId === c.ctx.call.id);
  const decided = mine.filter((e) => e.type === 'policy/decided' && e.data.facts).at(-1);
  const shadow = mine.filter((e) => e.type === 'policy/shadow').at(-1)?.data.candidate as ShadowVerdict | undefined;
  return {
    ...(decided ? { facts: decided.data.facts as AskTerms['facts'] } : {}),
    ...(shadow && typeof shadow.decision === 'string' ? { shadow: shadowVerdictOf(shadow) } : {}),
  };
}

/** Stage 6: the guards in order, the first to answer with a reason denies the call. */
async function guardChain(config: SluiceConfig, c: Collector): Promise<Gate> {
  let gate: Gate = { kind: 'dispatch' };
  const threw = await runInOrder(
    config.guards,
    'guard',
    async (g, who) => {
      const reason = parseGuardAnswer(await handlerOf(g)(c.ctx), who);
      if (!reason) return 'next';
      gate = { kind: 'denied', code: ErrorCodes.DENIED, message: reason };
      return 'stop';
    },
    c,
  );
  return threw ? { kind: 'failed', code: ErrorCodes.PIPELINE_FAILED, message: threwMessage(threw) } : gate;
}

/**
 * A person approved a call asked under `askedUnder`; this worker may read other policy files (a
 * new deployment, an edited file). The policy extension judges the call again; a worker with
 * no policy extension at all has nothing that could deny it, and says so on record.
 */
async function recheckPolicy(config: SluiceConfig, c: Collector, askedUnder: PolicyBinding): Promise<Gate | undefined> {
  const recheck = policyRecheckOf(config.preExecute);
  if (!recheck) {
    c.ctx.emit('policy/rechecked', {
      turn: c.ctx.turn,
      callId: c.ctx.call.id,
      outcome: 'no-policy',
      askedUnder: askedUnder as unknown as JsonObject,
      note: 'this worker loads no policy files: nothing judges the call again, it runs on the approval',
    });
    return undefined;
  }
  try {
    const denial = await recheck(c.ctx, askedUnder);
    return denial ? { kind: 'denied', code: ErrorCodes.DENIED, message: denial } : undefined;
  } catch (err) {
    // Fail closed: an approval given under another policy does not hold unless this one is read.
    return {
      kind: 'failed',
      code: ErrorCodes.PIPELINE_FAILED,
      message: `the policy re-check after the approval threw: ${(err as Error)?.message ?? String(err)}`,
    };
  }
}

/**
 * Whether the workflow binds anything to the call's keyed digest: an ask (the pending approval,
 * the decisions and a grant's use carry it) or a body that must not run twice (a lost attempt's
 * reconcile card shows it, and a signed identity for it is bound to it).
 */
function bindsDigest(r: PreflightResult): boolean {
  return r.gate.kind === 'ask' || (r.gate.kind === 'dispatch' && r.profile?.atMostOnce === true);
}

/**
 * Whether the next call's preflight may run right after this one's without anything in between:
 * yes after a denial or a concurrency-safe dispatch; no after an ask (a person decides first) or
 * an exclusive call (its body runs alone, and may change the session state).
 */
function admitsNext(r: PreflightResult): boolean {
  return (
    r.gate.kind === 'denied' ||
    r.gate.kind === 'failed' ||
    (r.gate.kind === 'dispatch' && r.profile?.concurrencySafe === true)
  );
}

function presentCallCard(tool: ToolDefinition, ref: CallRef, args: unknown): Card {
  if (!tool.presentCall) return genericCard(ref.name, ref.args);
  try {
    return checkCard(tool.presentCall(args)) ?? genericCard(ref.name, ref.args);
  } catch {
    return genericCard(ref.name, ref.args);
  }
}
