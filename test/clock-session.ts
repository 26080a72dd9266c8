// A worker with one tool, `clock`, and a scripted model for it: turn one calls the clock for Oslo
// and says "Noon.", turn two says `secondTurn`. For session tests that need a real session and
// care about how it is driven, not about the tools.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { z } from 'zod';
import { defineConfig, defineTool } from '../define/config';
import { type Harness, startHarness } from './harness';
import type { SluiceStores } from '../stores/stores';

export async function startClockSession(
  name: string,
  secondTurn: string,
  opts: { stores?: SluiceStores } = {},
): Promise<{ h: Harness; script: string }> {
  const h = await startHarness(
    name,
    defineConfig({
      tools: [
        defineTool({
          name: 'clock',
          description: 'tells the time',
          input: z.object({ city: z.string() }),
          execute: ({ city }) => `noon in ${city}`,
        }),
      ],
    }),
    opts,
  );
  const script = path.join(h.stateDir, 'script.json');
  fs.writeFileSync(
    script,
    JSON.stringify({
      turns: [
        {
          steps: [
            { text: 'Looking.', calls: [{ id: 'c1', name: 'clock', args: { city: 'Oslo' } }] },
            { text: 'Noon.' },
          ],
        },
        { steps: [{ text: secondTurn }] },
      ],
    }),
  );
  return { h, script };
}
