/**
 * Plain-data form of a caught `FormatError` (the same shape as
 * `InspectionError` of `@llmcp/format`), for JSON output.
 */
import { isFormatError, type InspectionError } from '@llmcp/format';

/**
 * @param e - a caught error.
 * @returns its plain-data summary.
 * @throws the error itself when it is not a FormatError.
 */
export function formatErrorData(e: unknown): InspectionError {
  if (!isFormatError(e)) throw e;
  const out: { -readonly [K in keyof InspectionError]: InspectionError[K] } = { code: e.code, category: e.category, reason: e.reason, message: e.message };
  if (e.offset !== undefined) out.offset = e.offset;
  if (e.field !== undefined) out.field = e.field;
  if (e.recordName !== undefined) out.recordName = e.recordName;
  if (e.recordIndex !== undefined) out.recordIndex = e.recordIndex;
  if (e.elementIndex !== undefined) out.elementIndex = e.elementIndex;
  if (e.expected !== undefined) out.expected = e.expected;
  if (e.found !== undefined) out.found = e.found;
  return out;
}
