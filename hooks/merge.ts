// The answers of all hooks that ran at one point become one, the most restrictive winning:
// deny > ask > allow for PreToolUse, any block for the post events. Reasons keep config order.
import type { PostVerdict } from '../pipeline/fold';
import type { PreDecision } from '../pipeline/types';
import type { HookVerdict } from './dialects';

export function mergePre(verdicts: readonly HookVerdict[]): PreDecision | undefined {
  const reasons = (d: HookVerdict['decision']) =>
    verdicts.filter((v) => v.decision === d && v.reason).map((v) => v.reason!);
  if (verdicts.some((v) => v.decision === 'deny')) return { kind: 'deny', reason: reasons('deny').join('; ') };
  if (verdicts.some((v) => v.decision === 'ask')) {
    const r = reasons('ask');
    return r.length ? { kind: 'ask', reason: r.join('; ') } : { kind: 'ask' };
  }
  if (verdicts.some((v) => v.decision === 'allow')) return { kind: 'allow' };
  return undefined;
}

export function mergePost(verdicts: readonly HookVerdict[]): PostVerdict | undefined {
  const blocks = verdicts.filter((v) => v.decision === 'block');
  if (!blocks.length) return undefined;
  return { action: 'block', feedback: blocks.map((v) => v.reason!).join('\n') };
}
