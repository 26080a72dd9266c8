// Code Mode: add `codeModeTool()` to a config's tools to offer the model `run_code`.
export { codeModeTool, type CodeModeOptions } from './run-code';
export { DEFAULT_LIMITS, runProgram, type ProgramOutcome, type SandboxLimits } from './sandbox';
