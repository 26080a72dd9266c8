// The set-up the session page tests share (test/session-page*.test.ts): a harness on its own task
// queue, the stores the inbox reads, an inbox scoped to that queue, and, where a file clicks
// through the page, a headless Chromium; with `provider`, the local provider that streams. Each
// file states only what differs (its config, the inbox's options, the stores); the sessions it
// starts are cancelled and everything closed in reverse order when the file ends.
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll } from 'vitest';
import { startInbox, type Inbox, type InboxOptions } from '../servers/inbox/server';
import { type SessionHandle, type SessionRequest, startSession } from '../client/session';
import type { SluiceConfig } from '../define/config';
import { openStores, type SluiceStores } from '../stores/stores';
import { launchBrowser } from './chromium';
import { poll } from './eventually';
import sessionConfig from './fixtures/session.config';
import { startHarness, type Harness } from './harness';
import { startStreamProvider, type StreamProvider } from './stream-provider';

export interface SessionPageOptions {
  /** The worker's config (default: the session fixture's tools and scripted model). */
  config?: SluiceConfig;
  harness?: Parameters<typeof startHarness>[2];
  /** The store the inbox reads (default: the harness's state folder). */
  inboxStore?: () => SluiceStores;
  /** More inbox options than client, port, refreshMs (300), taskQueue and store. */
  inbox?: Partial<InboxOptions>;
  /** Start a headless Chromium (default true). */
  browser?: boolean;
  /** Start the local provider that streams and point OPENAI_BASE_URL and ANTHROPIC_BASE_URL at it. */
  provider?: boolean;
}

export interface SessionPageSetup {
  h: Harness;
  stores: SluiceStores;
  inbox: Inbox;
  /** Undefined with `browser: false`. */
  browser: BrowserContext;
  /** Undefined without `provider: true`. */
  provider: StreamProvider;
  /** Starts a session of this file (cancelled when the file ends); model default 'scripted'. */
  start(model?: string, extra?: Partial<SessionRequest>): Promise<SessionHandle>;
  /** The session's page in a new tab, once its event stream is live; `name` typed as the approver. */
  open(s: SessionHandle, name?: string): Promise<Page>;
  /** The session's event stream (server-sent events). */
  eventsUrl(sessionId: string): string;
}

/**
 * The file's beforeAll and afterAll for the session page set-up. `options` may be a function, run
 * in beforeAll (keys, proxies and databases a file makes first). The returned object's fields are
 * filled once beforeAll has run; `take` receives it then too, for files that keep their own names.
 */
export function useSessionPage(
  name: string,
  options: SessionPageOptions | (() => Promise<SessionPageOptions>) = {},
  take?: (setup: SessionPageSetup) => void,
): SessionPageSetup {
  const sessions: SessionHandle[] = [];
  const closing: (() => Promise<unknown>)[] = [];
  let n = 0;
  const setup = {
    async start(model = 'scripted', extra: Partial<SessionRequest> = {}) {
      const s = await startSession(setup.h.client, {
        sessionId: `${name}-${process.pid}-${Date.now()}-${++n}`,
        model,
        modelCall: { initialIntervalMs: 50, maxAttempts: 3 },
        ...extra,
      });
      sessions.push(s);
      return s;
    },
    async open(s: SessionHandle, approver?: string) {
      const page = await setup.browser.newPage();
      await page.goto(`${setup.inbox.url}sessions/${encodeURIComponent(s.sessionId)}`);
      if (approver) await page.fill('#approver', approver);
      await poll(() => page.locator('#conn').textContent(), { timeoutMs: 90_000, intervalMs: 250 }).toBe('live');
      return page;
    },
    eventsUrl: (sessionId: string) => `${setup.inbox.url}api/sessions/${encodeURIComponent(sessionId)}/events`,
  } as SessionPageSetup;

  beforeAll(async () => {
    const o = typeof options === 'function' ? await options() : options;
    if (o.provider) {
      setup.provider = await startStreamProvider();
      closing.push(() => setup.provider.close());
      Object.assign(process.env, {
        OPENAI_API_KEY: `sk-test-${name}`,
        OPENAI_BASE_URL: `${setup.provider.base}/v1`,
        ANTHROPIC_API_KEY: `sk-ant-test-${name}`,
        ANTHROPIC_BASE_URL: setup.provider.base,
      });
    }
    setup.h = await startHarness(name, o.config ?? sessionConfig, o.harness);
    closing.push(() => setup.h.close());
    process.env.SLUICE_TEST_DIR = setup.h.stateDir;
    setup.stores = o.inboxStore?.() ?? openStores({ stateDir: setup.h.stateDir });
    closing.push(() => setup.stores.close());
    setup.inbox = await startInbox({
      client: setup.h.client,
      port: 0,
      refreshMs: 300,
      taskQueue: setup.h.taskQueue,
      store: setup.stores,
      ...o.inbox,
    });
    closing.push(() => setup.inbox.close());
    if (o.browser !== false) {
      const launched = await launchBrowser();
      setup.browser = launched.browser;
      closing.push(launched.close);
    }
    take?.(setup);
  }, 180_000);

  afterAll(async () => {
    for (const s of sessions)
      await s
        .cancel()
        .then(() => s.result())
        .catch(() => undefined);
    // What started last closes first: the browser, the inbox, the stores, the harness, the provider.
    for (const close of closing.reverse()) await close().catch(() => undefined);
  });
  return setup;
}
