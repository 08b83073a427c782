/** Placeholder until the conformance package lands. */
export const PACKAGE_NAME: string = '@llmcp/conformance';
