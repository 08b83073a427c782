/**
 * `@llmcp/format/node`: file I/O for LLMCP35 v1 checkpoints on Node.js —
 * atomic save (../SPEC.md §11), streaming validated load, a generic atomic
 * file writer (which replaces only regular files), and the input rule for any
 * file read as data (a regular file, opened without blocking, of bounded
 * size). Everything else lives in the browser-safe main entry.
 */
export { saveCheckpointAtomic } from './node/save.ts';
export type { SaveOptions, SaveResult } from './node/save.ts';
export { loadCheckpoint } from './node/load.ts';
export type { LoadOptions } from './node/load.ts';
export { writeFileAtomic, temporaryName, nodeFileSystem, TEMP_NAME_ATTEMPTS } from './node/atomic-write.ts';
export type { AtomicFileHandle, AtomicFileSystem, AtomicWriteOptions } from './node/atomic-write.ts';
export { describeFileKind, fileKindOf, MAX_FILE_BYTES, MAX_TEXT_FILE_BYTES, openRegularFile, openRegularFileSync, readRegularFile, readRegularFileSync } from './node/regular-file.ts';
export type { FileKind, ReadRegularFileOptions } from './node/regular-file.ts';
