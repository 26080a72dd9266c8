// Plain text for terminals: the pending card of an ask, the completed card of a result, an audit.
// Everything shown here was written by a model or a client, so nothing reaches the terminal as a
// control sequence (ESC[2K\r would erase what is shown and print something else over it), no
// value can start a line of its own, and every cut says how much it hid.
import { factsText, shadowVerdictText } from '../pipeline/ask';
import { policyText } from '../pipeline/policy-binding';
import { describeGroupSets, type QuorumTally, tallyText } from '../pipeline/quorum';
import type { Card, PendingApproval, ToolResult } from '../pipeline/types';
import type { BatchAudit, CallAudit, DecisionAudit, SessionAudit, StageRun } from './audit';

/** An approval card shows this much of each field; a person decides on it, so it is generous. */
const MAX_FIELD = 2000;

/**
 * C0 controls but newline and tab, DEL, C1 controls (0x9b is CSI on some terminals), and the
 * bidirectional overrides that reorder what is displayed ("Trojan Source").
 */
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it looks for
const CONTROLS = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;
const escaped = (c: string) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`;

/**
 * Text made safe for a terminal: every control character but newline and tab written out as a
 * visible `\u001b`-style escape (also valid inside JSON strings, so JSON output stays JSON).
 */
export function terminalSafe(s: string): string {
  return s.replace(CONTROLS, escaped);
}

/** One line of a card: newlines and tabs escaped too, so a value cannot forge a line of its own. */
function line(s: string): string {
  return terminalSafe(s).replace(/[\n\t]/g, escaped);
}

export function renderPendingCard(p: PendingApproval, now = Date.now()): string {
  if (p.kind === 'reconcile') return renderReconcileCard(p);
  const left = Math.max(0, Math.round((Date.parse(p.expiresAt) - now) / 1000));
  const lines = [
    `┌ approval ${p.approvalId}`,
    `│ ${p.card.title}${p.card.summary ? ` — ${p.card.summary}` : ''}`,
    ...fieldLines(p.card.fields ?? (p.arguments as Card['fields'])).map((l) => `│   ${l}`),
    `│ tool ${p.toolName}, call ${p.callId}${p.parentCallId ? ` (inside run_code ${p.parentCallId})` : ''}; session ${p.sessionId} turn ${p.turn} step ${p.step}`,
    ...(p.reason ? [`│ why: ${p.reason}`] : []),
    ...(p.quorum ? [`│ quorum ${quorumLine(p.quorum)}`] : []),
    ...(p.policy ? [`│ policy: ${policyText(p.policy)}`] : []),
    ...(p.facts && Object.keys(p.facts).length ? [`│ the policy saw: ${factsText(p.facts)}`] : []),
    ...(p.shadow ? [`│ shadow: ${shadowVerdictText(p.shadow)}`] : []),
    `│ denied automatically in ${left}s; args digest ${p.argsDigest}`,
    `└ npx sluice approve ${p.approvalId}    |    npx sluice deny ${p.approvalId} --reason "..."`,
  ];
  return lines.map(line).join('\n');
}

/** "1 of 2: alice approved", who may decide, and who may not (the session's user). */
export function quorumLine(q: QuorumTally): string {
  const sets = q.groupSets ?? (q.groups?.length ? [q.groups] : []);
  return `${tallyText(q)}${sets.length ? `; verified approvers in ${describeGroupSets(sets)}` : ''}${q.sessionUser ? `; not ${q.sessionUser} (the session's user)` : ''}`;
}

/** An unknown outcome waiting for a person: what was lost, and the three ways to settle it. */
function renderReconcileCard(p: PendingApproval): string {
  const lines = [
    `┌ OUTCOME UNKNOWN ${p.approvalId}`,
    `│ ${p.card.title}${p.card.summary ? ` — ${p.card.summary}` : ''}`,
    ...fieldLines(p.card.fields ?? (p.arguments as Card['fields'])).map((l) => `│   ${l}`),
    `│ tool ${p.toolName}, call ${p.callId}${p.parentCallId ? ` (inside run_code ${p.parentCallId})` : ''}; session ${p.sessionId} turn ${p.turn} step ${p.step}`,
    ...(p.reason ? [`│ what happened: ${p.reason}`] : []),
    `│ waiting since ${p.askedAt}; args digest ${p.argsDigest}`,
    `└ npx sluice reconcile ${p.approvalId} --done --evidence "..."  |  --not-done  |  --run-again   (--reason "...")`,
  ];
  return lines.map(line).join('\n');
}

export function renderResultCard(name: string, callId: string, result: ToolResult): string {
  const mark = result.isError ? '✗' : '✓';
  const text = result.content.map((b) => (b.type === 'text' ? b.text : `[image ${b.mimeType}]`)).join('');
  return line(`${mark} ${name} (${callId}): ${clip(text, 200)}`);
}

/**
 * A field per line; a value's own lines follow as continuation lines (a multi-line command reads
 * as written, and none of its lines can pass for part of the card). Long runs of spaces, which
 * could push the tail of a command out of sight, are counted instead of shown.
 */
function fieldLines(fields: Card['fields'] | undefined): string[] {
  if (!fields) return [];
  return Object.entries(fields).flatMap(([k, v]) => {
    const s = (typeof v === 'string' ? v : JSON.stringify(v)).replace(/[ \t]{8,}/g, (m) => ` [${m.length} spaces] `);
    const shown = s.length > MAX_FIELD ? `${s.slice(0, MAX_FIELD)}${cutNote(s.length - MAX_FIELD)}` : s;
    const [first, ...rest] = shown.split(/\r?\n/);
    return [`${k}: ${first}`, ...rest.map((l) => `${' '.repeat(k.length + 2)}┆ ${l}`)];
  });
}

function cutNote(n: number): string {
  return `… [${n} more character${n === 1 ? '' : 's'} cut; --json shows all]`;
}

/** An audit as a timeline a person reads top to bottom: each batch, each call, each stage. */
export function renderAudit(audit: SessionAudit): string {
  return audit.batches.map(renderBatchAudit).join('\n\n');
}

/** Text cut to n characters on one line, saying how much was cut. */
export function clip(s: string, n: number): string {
  const one = s.replace(/\s+/g, ' ').trim();
  return one.length > n ? `${one.slice(0, n)}${cutNote(one.length - n)}` : one;
}

function renderBatchAudit(b: BatchAudit): string {
  const lines = [`batch ${b.workflowId} · session ${b.sessionId} · turn ${b.turn} · step ${b.step}`];
  const took = b.closedAt ? ` (${seconds(Date.parse(b.closedAt) - Date.parse(b.startedAt))})` : '';
  lines.push(
    `  ${b.status}: started ${b.startedAt}${b.closedAt ? `, closed ${b.closedAt}${took}` : ''}${b.failure ? ` — ${b.failure}` : ''}`,
  );
  for (const c of b.calls) callLines(lines, c);
  if (b.decisions.length) {
    lines.push('', '  decisions received');
    for (const d of b.decisions) lines.push(decisionLine(d));
  }
  if (b.contexts.length) {
    lines.push('', '  contexts injected after the batch');
    for (const c of b.contexts) lines.push(`    ${c.source ?? 'user'}: ${clip(c.content, 160)}`);
  }
  return lines.map(line).join('\n');
}

/** One call, stage by stage: pre-execute, approval, guards, body, post-execute, result, reconciliation. */
function callLines(lines: string[], c: CallAudit): void {
  lines.push('', `  call ${c.callId} ${c.name} ${clip(c.arguments ?? '', 140)}`);
  if (c.preExecute) stage(lines, 'pre-execute', c.preExecute, gateText(c.preExecute));
  if (c.approval) approvalLines(lines, c.approval);
  if (c.guards) stage(lines, 'guards', c.guards, gateText(c.guards));
  if (c.body) {
    const retried = c.body.attempts > 1 ? `on attempt ${c.body.attempts}` : 'on the first attempt';
    stage(
      lines,
      'body',
      c.body,
      `${c.body.outcome === 'completed' ? 'completed' : c.body.outcome} ${retried}${c.body.candidate?.isError ? ' (an error result)' : ''}`,
    );
    for (const f of c.body.failures)
      lines.push(row('', `attempt ${f.attempt} failed: ${clip(f.message, 160)}${f.type ? ` [${f.type}]` : ''}`));
  }
  if (c.settle) {
    const what = c.settle.rewritten
      ? `rewrote the result: ${changed(c.settle.before?.text ?? '', c.settle.after?.text ?? '')}`
      : 'kept the result';
    stage(lines, 'post-execute', c.settle, what);
  }
  if (c.result) {
    const card = c.result.card
      ? `   [card: ${c.result.card.title}${c.result.card.summary ? ` — ${c.result.card.summary}` : ''}]`
      : '';
    lines.push(
      row(
        'result',
        `${c.result.isError ? '✗' : '✓'} ${clip(c.result.text, 160)}${c.result.error?.code ? ` [${c.result.error.code}]` : ''}${card}`,
      ),
    );
  } else lines.push(row('result', 'none yet'));
  if (c.reconciliation) reconcileLines(lines, c.reconciliation);
}

/** The ask and its lifecycle and decision, or the session grant that let the call run unasked. */
function approvalLines(lines: string[], a: NonNullable<CallAudit['approval']>): void {
  if (a.grantId && !a.askedAt && !a.grant) {
    lines.push(row('approval', `not asked: allowed by session grant ${a.grantId}${a.by ? ` (given by ${a.by})` : ''}`));
    return;
  }
  lines.push(
    row(
      'approval',
      `asked ${clock(a.askedAt)}${a.reason ? ` — ${a.reason}` : ''} (id ${a.id}${a.expiresAt ? `, deny timeout ${clock(a.expiresAt)}` : ''})`,
    ),
  );
  for (const l of a.lifecycle ?? []) lines.push(row('', `${l.text} at ${clock(l.at)}`));
  if (!a.outcome) return;
  const who = a.expired
    ? 'expired: nobody decided before the deny timeout'
    : `${a.outcome}${a.by ? ` by ${a.by}` : ''}`;
  lines.push(
    row(
      '',
      `${who}${a.decisionReason && !a.expired ? ` — ${a.decisionReason}` : ''} at ${clock(a.decidedAt)}${a.latencyMs !== undefined ? `, ${seconds(a.latencyMs)} after the ask` : ''}`,
    ),
  );
  if (a.grant) lines.push(row('', `session grant ${a.grant.id}: ${a.grant.text}`));
  else if (a.grantId) lines.push(row('', `covered by session grant ${a.grantId}`));
}

/** An unknown outcome's card: opened, waiting or reconciled (by whom, with what evidence), refused attempts. */
function reconcileLines(lines: string[], r: NonNullable<CallAudit['reconciliation']>): void {
  lines.push(row('reconcile', `opened ${clock(r.openedAt)} (id ${r.id}): ${clip(r.problem, 160)}`));
  if (r.status === 'waiting') lines.push(row('', `waiting for a person: npx sluice reconcile ${r.id}`));
  else
    lines.push(
      row(
        '',
        `reconciled ${r.status === 'not-done' ? 'not done' : r.status === 'ran-again' ? 'by running it again' : 'done'} by ${r.by ?? '?'}${r.reason ? `: ${r.reason}` : ''} at ${clock(r.decidedAt)}`,
      ),
    );
  if (r.evidence) lines.push(row('', `evidence: ${clip(r.evidence, 300)}`));
  if (r.rerun) lines.push(row('', `run again: ${r.rerun.isError ? '✗' : '✓'} ${clip(r.rerun.text, 160)}`));
  for (const a of r.attempts.filter((x) => x.result === 'refused'))
    lines.push(row('', `refused ${a.decision ?? '?'} by ${a.by ?? '?'}: ${clip(a.problem ?? '', 140)}`));
}

function decisionLine(d: DecisionAudit): string {
  const what = `${d.via} ${d.decision ?? '?'} ${d.approvalId ?? '?'}${d.by ? ` by ${d.by}` : ''}${d.reason ? ` ("${clip(d.reason, 60)}")` : ''}${d.argsDigest ? ` digest ${d.argsDigest.slice(0, 19)}…` : ''}`;
  const fate =
    d.result === 'refused'
      ? `refused: ${clip(d.problem ?? '', 140)}`
      : d.result === 'applied'
        ? `applied${d.outcome ? ` (${d.outcome})` : ''}`
        : d.result;
  return `    ${clock(d.at)} ${what} → ${fate}`;
}

function stage(lines: string[], name: string, run: StageRun, what: string): void {
  lines.push(
    row(
      name,
      run.outcome === 'completed' || name === 'body'
        ? what
        : `${run.outcome}${run.failures.length ? `: ${clip(run.failures[run.failures.length - 1].message, 140)}` : ''}`,
    ),
  );
  for (const e of run.emitted) for (const text of emittedText(e).split('\n')) lines.push(row('', text));
}

/**
 * One emitted event; a policy decision reads as the rule that made it, whole (with Cedar's @id),
 * and the session facts it read on a line of their own.
 */
function emittedText(e: { type: string; data: Record<string, unknown> }): string {
  const d = e.data;
  if (e.type === 'policy/decided') {
    const facts = Object.entries((d.facts ?? {}) as Record<string, unknown>);
    return `policy ${d.decision} by ${d.file}:${d.line} (${d.source}${d.policyId ? ` ${d.policyId}` : ''}) \`${clip(String(d.rule), 160)}\`${d.digest ? ` ${String(d.digest).slice(0, 19)}…` : ''}${facts.length ? `\n  facts read: ${facts.map(([k, v]) => `${k}=${JSON.stringify(v)}`).join(', ')}` : ''}`;
  }
  if (e.type === 'policy/rechecked') {
    const was = (d.askedUnder as { digest?: string } | undefined)?.digest;
    const now = (d.now as { digest?: string } | undefined)?.digest;
    return `policy re-checked after the approval: ${d.outcome}${was && now ? ` (${was.slice(0, 19)}… → ${now.slice(0, 19)}…)` : ''} — ${clip(String(d.note ?? ''), 200)}`;
  }
  if (e.type === 'policy/shadow')
    return `policy shadow: ${shadowText('enforced', d.enforced)}, ${shadowText('candidate', d.candidate)}${d.differs ? ' — they differ' : ''}`;
  return `${e.type} ${clip(JSON.stringify(d), 140)}`;
}

