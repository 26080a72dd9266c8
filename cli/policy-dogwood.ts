// `sluice policy explain` and `sluice policy check` for a workspace's Dogwood set (`.dogwood` with
// its `scope.json`, as policyRules reads it): explain asks the reference about each call, as the
// worker does, and folds its verdict in with the files' (deny > ask > allow); check has the
// reference validate the set and runs the policy tests that name `"source": "dogwood"` against it.
import { readDogwoodPolicySet, validateDogwoodPolicySet } from '../hooks/dogwood';
import { type DogwoodJudge, dogwoodJudge, workspaceDogwood } from '../hooks/dogwood-policy';
import type { PolicyExplanation, PolicyTest } from '../hooks/policy';
import { STRICTNESS } from '../hooks/policy-types';
import type { SessionRecord } from '../pipeline/facts';
import type { JsonObject } from '../pipeline/types';

/** The workspace's Dogwood set, when it has one. */
export function workspaceJudge(workspace: string): DogwoodJudge | undefined {
  const o = workspaceDogwood(workspace);
  return o ? dogwoodJudge(o, true) : undefined;
}

/** `x` with the Dogwood set's verdict on the call among its sources, and the winner again. */
export async function explainWithDogwood(
  judge: DogwoodJudge,
  x: PolicyExplanation,
  call: { tool: string; args: JsonObject; index: number },
  history: { record: SessionRecord; turn?: number },
): Promise<PolicyExplanation> {
  if (!judge.judges(call.tool)) return x;
  const v = await judge.decide({
    tool: call.tool,
    callId: `explain-${call.index}`,
    args: call.args,
    turn: history.turn ?? 0,
    record: history.record,
  });
  const file = String(v.at.file);
  const line = Number(v.at.line);
  const source = {
    format: 'dogwood' as const,
    files: judge.files().map((f) => ({ label: f.label, digest: f.digest })),
    decision: v.decision,
    rule: {
      id: `${file}:${line}`,
      format: 'dogwood' as const,
      file,
      digest: judge.files().find((f) => f.label === file)?.digest ?? '',
      line,
      text: String(v.at.rule),
      decision: v.decision,
      ...(typeof v.at.policyId === 'string' ? { policyId: v.at.policyId } : {}),
      ...(typeof v.at.message === 'string' ? { message: v.at.message } : {}),
    },
    ...(v.note ? { note: v.note } : {}),
  };
  const stricter = x.decision === 'none' || STRICTNESS[v.decision] > STRICTNESS[x.decision];
  return stricter
    ? { decision: v.decision, winner: source, sources: [...x.sources, source] }
    : { ...x, sources: [...x.sources, source] };
}

interface DogwoodCheck {
  /** The reference's errors when the set does not validate. */
  invalid?: string;
  ran: number;
  failures: { test: PolicyTest; index: number; why: string }[];
}

/** Validates the set with the reference and runs the tests that name it, each as the first call of a session. */
export async function checkWorkspaceDogwood(
  workspace: string,
  judge: DogwoodJudge,
  tests: readonly PolicyTest[],
): Promise<DogwoodCheck> {
  try {
    await validateDogwoodPolicySet(readDogwoodPolicySet(`${workspace}/.dogwood`, workspace));
  } catch (e) {
    return { invalid: (e as Error).message, ran: 0, failures: [] };
  }
  const failures: DogwoodCheck['failures'] = [];
  let ran = 0;
  for (const [index, test] of tests.entries()) {
    if (test.source !== 'dogwood') continue;
    ran++;
    const v = await judge.decide({
      tool: test.tool,
      callId: `test-${index}`,
      args: test.args ?? {},
      turn: 1,
      record: { calls: [], now: Date.now(), reach: 'session' },
    });
    const got = judge.judges(test.tool) ? v.decision : 'none';
    if (got !== test.expect)
      failures.push({
        test,
        index,
        why: `expected ${test.expect}, the Dogwood set says ${got}${v.note ? ` (${v.note})` : ''}`,
      });
    else if (test.rule && v.at.policyId !== test.rule && v.at.rule !== test.rule)
      failures.push({
        test,
        index,
        why: `expected the policy ${JSON.stringify(test.rule)} to decide, ${JSON.stringify(v.at.policyId ?? v.at.rule)} did`,
      });
  }
  return { ran, failures };
}
