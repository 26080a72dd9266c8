// Shadow mode: a candidate policy set judged beside the enforced one on every call, its would-be
// decision on record and never enforced — a way to calibrate a policy on real traffic before it
// decides anything (AgentCore calls it LOG_ONLY). The handler records a `policy/shadow` event with
// both verdicts (the rule and the session facts each read) and abstains, so the enforced policy
// alone decides; `sluice policy diff` lists the calls where the two differ.
//
//   const enforced = policyRules({ workspace });
//   const candidate = policyRules({ workspace: 'policies/next' });
//   defineConfig({ tools, preExecute: [shadowPolicy({ enforced, candidate }), ...enforced.preExecute] });
//
// Put it first: a pre-execute handler that denies ends the stage, and the shadow must see every call.
import type { Named, PreExecuteHandler } from '../define/config';
import type { JsonObject } from '../pipeline/types';
import type { PolicyExplanation, PolicyRules } from './policy';
import { shellParserReady } from './shell';

/** A verdict as the record keeps it: the decision, the rule that made it, the facts its source read. */
export interface RecordedVerdict extends JsonObject {
  decision: 'allow' | 'ask' | 'deny' | 'none';
}

/** What one policy set said of a call, in the shape `policy/decided` records a rule. */
export function verdictRecord(x: PolicyExplanation): RecordedVerdict {
  const w = x.winner;
  const rule = w?.rule;
  if (!rule || x.decision === 'none') return { decision: 'none' };
  return {
    decision: x.decision,
    source: rule.format,
    file: rule.file,
    line: rule.line,
    rule: rule.text,
    ...(rule.policyId ? { policyId: rule.policyId } : {}),
    ...(rule.message ? { message: rule.message } : {}),
    ...(w.facts ? { facts: w.facts } : {}),
  };
}

/** The pre-execute handler that records the candidate's verdict beside the enforced one's, and decides nothing. */
export function shadowPolicy({
  enforced,
  candidate,
}: {
  enforced: PolicyRules;
  candidate: PolicyRules;
}): Named<PreExecuteHandler> {
  return {
    name: 'policy shadow',
    readsFacts: (toolName) => enforced.readsFacts(toolName) || candidate.readsFacts(toolName),
    handler: async (ctx) => {
      if (!ctx.tool) return undefined;
      await shellParserReady();
      const call = {
        toolName: ctx.tool.name,
        aliases: ctx.tool.aliases,
        args: ctx.call.args,
        session: ctx.sessionId,
        callId: ctx.call.id,
        turn: ctx.turn,
        ...(ctx.record ? { record: ctx.record } : {}),
      };
      const now = verdictRecord(enforced.explain(call));
      const would = verdictRecord(candidate.explain(call));
      ctx.emit('policy/shadow', {
        turn: ctx.turn,
        callId: ctx.call.id,
        enforced: now,
        candidate: would,
        differs: now.decision !== would.decision,
        policyDigest: enforced.digest,
        candidateDigest: candidate.digest,
      });
      return undefined;
    },
  };
}
