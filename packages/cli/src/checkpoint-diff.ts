/**
 * `llmcp diff`'s comparison: the one implementation lives in `@llmcp/format`
 * (the web inspector uses it too), re-exported here for this package's API.
 */
export { diffCheckpoints } from '@llmcp/format/inspect';
export type { CheckpointDiff, FieldDifference, TensorDifference, TensorKind } from '@llmcp/format/inspect';