/** One side of a shadow verdict (hooks/policy-shadow.ts): its decision and the rule's place. */
function shadowText(label: string, v: unknown): string {
  const x = (v ?? {}) as { decision?: string; file?: string; line?: number; facts?: unknown };
  return `${label} ${x.decision ?? '?'}${x.file ? ` by ${x.file}:${x.line}` : ''}${x.facts ? ` facts ${JSON.stringify(x.facts)}` : ''}`;
}

function gateText(s: { gate?: string; message?: string; code?: string }): string {
  return `${s.gate ?? '?'}${s.code ? ` [${s.code}]` : ''}${s.message ? `: ${clip(s.message, 140)}` : ''}`;
}

function row(label: string, text: string): string {
  return `    ${label.padEnd(13)} ${text}`;
}

function clock(iso: string | undefined): string {
  return iso ? iso.slice(11, 23) : '?';
}

function seconds(ms: number): string {
  return `${(ms / 1000).toFixed(ms < 10_000 ? 2 : 1)}s`;
}

/** The part of a text that a rewrite changed, with a little context: `…before… → …after…`. */
function changed(before: string, after: string): string {
  const a = before.replace(/\s+/g, ' ').trim();
  const b = after.replace(/\s+/g, ' ').trim();
  let start = 0;
  while (start < a.length && start < b.length && a[start] === b[start]) start++;
  let end = 0;
  while (end < a.length - start && end < b.length - start && a[a.length - 1 - end] === b[b.length - 1 - end]) end++;
  const from = Math.max(0, start - 20);
  const cut = (s: string) =>
    `${from > 0 ? '…' : ''}${clip(s.slice(from, s.length - Math.max(0, end - 20)), 70)}${end > 20 ? '…' : ''}`;
  return `${cut(a)} → ${cut(b)}`;
}
