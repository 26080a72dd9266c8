// A headless Chromium for the inbox tests (playwright-core drives the system's Chromium).
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { chromium, type BrowserContext } from 'playwright-core';

export function chromiumPath(): string {
  const fromEnv = process.env.CHROMIUM_PATH;
  if (fromEnv) return fromEnv;
  try {
    return execFileSync('sh', ['-c', 'command -v chromium || command -v chromium-browser'], { encoding: 'utf8' })
      .trim()
      .split('\n')[0];
  } catch {
    throw new Error(
      'the inbox tests need Chromium: install it with `apt-get install -y chromium`, or set CHROMIUM_PATH',
    );
  }
}

/** A browser on a throwaway profile; close() also removes the profile. */
export async function launchBrowser(): Promise<{ browser: BrowserContext; close(): Promise<void> }> {
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-chromium-'));
  const browser = await chromium.launchPersistentContext(profile, {
    executablePath: chromiumPath(),
    headless: true,
    viewport: { width: 1100, height: 900 },
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
    ],
  });
  return {
    browser,
    async close() {
      await browser.close();
      fs.rmSync(profile, { recursive: true, force: true });
    },
  };
}
