/** Placeholder until the model package lands. */
export const PACKAGE_NAME: string = '@llmcp/model';
