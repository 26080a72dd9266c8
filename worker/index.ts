// `sluice/worker`: hosting Sluice — the plugin for your own Worker.create, a ready worker, the
// config loader, the stores and sinks, payload encryption, and the embedded dev server.
import './needs-runtime';
export {
  createSluiceWorker,
  DEFAULT_STATE_DIR,
  DEFAULT_TASK_QUEUE,
  SluicePlugin,
  sluiceWorkflowsPath,
  WORKFLOWS_PATH,
  type SluicePluginOptions,
  type SluiceWorkerOptions,
  type WorkerDeployment,
} from './worker';
export { loadConfig, DEFAULT_CONFIG_FILE, type ConfigExport } from './load-config';
export { connect, type ConnectOptions, type Connected } from '../temporal/connection';
export { ensureSearchAttributes } from '../temporal/setup';
export { JsonlSessionLog, readSessionLog, sessionLogPath, type EventSink } from '../stores/sink';
export { FileResultStore, storedResultOf, type ResultStore, type StoredResult } from '../stores/claim-check';
export { pruneStoredResults, readStoredResult, type StoredResultsOptions } from '../stores/stored-results';
export { DEFAULT_RESULT_RETENTION_MS, parseRetention } from '../define/config';
export { PostgresStores, PostgresEventSink, PostgresResultStore, MIGRATIONS, SCHEMA_VERSION } from '../stores/postgres';
export { openStores, fileStores, postgresStores, databaseUrlFromEnv, type SluiceStores } from '../stores/stores';
export {
  CODEC_KEYS_ENV,
  codecFromEnv,
  dataConverterFromEnv,
  EncryptionCodec,
  encryptingDataConverter,
  parseCodecKeys,
  type CodecKey,
} from '../codec/payload';
export { SluiceTelemetry, telemetryFromEnv, type TelemetryOptions } from './telemetry';
export { findTemporalCli, startDevServer, type DevServer, type DevServerOptions } from '../temporal/dev-server';
