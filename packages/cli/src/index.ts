/** Placeholder until the cli package lands. */
export const PACKAGE_NAME: string = '@llmcp/cli';
