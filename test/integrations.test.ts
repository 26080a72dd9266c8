// The agent SDKs' approval points answered by Sluice (client/integrations/): the real AI SDK 7
// (`needsApproval`, with its OpenAI-compatible provider) and the real OpenAI Agents SDK (tools that
// need approval, its run state across the interruption), each against a local server speaking the
// OpenAI chat completions wire format, and the real Claude Agent SDK (`canUseTool`, and a PreToolUse hook,
// its bundled Claude Code binary) against a local server speaking the Anthropic Messages API, with a worker on the run's dev server whose config has the
// apps' tools as decision-only tools. A person approves or denies through Sluice, bound to the
// arguments' digest; the SDK runs the tool only when Sluice allowed it.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { query } from '@anthropic-ai/claude-agent-sdk';
import { Agent, OpenAIProvider, Runner, RunState, setTracingDisabled, tool as agentsTool } from '@openai/agents';
import { generateText, type ModelMessage, tool as aiTool } from 'ai-v7';
import { afterAll, beforeAll, describe, expect, inject, it, vi } from 'vitest';
import { z } from 'zod';
import { sluiceApprovalResponses } from '../client/integrations/ai-sdk';
import { sluiceCanUseTool, sluicePreToolUse } from '../client/integrations/claude-agent-sdk';
import { sluiceDecideInterruptions } from '../client/integrations/openai-agents';
import { harnessTools } from '../hooks';
import type { PendingApproval } from '../pipeline/types';
import { defineConfig } from '../define/config';
import { eventually } from './eventually';
import { startFakeAnthropic } from './fixtures/anthropic-fake';
import { type FakeOpenAI, startFakeOpenAI } from './fixtures/openai-fake';
import { type Harness, startHarness } from './harness';

vi.setConfig({ testTimeout: 180_000 });

let h: Harness;
let openai: FakeOpenAI;
let baseURL: string;
/** Every chat completions request the fake provider received. */
const requests = () => openai.requests;

beforeAll(async () => {
  setTracingDisabled(true);
  // The fake provider: the user message is `{"tool": name, "args": {...}}`; the model calls that
  // tool, and once a tool message is in the conversation it answers `final: <the tool's content>`.
  openai = await startFakeOpenAI();
  baseURL = openai.baseURL;
  h = await startHarness(
    'integrations',
    defineConfig({
      // The apps' tools, decided by Sluice and run by the SDK: delete_file asks a person.
      // Bash is the Claude Agent SDK's own tool (harnessTools knows it by Claude Code's name).
      tools: harnessTools({ names: ['delete_file', 'get_time'], approval: { delete_file: 'ask', Bash: 'ask' } }),
    }),
  );
});

afterAll(async () => {
  await h?.close();
  openai?.close();
});

let sessions = 0;
const newSession = (what: string) => `${what}-${process.pid}-${Date.now()}-${++sessions}`;

/** The session's pending approval, once its batch shows it. */
function pendingIn(sessionId: string): Promise<PendingApproval> {
  return eventually(`a pending approval in session ${sessionId}`, async () =>
    (await h.client.pendingApprovals()).find((p) => p.sessionId === sessionId),
  );
}

