// The foreground commands (the stdio and HTTP gateways, `sluice ui`, `sluice hook --port`) run
// until they are told to stop, then close what they opened. One wait for that, so each stops on
// the same signals and none leaves a listener behind that would swallow a later signal.

/**
 * Resolves on the first SIGTERM or SIGINT, or once any of `also` settles (e.g. stdin ending),
 * whichever comes first. Its signal listeners are taken off then: while the caller closes what
 * it opened, a second signal ends the process the default way instead of being ignored.
 */
export function untilStopSignal(...also: PromiseLike<unknown>[]): Promise<void> {
  return new Promise<void>((resolve) => {
    const stop = () => {
      process.off('SIGTERM', stop);
      process.off('SIGINT', stop);
      resolve();
    };
    process.on('SIGTERM', stop);
    process.on('SIGINT', stop);
    for (const p of also) p.then(stop, stop);
  });
}
