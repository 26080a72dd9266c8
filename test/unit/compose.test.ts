// No Docker engine runs in CI: check the compose file parses and wires the services together.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';

const root = path.join(__dirname, '..', '..');
const compose = parse(fs.readFileSync(path.join(root, 'docker-compose.yml'), 'utf8'));

describe('docker-compose.yml', () => {
  it('runs Temporal on PostgreSQL, the Web UI, a one-shot Sluice setup and Sluice workers', () => {
    expect(Object.keys(compose.services).sort()).toEqual([
      'postgresql',
      'sluice-setup',
      'sluice-worker',
      'temporal',
      'temporal-ui',
    ]);
    expect(compose.services.postgresql.image).toMatch(/^postgres:/);
    expect(compose.services.temporal.environment).toMatchObject({ DB: 'postgres12', POSTGRES_SEEDS: 'postgresql' });
    expect(compose.services.temporal.depends_on.postgresql.condition).toBe('service_healthy');
    expect(compose.services['temporal-ui'].environment.TEMPORAL_ADDRESS).toBe('temporal:7233');
  });

  it('points the worker at the compose Temporal through the standard variables', () => {
    const w = compose.services['sluice-worker'];
    expect(w.environment).toMatchObject({ TEMPORAL_ADDRESS: 'temporal:7233', TEMPORAL_NAMESPACE: 'default' });
    expect(w.command).toEqual(['npx', 'sluice', 'worker']);
    expect(w.build).toBe('.');
    expect(fs.existsSync(path.join(root, 'Dockerfile'))).toBe(true);
    expect(fs.readFileSync(path.join(root, 'Dockerfile'), 'utf8')).toMatch(/npm ci/);
  });

  it("applies the stores' schema once before any worker starts, and gives every worker the same database", () => {
    const setup = compose.services['sluice-setup'];
    const worker = compose.services['sluice-worker'];
    expect(setup.command).toEqual(['npx', 'sluice', 'setup']);
    expect(setup.depends_on.temporal.condition).toBe('service_healthy');
    expect(worker.depends_on['sluice-setup'].condition).toBe('service_completed_successfully');
    expect(worker.environment.SLUICE_DATABASE_URL).toMatch(/^postgres:\/\/.+@postgresql:5432\/sluice$/);
    expect(setup.environment.SLUICE_DATABASE_URL).toBe(worker.environment.SLUICE_DATABASE_URL);
  });
});
