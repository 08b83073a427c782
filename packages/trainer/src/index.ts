/** Placeholder until the trainer package lands. */
export const PACKAGE_NAME: string = '@llmcp/trainer';
