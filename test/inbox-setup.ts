// A test file's harness with an inbox on its task queue and a headless Chromium to open it in:
// the setup the approval tests that click through the inbox page share.
import type { BrowserContext } from 'playwright-core';
import { afterAll, beforeAll } from 'vitest';
import { startInbox, type Inbox } from '../servers/inbox/server';
import type { SluiceConfig } from '../define/config';
import { launchBrowser } from './chromium';
import { startHarness, type Harness } from './harness';

export interface InboxSetup {
  h: Harness;
  /** Scoped to the harness's task queue, re-reading every 300 ms. */
  inbox: Inbox;
  browser: BrowserContext;
  /** Closes the browser, then the inbox, then the harness. */
  close(): Promise<void>;
}

/** Starts all three; when one fails to start, closes those already started and throws. */
export async function startInboxSetup(
  name: string,
  config: SluiceConfig,
  harnessOpts?: Parameters<typeof startHarness>[2],
): Promise<InboxSetup> {
  let h: Harness | undefined;
  let inbox: Inbox | undefined;
  let closeBrowser: (() => Promise<void>) | undefined;
  const close = async () => {
    await closeBrowser?.();
    await inbox?.close();
    await h?.close();
  };
  try {
    h = await startHarness(name, config, harnessOpts);
    inbox = await startInbox({ client: h.client, port: 0, refreshMs: 300, taskQueue: h.taskQueue });
    const launched = await launchBrowser();
    closeBrowser = launched.close;
    return { h, inbox, browser: launched.browser, close };
  } catch (err) {
    await close();
    throw err;
  }
}

/**
 * A test file's beforeAll/afterAll for startInboxSetup: `take` receives the setup once it is up
 * (assign its parts to the file's variables); afterAll closes it.
 */
export function useInboxSetup(name: string, config: SluiceConfig, take: (setup: InboxSetup) => void): void {
  let setup: InboxSetup | undefined;
  beforeAll(async () => {
    setup = await startInboxSetup(name, config);
    take(setup);
  });
  afterAll(() => setup?.close());
}
