/** The version of `@llmcp/cli`, in its own module so that any command can name it without importing the program. */
import manifest from '../package.json' with { type: 'json' };

/** Version of `@llmcp/cli` (printed by `llmcp --version`, recorded in export manifests). */
export const CLI_VERSION: string = manifest.version;
