// The demo agent's tools and policy. Copy this file to start your own: `npx sluice dev` loads
// ./sluice.config.ts (or --config FILE).
import { z } from 'zod';
import { defineConfig, defineTool } from 'sluice';

const weather = defineTool({
  name: 'get_weather',
  description: 'Current weather for a city.',
  input: z.object({ city: z.string().min(1) }),
  isConcurrencySafe: () => true,
  presentCall: ({ city }) => ({ title: `Weather in ${city}` }),
  execute: ({ city }) => ({ city, tempC: city.length * 3, sky: city.length % 2 ? 'rain' : 'sun' }),
});

const quote = defineTool({
  name: 'fetch_quote',
  description: 'Latest price for a stock symbol (its upstream fails now and then).',
  input: z.object({ symbol: z.string().regex(/^[A-Z]{1,6}$/) }),
  retry: { maximumAttempts: 3, initialIntervalMs: 300 },
  execute({ symbol }, ctx) {
    if (ctx.attempt === 1) throw new Error('upstream quote service timed out');
    return { symbol, price: 42.5, attempt: ctx.attempt };
  },
});

const customer = defineTool({
  name: 'lookup_customer',
  description: 'A customer record by id.',
  input: z.object({ id: z.string() }),
  execute: ({ id }) => ({ id, name: 'Ada Lovelace', email: 'ada@example.com', apiKey: 'sk-live-7f3a9c2e1b' }),
});

const deleteFiles = defineTool({
  name: 'delete_files',
  description: 'Deletes files matching a glob.',
  input: z.object({ pattern: z.string() }),
  execute: () => 'deleted',
});

const sendEmail = defineTool({
  name: 'send_email',
  description: 'Sends an email on the user’s behalf.',
  input: z.object({ to: z.string().email(), subject: z.string(), body: z.string() }),
  approval: 'ask',
  presentCall: ({ to, subject }) => ({ title: `Send email to ${to}`, summary: subject }),
  presentResult: ({ to }, result) => ({ title: result.isError ? `Email to ${to} not sent` : `Email sent to ${to}` }),
  execute: ({ to }, ctx) => `sent to ${to} (message id ${ctx.idempotencyKey})`,
});

export default defineConfig({
  tools: [weather, quote, customer, deleteFiles, sendEmail],
  preExecute: [
    function noDestructiveTools(ctx) {
      if (ctx.call.name === 'delete_files')
        return { kind: 'deny', reason: 'deleting files is not allowed in this workspace' };
    },
  ],
  postExecute: [
    function redactSecrets(ctx) {
      const text = ctx.result.content.map((b) => (b.type === 'text' ? b.text : '')).join('');
      if (/sk-live-[0-9a-z]+/.test(text)) {
        ctx.addContext('A tool result contained a secret; it was redacted. Never ask the user for API keys.');
        return {
          action: 'accept',
          content: [{ type: 'text', text: text.replace(/sk-live-[0-9a-z]+/g, '[REDACTED]') }],
        };
      }
    },
  ],
});
