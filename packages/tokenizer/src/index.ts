/** Placeholder until the tokenizer package lands. */
export const PACKAGE_NAME: string = '@llmcp/tokenizer';
