/** Placeholder until the optim package lands. */
export const PACKAGE_NAME: string = '@llmcp/optim';