describe('AI SDK 7: needsApproval answered by Sluice', () => {
  const ran: string[] = [];
  const model = () => createOpenAICompatible({ name: 'fake', baseURL, apiKey: 'sk-fake' }).chatModel('fake-model');
  const tools = {
    delete_file: aiTool({
      description: 'Deletes a file',
      inputSchema: z.object({ path: z.string() }),
      needsApproval: true,
      execute: async ({ path }) => {
        ran.push(path);
        return `deleted ${path}`;
      },
    }),
  };

  async function ask(sessionId: string, path: string, decide: (p: PendingApproval) => Promise<unknown>) {
    const messages: ModelMessage[] = [
      { role: 'user', content: JSON.stringify({ tool: 'delete_file', args: { path } }) },
    ];
    const first = await generateText({ model: model(), tools, messages });
    expect(first.content.some((p) => p.type === 'tool-approval-request')).toBe(true);
    const answering = sluiceApprovalResponses(first.content, { sluice: h.client, sessionId });
    const pending = await pendingIn(sessionId);
    expect(pending.toolName).toBe('delete_file');
    expect(pending.arguments).toEqual({ path });
    await decide(pending);
    const answer = await answering;
    messages.push(...first.response.messages, answer!);
    const second = await generateText({ model: model(), tools, messages });
    return { answer: answer!, second };
  }

  it('a call a person approves in Sluice runs, and the model reads its result', async () => {
    const sessionId = newSession('ai-sdk-approve');
    const { answer, second } = await ask(sessionId, 'a.txt', (p) =>
      h.client.decide({
        approvalId: p.approvalId,
        decision: 'approve',
        by: 'alice',
        argsDigest: p.argsDigest,
        workflowId: p.workflowId,
      }),
    );
    expect(answer.content).toEqual([
      expect.objectContaining({
        type: 'tool-approval-response',
        approved: true,
        reason: 'approved in Sluice by alice',
      }),
    ]);
    expect(ran).toContain('a.txt');
    expect(second.text).toBe('final: deleted a.txt');
  });

  it('a call a person denies in Sluice never runs; the model is told why', async () => {
    const sessionId = newSession('ai-sdk-deny');
    const { answer, second } = await ask(sessionId, 'b.txt', (p) =>
      h.client.decide({
        approvalId: p.approvalId,
        decision: 'deny',
        by: 'bob',
        reason: 'keep b.txt',
        argsDigest: p.argsDigest,
        workflowId: p.workflowId,
      }),
    );
    expect(answer.content[0]).toMatchObject({ approved: false });
    expect(answer.content[0].reason).toContain('keep b.txt');
    expect(ran).not.toContain('b.txt');
    expect(second.text).toContain('keep b.txt');
  });
});

describe('OpenAI Agents SDK: tool approvals answered by Sluice', () => {
  const ran: string[] = [];
  const deleteFile = agentsTool({
    name: 'delete_file',
    description: 'Deletes a file',
    parameters: z.object({ path: z.string() }),
    needsApproval: true,
    execute: async ({ path }) => {
      ran.push(path);
      return `deleted ${path}`;
    },
  });
  const agent = new Agent({ name: 'files', instructions: 'Manage files.', tools: [deleteFile], model: 'fake-model' });
  const runner = () =>
    new Runner({ modelProvider: new OpenAIProvider({ apiKey: 'sk-fake', baseURL, useResponses: false }) });

  it('approved in Sluice: the run state survives the interruption (serialized, restored), the tool runs once', async () => {
    const sessionId = newSession('agents-approve');
    const first = await runner().run(agent, JSON.stringify({ tool: 'delete_file', args: { path: 'c.txt' } }));
    expect(first.interruptions?.map((i) => i.name)).toEqual(['delete_file']);
    // The app keeps the run state (a database row) while a person decides; a new process restores it.
    const restored = await RunState.fromString(agent, first.state.toString());
    const interruptions = restored.getInterruptions();
    const deciding = sluiceDecideInterruptions({ interruptions, state: restored }, { sluice: h.client, sessionId });
    const pending = await pendingIn(sessionId);
    expect(pending.arguments).toEqual({ path: 'c.txt' });
    await h.client.decide({
      approvalId: pending.approvalId,
      decision: 'approve',
      by: 'carol',
      argsDigest: pending.argsDigest,
      workflowId: pending.workflowId,
    });
    const [verdict] = await deciding;
    expect(verdict).toMatchObject({ allowed: true, by: 'carol' });
    const second = await runner().run(agent, restored);
    expect(second.interruptions ?? []).toEqual([]);
    expect(ran.filter((p) => p === 'c.txt')).toHaveLength(1);
    expect(second.finalOutput).toBe('final: deleted c.txt');
  });

  it('denied in Sluice: the tool never runs, and the model reads Sluice’s reason', async () => {
    const sessionId = newSession('agents-deny');
    const first = await runner().run(agent, JSON.stringify({ tool: 'delete_file', args: { path: 'd.txt' } }));
    const deciding = sluiceDecideInterruptions(first, { sluice: h.client, sessionId });
    const pending = await pendingIn(sessionId);
    await h.client.decide({
      approvalId: pending.approvalId,
      decision: 'deny',
      by: 'dan',
      reason: 'not d.txt',
      argsDigest: pending.argsDigest,
      workflowId: pending.workflowId,
    });
    const [verdict] = await deciding;
    expect(verdict.allowed).toBe(false);
    const second = await runner().run(agent, first.state);
    expect(ran).not.toContain('d.txt');
    expect(String(second.finalOutput)).toContain('not d.txt');
    // What the fake provider was sent back as the tool's result is Sluice's reason.
    const toolMessages = requests()
      .flatMap((r) => r.messages)
      .filter((m) => m.role === 'tool');
    expect(toolMessages.some((m) => String(m.content).includes('not d.txt'))).toBe(true);
  });
});

