/**
 * `@llmcp/format/node`: file I/O for LLMCP35 v1 checkpoints on Node.js —
 * atomic save (../SPEC.md §11), streaming validated load, and a generic atomic
 * file writer. Everything else lives in the browser-safe main entry.
 */
export { saveCheckpointAtomic } from './node/save.ts';
export type { SaveOptions, SaveResult } from './node/save.ts';
export { loadCheckpoint } from './node/load.ts';
export type { LoadOptions } from './node/load.ts';
export { writeFileAtomic, temporaryName, nodeFileSystem, TEMP_NAME_ATTEMPTS } from './node/atomic-write.ts';
export type { AtomicFileHandle, AtomicFileSystem, AtomicWriteOptions } from './node/atomic-write.ts';
