/**
 * `@llmcp/trainer/testing`: the trainer's fault switches, for negative-control
 * tests only. Each one breaks a run on purpose (a resume that drops a piece of
 * its state, a publication that "crashes" at a chosen stage) so that a test
 * can show the check that catches it; a slot-read hook stands for a live run
 * publishing a slot in the middle of a read. Nothing here belongs in a real
 * run, so none of it is on the main entry.
 */
export { resumeRunWithFaults } from './run.ts';
export type { ResumeFaults } from './run.ts';
export type { EngineFaults } from './llmcp-engine.ts';
export type { PublishHook, PublishStage, SlotReadHooks } from './run-directory.ts';
export { publishDuringSlotReads, setSlotReadHooks } from './run-directory.ts';
export { forgeManifest } from './manifest-forgery.ts';
export type { ForgedSignature } from './manifest-forgery.ts';
