/**
 * `rxheal/chaos`: prove that your agent heals. Fault schedules as fast-check arbitraries
 * ({@link faults}), applied in virtual time to your own models and tools ({@link chaosModel},
 * {@link chaosTool}); {@link checkHealing} runs your agent under many of them and checks the
 * healing invariants, shrinking a failure to a minimal schedule shown as a marble diagram with a
 * spec that replays it; incidents recorded from a real run's events or log lines replay as
 * deterministic tests. Needs `fast-check` (an optional peer dependency of rxheal).
 *
 * @module
 */
export { faults, schedule, modelFault, toolFault, DEFAULT_MODEL_WEIGHTS, DEFAULT_TOOL_WEIGHTS, SCHEDULE_NAMES } from './faults.js';
export type { FaultBounds, ModelFaultWeights, ScheduleArbitrary, ScheduleOptions, ToolFaultWeights } from './faults.js';
export { ChaosInputError, compactSchedule, describeFault, validateSchedule } from './schedule.js';
export type { FaultSchedule, ModelFault, ToolFault } from './schedule.js';
export { BAD_TOOL_ARGS, IS_ERROR_RESULT, chaosModel, chaosTool } from './inject.js';
export type { ChaosOptions } from './inject.js';
export { ChaosRecorder } from './recorder.js';
export type { AttemptOutcome, ModelAttempt, RecordedEvent, ToolExecution } from './recorder.js';
export { DOCUMENTED_ERRORS, builtinInvariants, checkInvariants } from './invariants.js';
export type { ChaosEnd, ChaosRun, ErrorKind, Invariant, InvariantOptions, Violation } from './invariants.js';
export { replaySchedule } from './run.js';
export type { AgentFactory, Chaos, ReplayOptions } from './run.js';
export { incidentSpec, marbleDiagram, replaySpec } from './report.js';
export type { IncidentSpecNaming, ReplaySpecNaming } from './report.js';
export { HealingError, assertHealing, checkHealing } from './check.js';
export type { CheckHealingOptions, HealingFailure, HealingReport } from './check.js';
export { INCIDENT_VERSION, healingStep, incidentLine, recordIncident, replayIncident } from './incident.js';
export type { Incident, IncidentReplay, RecordIncidentOptions } from './incident.js';