describe('Claude Agent SDK: canUseTool and PreToolUse answered by Sluice', () => {
  /** Runs one query whose model calls Bash with `command`; resolves to the messages and the final result. */
  async function runQuery(sessionId: string, command: string, via: 'canUseTool' | 'PreToolUse' = 'canUseTool') {
    const fake = await startFakeAnthropic();
    const home = fs.mkdtempSync(path.join(inject('runDir'), 'claude-home-'));
    try {
      const messages: any[] = [];
      for await (const m of query({
        prompt: `RUN ${command}`,
        options: {
          cwd: home,
          model: 'claude-sonnet-4-5',
          settingSources: [],
          maxTurns: 3,
          env: {
            ...process.env,
            HOME: home,
            ANTHROPIC_BASE_URL: fake.baseURL,
            ANTHROPIC_API_KEY: 'sk-ant-fake',
            CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
          },
          ...(via === 'canUseTool'
            ? { canUseTool: sluiceCanUseTool({ sluice: h.client, sessionId }) }
            : {
                // The SDK's own rules allow Bash outright, so canUseTool would never be asked:
                // a PreToolUse hook still puts every call before Sluice.
                allowedTools: ['Bash'],
                hooks: { PreToolUse: [sluicePreToolUse({ sluice: h.client, sessionId })] },
              }),
        },
      }))
        messages.push(m);
      return { messages, result: messages.find((m) => m.type === 'result'), home };
    } finally {
      fake.close();
    }
  }

  // canUseTool is asked about calls the SDK's rules leave open; with Bash in allowedTools only a
  // PreToolUse hook still puts the call before Sluice. Either way: nothing runs before the person
  // decides, approved runs once, denied never runs and the model reads the reason.
  it.each(['canUseTool', 'PreToolUse'] as const)(
    '%s: a Bash call a person approves in Sluice runs; one denied never runs and the model reads why',
    async (via) => {
      const marks = fs.mkdtempSync(path.join(inject('runDir'), `claude-${via}-`));
      const yes = path.join(marks, 'approved');
      const no = path.join(marks, 'denied');
      const approvedSession = newSession(`claude-${via}-approve`);
      const approved = runQuery(approvedSession, `touch ${yes}`, via);
      const p1 = await pendingIn(approvedSession);
      expect(p1).toMatchObject({ toolName: 'Bash', arguments: { command: `touch ${yes}` } });
      expect(fs.existsSync(yes)).toBe(false);
      await h.client.decide({
        approvalId: p1.approvalId,
        decision: 'approve',
        by: 'erin',
        argsDigest: p1.argsDigest,
        workflowId: p1.workflowId,
      });
      const a = await approved;
      expect(fs.existsSync(yes)).toBe(true);
      expect(a.result?.subtype).toBe('success');

      const deniedSession = newSession(`claude-${via}-deny`);
      const denied = runQuery(deniedSession, `touch ${no}`, via);
      const p2 = await pendingIn(deniedSession);
      await h.client.decide({
        approvalId: p2.approvalId,
        decision: 'deny',
        by: 'frank',
        reason: 'no new files',
        argsDigest: p2.argsDigest,
        workflowId: p2.workflowId,
      });
      const d = await denied;
      expect(fs.existsSync(no)).toBe(false);
      expect(String(d.result?.result)).toContain('no new files');
    },
  );
});
