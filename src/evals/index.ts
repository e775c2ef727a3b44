/**
 * `cubepi/evals`: datasets, a runner that runs an agent over them live or replayed from recordings in virtual time,
 * scorers as observe-only middleware, and results as JSONL compared run to run. See `docs/evals.md`.
 * @module
 */
export {
  defineDataset,
  parseDataset,
  type EvalCase,
  type EvalDataset,
  type EvalExpected,
  type ExpectedToolCall,
} from './dataset.js';
export { loadDataset, loadRecordings } from './load-dataset.js';
export {
  EvalCaseError,
  EvalDatasetError,
  RecordingExhaustedError,
  RecordingFormatError,
  ScorerError,
} from './errors.js';
export {
  parseRecordings,
  recordProvider,
  replayProvider,
  type ProviderRecorder,
  type RecordedCall,
  type ReplayOptions,
} from './recording.js';
export {
  cost,
  exact,
  finalText,
  GRADER_PROMPT,
  graderPrompt,
  latency,
  modelGraded,
  schema,
  tokens,
  toolChoice,
  trajectory,
  turns,
  type ExactOptions,
  type MetricOptions,
  type ModelGradedOptions,
  type SafeParser,
  type Scorer,
  type ScorerEnv,
  type ScorerObserver,
  type ScoreResult,
  type TrajectoryOptions,
} from './scorers.js';
export {
  evaluate,
  summarize,
  type CaseResult,
  type CaseScore,
  type EvalAgentContext,
  type EvalErrorInfo,
  type EvalProblem,
  type EvalReport,
  type EvalSummary,
  type EvaluateOptions,
} from './evaluate.js';
export {
  compare,
  formatComparison,
  formatReport,
  formatTable,
  parseReport,
  reportToJSONL,
  type ComparisonRow,
  type EvalComparison,
} from './report.js';
