/** Node file I/O for LLMCP35 checkpoints (atomic save, load). Placeholder until the format issue lands. */
export const NODE_ENTRY: string = '@llmcp/format/node';
