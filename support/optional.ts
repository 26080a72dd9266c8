// Optional parts load where they are used, so an app installs only what it uses: PostgreSQL
// stores (pg), traces and metrics (OpenTelemetry, prom-client), MCP servers, the code-mode
// sandbox (QuickJS), the embedded dev server (@temporalio/testing), TypeScript configs (tsx), the
// worker itself (@temporalio/worker). Each is an optional peer dependency of Sluice; a feature
// used without its package fails at once with one line naming what to install.

/** A feature was used whose package the app has not installed. */
export class MissingPackageError extends Error {
  readonly code = 'SLUICE_MISSING_PACKAGE';
  constructor(
    readonly packages: string[],
    feature: string,
  ) {
    super(`${feature} needs ${packages.join(' and ')}, which is not installed: npm install ${packages.join(' ')}`);
    this.name = 'MissingPackageError';
  }
}

/** Whether `err` is Node's "Cannot find module" for `pkg` itself (not for something pkg needs). */
function isMissing(err: unknown, pkg: string): boolean {
  const e = err as NodeJS.ErrnoException | undefined;
  if (e?.code !== 'MODULE_NOT_FOUND' && e?.code !== 'ERR_MODULE_NOT_FOUND') return false;
  const first = String(e.message).split('\n')[0];
  return first.includes(`'${pkg}'`) || first.includes(`'${pkg}/`) || first.includes(`"${pkg}"`);
}

/**
 * `load()` (a `require` of `pkg`), or a MissingPackageError naming `pkg` and `also` (packages that
 * go with it) when the app has not installed it.
 */
export function requireOptional<T>(pkg: string, feature: string, load: () => T, also: string[] = []): T {
  try {
    return load();
  } catch (err) {
    if (isMissing(err, pkg) || also.some((p) => isMissing(err, p)))
      throw new MissingPackageError([pkg, ...also], feature);
    throw err;
  }
}

/** As requireOptional, for an `import()`. */
export async function importOptional<T>(
  pkg: string,
  feature: string,
  load: () => Promise<T>,
  also: string[] = [],
): Promise<T> {
  try {
    return await load();
  } catch (err) {
    if (isMissing(err, pkg) || also.some((p) => isMissing(err, p)))
      throw new MissingPackageError([pkg, ...also], feature);
    throw err;
  }
}
