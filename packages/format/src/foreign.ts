/**
 * `@llmcp/format/foreign`: bounded, hostile-input-safe readers of the headers
 * of foreign model files — safetensors and GGUF (metadata and tensor table,
 * never tensor data) — so tools can say what a file is instead of reporting
 * a bad LLMCP35 magic. Zero dependencies, browser-safe.
 */
export { detectFileKind, readForeignFile, FILE_KIND_PREFIX_BYTES } from './foreign/foreign-file.ts';
export type { FileKind, ForeignFile } from './foreign/foreign-file.ts';
export { readSafetensorsHeader, MAX_SAFETENSORS_HEADER_BYTES, SAFETENSORS_DTYPE_BITS } from './foreign/safetensors.ts';
export type { ForeignReadOptions, SafetensorsHeader, SafetensorsTensorInfo } from './foreign/safetensors.ts';
export { readGgufHeader, GGUF_ARRAY_PREVIEW, GGUF_DEFAULT_ALIGNMENT, GGUF_MAX_DIMS, GGUF_VALUE_TYPES, MAX_GGUF_STRING_BYTES } from './foreign/gguf.ts';
export type { GgufArray, GgufHeader, GgufMetadataEntry, GgufScalar, GgufTensorInfo, GgufValueType } from './foreign/gguf.ts';
export { describeForeignFile, foreignFileJson, foreignMetadataRows, foreignTensorRows, renderForeignFile, FOREIGN_VALUE_PREVIEW_CHARS } from './foreign/render.ts';
export type { ForeignFileJson, ForeignJsonValue, ForeignMetadataRow, ForeignTensorRow, RenderForeignOptions } from './foreign/render.ts';
export { ForeignFileError, isForeignFileError, FOREIGN_ERROR_CODES } from './foreign/errors.ts';
export type { ForeignErrorCode, ForeignErrorContext } from './foreign/errors.ts';
