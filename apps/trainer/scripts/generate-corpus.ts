/**
 * Generates the trainer app's default corpus: short, simple English stories
 * from a seeded grammar (original text, MIT like the rest of the project), as a
 * reference-format JSON corpus plus a split manifest.
 *
 * Run: `pnpm --filter @llmcp/app-trainer run generate-corpus` (deterministic:
 * the same bytes every time; `--check` exits 1 if the committed files differ).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { SplitMix64, checksumLabel, fnv1a64 } from '@llmcp/format';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const OUT = path.join(HERE, '..', 'corpus');
const STORIES = 480;
const SEED = 20260501n;

const rng = new SplitMix64(SEED);
const pick = <T>(items: readonly T[]): T => items[rng.nextBelow(items.length)] as T;
const chance = (p: number): boolean => rng.nextUnit() < p;

interface Hero {
  readonly name: string;
  readonly kind: string;
  readonly he: string;
  readonly his: string;
  readonly him: string;
}

const HEROES: readonly Hero[] = [
  ['Mila', 'little fox', 'she', 'her', 'her'],
  ['Tom', 'small bear', 'he', 'his', 'him'],
  ['Lena', 'young rabbit', 'she', 'her', 'her'],
  ['Ben', 'gray mouse', 'he', 'his', 'him'],
  ['Nora', 'brave duck', 'she', 'her', 'her'],
  ['Sam', 'curious cat', 'he', 'his', 'him'],
  ['Ada', 'tiny owl', 'she', 'her', 'her'],
  ['Leo', 'kind dog', 'he', 'his', 'him'],
  ['Ivy', 'quick squirrel', 'she', 'her', 'her'],
  ['Max', 'old turtle', 'he', 'his', 'him'],
  ['Rosa', 'busy bee', 'she', 'her', 'her'],
  ['Finn', 'shy frog', 'he', 'his', 'him'],
].map(([name, kind, he, his, him]) => ({ name, kind, he, his, him }) as Hero);

const FRIENDS = ['a wise goose', 'a sleepy badger', 'a cheerful hedgehog', 'a tall heron', 'a friendly goat', 'a little sparrow', 'a patient snail', 'a playful otter'];
const PLACES = ['the green forest', 'the quiet village', 'the old farm', 'the sunny meadow', 'the big river', 'the windy hill', 'the small garden', 'the deep woods', 'the sandy beach', 'the snowy valley'];
const HOMES = ['a warm burrow', 'a round nest', 'a little house', 'a hollow tree', 'a cozy den', 'a boat by the shore'];
const TIMES = ['One morning', 'One rainy day', 'Early one spring', 'On a cold night', 'One summer evening', 'Late one autumn afternoon', 'On a bright winter day', 'One foggy morning'];
const THINGS = ['a red kite', 'a lost key', 'a shiny stone', 'a blue feather', 'an old map', 'a basket of apples', 'a silver bell', 'a wooden boat', 'a warm scarf', 'a jar of honey', 'a yellow ball', 'a small lantern'];
const WANTS = ['to find', 'to bring home', 'to share', 'to fix', 'to give away', 'to keep safe'];
const PROBLEMS = [
  'the path was blocked by a fallen tree',
  'a strong wind blew the leaves everywhere',
  'the bridge over the stream was broken',
  'the night came and it was very dark',
  'the rain turned the road into mud',
  'a big dog was barking near the gate',
  'the river was too wide to cross',
  'the snow covered every track',
];
const SOLUTIONS = [
  'they pushed together until the tree rolled away',
  'they waited under a rock until the wind was calm',
  'they found flat stones and made a new way across',
  'they lit the lantern and followed its light',
  'they walked slowly along the dry edge of the road',
  'they spoke softly until the dog wagged its tail',
  'they asked a kind fisher to take them in a boat',
  'they followed the tall trees that they knew well',
];
const FEELINGS = ['happy', 'proud', 'tired but glad', 'warm and safe', 'calm', 'very thankful'];
const LESSONS = [
  'It is easier to be brave when a friend is near.',
  'Small steps can take you a long way.',
  'Sharing makes a good day even better.',
  'When you ask for help, the world feels smaller and kinder.',
  'Patience can open doors that strength cannot.',
  'Home is where your friends are waiting.',
];
const WEATHER = ['The sky was clear.', 'Soft rain was falling.', 'The air smelled of flowers.', 'A cold wind moved the grass.', 'The sun was warm on the ground.', 'Clouds moved slowly over the hills.'];

const cap = (s: string): string => s.charAt(0).toUpperCase() + s.slice(1);

function story(index: number): string {
  const hero = pick(HEROES);
  const friend = pick(FRIENDS);
  const place = pick(PLACES);
  const thing = pick(THINGS);
  const want = pick(WANTS);
  const out: string[] = [];
  out.push(`${pick(TIMES)}, ${hero.name} the ${hero.kind} woke up in ${pick(HOMES)} near ${place}.`);
  out.push(pick(WEATHER));
  out.push(`${cap(hero.he)} wanted ${want} ${thing}.`);
  if (chance(0.5)) out.push(`${cap(hero.his)} mother said, "Be careful, and come back before dark."`);
  out.push(`On the way, ${hero.name} met ${friend}.`);
  out.push(`"Where are you going?" asked the ${friend.split(' ').slice(1).join(' ')}.`);
  out.push(`"I am going ${want} ${thing}," said ${hero.name}. "Will you come with me?"`);
  out.push(`So they went together.`);
  const troubles = 1 + rng.nextBelow(2);
  for (let t = 0; t < troubles; t += 1) {
    const k = rng.nextBelow(PROBLEMS.length);
    out.push(`But ${PROBLEMS[k] as string}.`);
    if (chance(0.5)) out.push(`${hero.name} felt a little afraid.`);
    out.push(`Then ${SOLUTIONS[k] as string}.`);
  }
  out.push(`At last they reached ${place} and found ${thing}.`);
  out.push(`${hero.name} was ${pick(FEELINGS)}, and the ${friend.split(' ').slice(1).join(' ')} smiled.`);
  if (chance(0.6)) out.push(`That evening they sat together and told stories until the stars came out.`);
  out.push(pick(LESSONS));
  void index;
  return out.join(' ');
}

function corpusJson(docs: readonly { id: string; text: string }[]): string {
  const lines = docs.map(
    (d) => `  {\n    "id": ${JSON.stringify(d.id)},\n    "language": "en",\n    "provenance_group": ${JSON.stringify(d.id)},\n    "text": ${JSON.stringify(d.text)}\n  }`,
  );
  return `[\n${lines.join(',\n')}\n]\n`;
}

const docs: { id: string; text: string }[] = [];
const seen = new Set<string>();
for (let i = 0; docs.length < STORIES; i += 1) {
  const text = story(i);
  if (seen.has(text)) continue;
  seen.add(text);
  docs.push({ id: `story-${String(docs.length + 1).padStart(4, '0')}`, text });
}
const corpus = new TextEncoder().encode(corpusJson(docs));
const validation = docs.filter((_, i) => i % 20 === 10).map((d) => d.id);
const test = docs.filter((_, i) => i % 20 === 19).map((d) => d.id);
const held = new Set([...validation, ...test]);
const split = {
  schema_version: 1,
  corpus_checksum: checksumLabel(fnv1a64(corpus)),
  strategy: 'fixed-paired-document-holdout-v1',
  train: docs.filter((d) => !held.has(d.id)).map((d) => d.id),
  validation,
  test,
};
const splitBytes = new TextEncoder().encode(`${JSON.stringify(split, null, 2)}\n`);

const files: [string, Uint8Array][] = [
  ['stories.json', corpus],
  ['stories-split.json', splitBytes],
];
if (process.argv.includes('--check')) {
  let ok = true;
  for (const [name, bytes] of files) {
    const current = new Uint8Array(readFileSync(path.join(OUT, name)));
    if (Buffer.compare(current, bytes) !== 0) {
      console.error(`${name} differs from the generator's output`);
      ok = false;
    }
  }
  process.exit(ok ? 0 : 1);
}
for (const [name, bytes] of files) writeFileSync(path.join(OUT, name), bytes);
console.log(`wrote ${docs.length} stories (${corpus.length} bytes), split ${split.train.length}/${validation.length}/${test.length}, ${split.corpus_checksum}`);
