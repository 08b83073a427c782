/** Placeholder until the data package lands. */
export const PACKAGE_NAME: string = '@llmcp/data';
