/**
 * Writes packages/trainer/config.schema.json from the trainer's zod schema
 * (`trainerConfigJsonSchema`). Run `pnpm --filter @llmcp/trainer run schema`
 * after changing the config schema; src/config-schema.test.ts fails until the
 * committed file equals the generated one.
 */
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { CONFIG_SCHEMA_FILE, trainerConfigJsonSchema } from '../src/config-schema.ts';

const file = fileURLToPath(new URL(`../${CONFIG_SCHEMA_FILE}`, import.meta.url));
writeFileSync(file, `${JSON.stringify(trainerConfigJsonSchema(), null, 2)}\n`);
process.stdout.write(`wrote ${file}\n`);
