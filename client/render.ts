// Plain-text cards for terminals: the pending card of an ask, the completed card of a result.
import type { Card, PendingApproval, ToolResult } from '../pipeline/types';

const MAX_FIELD = 160;

export function renderPendingCard(p: PendingApproval, now = Date.now()): string {
  const left = Math.max(0, Math.round((Date.parse(p.expiresAt) - now) / 1000));
  const lines = [
    `┌ approval ${p.approvalId}`,
    `│ ${p.card.title}${p.card.summary ? ` — ${p.card.summary}` : ''}`,
    ...fieldLines(p.card.fields ?? (p.arguments as Card['fields'])),
    `│ tool ${p.toolName}, call ${p.callId}${p.parentCallId ? ` (inside run_code ${p.parentCallId})` : ''}; session ${p.sessionId} turn ${p.turn} step ${p.step}`,
    ...(p.reason ? [`│ why: ${p.reason}`] : []),
    `│ denied automatically in ${left}s; args digest ${p.argsDigest}`,
    `└ npx sluice approve ${p.approvalId}    |    npx sluice deny ${p.approvalId} --reason "..."`,
  ];
  return lines.join('\n');
}

export function renderResultCard(name: string, callId: string, result: ToolResult, card?: Card): string {
  const mark = result.isError ? '✗' : '✓';
  const text = result.content.map((b) => (b.type === 'text' ? b.text : `[image ${b.mimeType}]`)).join('');
  const oneLine = text.replace(/\s+/g, ' ').trim();
  const head = card ? `${card.title}${card.summary ? ` — ${card.summary}` : ''}` : name;
  return `${mark} ${head} (${callId}): ${oneLine.length > 200 ? `${oneLine.slice(0, 200)}…` : oneLine}`;
}

function fieldLines(fields: Card['fields'] | undefined): string[] {
  if (!fields) return [];
  return Object.entries(fields).map(([k, v]) => {
    const s = typeof v === 'string' ? v : JSON.stringify(v);
    return `│   ${k}: ${s.length > MAX_FIELD ? `${s.slice(0, MAX_FIELD)}…` : s}`;
  });
}
