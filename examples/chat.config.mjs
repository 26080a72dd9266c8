// The worker config for examples/chat-script.json: the two tools its scripted model calls, `note`
// (runs at once) and `publish` (a person approves it first). Plain JavaScript, so it runs with no
// TypeScript loader, in a CommonJS or an ES module app:
//   npx sluice dev --config node_modules/sluice/examples/chat.config.mjs
//   npx sluice chat --script node_modules/sluice/examples/chat-script.json    (in another terminal)
import { defineConfig, defineTool } from 'sluice';

export default defineConfig({
  tools: [
    defineTool({
      name: 'note',
      description: 'Writes a number down.',
      input: {
        type: 'object',
        properties: { n: { type: 'number' } },
        required: ['n'],
        additionalProperties: false,
      },
      execute: ({ n }) => ({ noted: n }),
    }),
    defineTool({
      name: 'publish',
      description: 'Publishes a document: a person approves it first.',
      input: {
        type: 'object',
        properties: { what: { type: 'string' } },
        required: ['what'],
        additionalProperties: false,
      },
      approval: 'ask',
      presentCall: ({ what }) => ({ title: `Publish ${what}` }),
      execute: ({ what }) => `published ${what}`,
    }),
  ],
});
