// Code Mode: add `codeModeTool()` to a config's tools to offer the model `run_code`.
import './needs-worker';
export { codeModeTool, type CodeModeOptions } from './run-code';
export { DEFAULT_LIMITS, runProgram, type ProgramOutcome, type SandboxLimits } from './sandbox';
