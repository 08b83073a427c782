/**
 * End-to-end tests of the inspector page in a real browser: Debian's
 * Chromium driven by playwright-core (never a downloaded browser), the page
 * built by Vite (or the `dist/` that `pnpm test` has just built) and served
 * from an ephemeral localhost port.
 */
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { inspectCheckpoint } from '@llmcp/format/inspect';
import { CH33_CONFIG_INPUT, forkRun, parseConfig, resumeRun, trainRun } from '@llmcp/trainer';
import { formatEvaluationRecord, formatLossRecord } from '@llmcp/trainer/loss-records';
import { chromium, type Browser, type Page } from 'playwright-core';
import { build } from 'vite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const APP_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const FIXTURES = path.resolve(APP_DIR, '../../packages/conformance/fixtures');
const GOLDEN = path.join(FIXTURES, 'golden-6330.llmcp');
const CHROMIUM = process.env.LLMCP_CHROMIUM ?? '/usr/bin/chromium';
/** Screenshots kept for a look after the run (gitignored). */
const ARTIFACTS = path.join(APP_DIR, 'test-artifacts');
const ARGS = ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.map': 'application/json',
  '.svg': 'image/svg+xml',
};

const work = mkdtempSync(path.join(tmpdir(), 'llmcp-inspector-e2e-'));
let root = '';
let server: Server;
let origin = '';
let browser: Browser;
let page: Page;
const requests: string[] = [];

/**
 * A loss.jsonl written with the trainer's own formatters: a falling loss over
 * 60 steps, and an evaluation record after the training record of every 10th
 * step (the validation curve comes from these alone — no job.json).
 */
function writeLossLog(): string {
  let text = formatEvaluationRecord({ step: 0, validationLoss: 2.2, trainingLoss: null });
  for (let step = 1; step <= 60; step++) {
    const loss = 1.6 * Math.exp(-step / 25) + 0.4 + 0.03 * Math.sin(step);
    const timing = { tokensPerSecond: 1000 + 10 * step, stepMs: 64, time: new Date(Date.UTC(2026, 0, 1, 0, 0, 2 * step)).toISOString() };
    text += formatLossRecord({ step, loss, learningRate: 0.01 * (1 - step / 120), gradientNorm: 0.5 + 0.2 * Math.cos(step), clipped: false, tokens: 64 }, timing);
    if (step % 10 === 0) text += formatEvaluationRecord({ step, validationLoss: 1.7 * Math.exp(-step / 30) + 0.5, trainingLoss: null });
  }
  const file = path.join(work, 'loss.jsonl');
  writeFileSync(file, text);
  return file;
}

/**
 * Two small real runs trained with the trainer (the ch33 model, 16 steps,
 * checkpoints every 4): run A, and run B forked from A's step 8 with another
 * learning rate and trained on (so A has a forked-to event, B forked-from and
 * resumed). Run C is a copy of A whose latest/state.llmcp has one flipped bit.
 */
async function trainRuns(): Promise<{ a: string; b: string; c: string; flipped: { offset: number; name: string; element: number } }> {
  const input = JSON.parse(JSON.stringify(CH33_CONFIG_INPUT)) as Record<string, unknown>;
  Object.assign(input, { steps: 16, schedule: { kind: 'constant', rate: 0.04 }, checkpoint: { every: 4, keepSteps: 3 } });
  const a = path.join(work, 'runs', 'run-a');
  const b = path.join(work, 'runs', 'run-b');
  const c = path.join(work, 'damaged', 'run-c');
  await trainRun({ runDir: a, config: parseConfig(input), saveMode: 'inline' });
  await forkRun(a, b, { slot: 'step_000008', config: parseConfig({ ...input, schedule: { kind: 'constant', rate: 0.01 } }), changes: ['schedule'] });
  await resumeRun(b, { saveMode: 'inline' });
  mkdirSync(path.dirname(c), { recursive: true });
  cpSync(a, c, { recursive: true });
  const state = path.join(c, 'checkpoints', 'latest', 'state.llmcp');
  const bytes = new Uint8Array(readFileSync(state));
  const d = inspectCheckpoint(bytes).descriptors.find((x) => x.role === 'model-parameter' && x.name === 'blocks.0.attention.query.weight');
  if (d === undefined) throw new Error('no query weight record');
  const element = 3;
  const offset = Number(d.offset) + 8 * element + 5;
  bytes[offset] = (bytes[offset] as number) ^ 0x10;
  writeFileSync(state, bytes);
  return { a, b, c, flipped: { offset: Number(d.offset) + 8 * element, name: d.name, element } };
}

let runs: Awaited<ReturnType<typeof trainRuns>>;

/** Writes a screenshot under test-artifacts/ and checks it is a real picture: a PNG of some size with more than one colour. */
async function keepScreenshot(name: string, png: Buffer): Promise<void> {
  mkdirSync(ARTIFACTS, { recursive: true });
  writeFileSync(path.join(ARTIFACTS, name), png);
  expect(png.subarray(1, 4).toString('latin1')).toBe('PNG');
  expect(png.length).toBeGreaterThan(2000);
  const colours = await page.evaluate(async (b64) => {
    const img = new Image();
    img.src = `data:image/png;base64,${b64}`;
    await img.decode();
    const c = document.createElement('canvas');
    c.width = img.naturalWidth;
    c.height = img.naturalHeight;
    const ctx = c.getContext('2d') as CanvasRenderingContext2D;
    ctx.drawImage(img, 0, 0);
    const data = ctx.getImageData(0, 0, c.width, c.height).data;
    const seen = new Set<number>();
    for (let i = 0; i < data.length && seen.size < 50; i += 4) seen.add(((data[i] as number) << 16) | ((data[i + 1] as number) << 8) | (data[i + 2] as number));
    return seen.size;
  }, png.toString('base64'));
  expect(colours).toBeGreaterThan(2);
}

/** Counts canvas pixels near a colour (within ±40 per channel). */
async function pixelsNear(selector: string, rgb: readonly [number, number, number]): Promise<number> {
  return page.locator(selector).evaluateAll((canvases, [r0, g0, b0]) => {
    let n = 0;
    for (const c of canvases as HTMLCanvasElement[]) {
      const data = (c.getContext('2d') as CanvasRenderingContext2D).getImageData(0, 0, c.width, c.height).data;
      for (let i = 0; i < data.length; i += 4) {
        if ((data[i + 3] as number) > 0 && Math.abs((data[i] as number) - r0) < 40 && Math.abs((data[i + 1] as number) - g0) < 40 && Math.abs((data[i + 2] as number) - b0) < 40) n += 1;
      }
    }
    return n;
  }, rgb);
}

/** Opens run directories through the directory picker, one after the other (the page keeps the last two). */
async function openRunDirectories(...dirs: string[]): Promise<void> {
  await page.goto(`${origin}/`);
  for (const dir of dirs) {
    await page.evaluate(() => delete document.body.dataset.ready);
    await page.setInputFiles('#dir-input', dir);
    await page.waitForSelector('body[data-ready]');
  }
}

beforeAll(async () => {
  const dist = path.join(APP_DIR, 'dist');
  if (process.env.LLMCP_BUILT === '1' && existsSync(path.join(dist, 'index.html'))) {
    root = dist;
  } else {
    root = path.join(work, 'dist');
    await build({ root: APP_DIR, configFile: path.join(APP_DIR, 'vite.config.ts'), logLevel: 'warn', build: { outDir: root, emptyOutDir: true } });
  }
  server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const file = path.join(root, url.pathname === '/' ? 'index.html' : decodeURIComponent(url.pathname));
    if (!file.startsWith(root) || !existsSync(file) || !statSync(file).isFile()) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { 'content-type': TYPES[path.extname(file)] ?? 'application/octet-stream' }).end(readFileSync(file));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ARGS, headless: true });
  page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  page.on('request', (r) => requests.push(r.url()));
  runs = await trainRuns();
});

afterAll(async () => {
  await browser?.close();
  await new Promise<void>((resolve) => (server === undefined ? resolve() : server.close(() => resolve())));
  rmSync(work, { recursive: true, force: true });
});

/** Loads the page fresh and opens files through the file picker. */
async function openFiles(...files: string[]): Promise<void> {
  await page.goto(`${origin}/`);
  await page.setInputFiles('#file-input', files);
  await page.waitForSelector('body[data-ready]');
}

describe('inspector page', () => {
  it('opens the golden file: verdict valid, 38 descriptor rows from [2869,2870) to 6330', async () => {
    await openFiles(GOLDEN);
    const cp = page.locator('.checkpoint');
    await expect(cp.count()).resolves.toBe(1);
    const verdict = await cp.locator('[data-role=verdict]').textContent();
    expect(verdict).toContain('VALID');
    expect(verdict).toContain('fnv1a64:2b8b6097eaed6a91');
    const rows = cp.locator('[data-role=descriptors] tbody tr');
    await expect(rows.count()).resolves.toBe(38);
    await expect(rows.nth(0).locator('td.range').textContent()).resolves.toBe('[2869,2870)');
    await expect(rows.nth(37).locator('td.range').textContent()).resolves.toBe('[6170,6330)');
    await expect(cp.locator('[data-role=descriptors] tbody tr.bad-row').count()).resolves.toBe(0);
    // Fixed header with annotated hex, checksum stored vs computed.
    await expect(cp.locator('.hex-field').first().textContent()).resolves.toBe('4c 4c 4d 43 50 33 35 00magic');
    await expect(cp.locator('[data-role=checksum]').textContent()).resolves.toBe('Checksum: stored fnv1a64:2b8b6097eaed6a91, computed fnv1a64:2b8b6097eaed6a91 — match');
    // Byte map: fixed header, variable header, descriptor table, one tokenizer block, 11 parameters, 22 moments.
    await expect(cp.locator('svg.byte-map rect.seg').count()).resolves.toBe(3 + 1 + 11 + 22);
    await expect(cp.locator('svg.byte-map rect.seg-unaccounted').count()).resolves.toBe(0);
    // Tokenizer pieces, configuration, per-tensor statistics.
    await expect(cp.locator('[data-role=tokenizer] tbody tr').count()).resolves.toBe(5);
    expect(await cp.locator('[data-role=config]').textContent()).toContain('0x9e3779b97f4a7c38');
    const stats = cp.locator('[data-role=stats] tbody tr');
    await expect(stats.count()).resolves.toBe(33);
    expect(await stats.nth(0).textContent()).toContain('token_embedding.weight');
    await expect(stats.nth(0).locator('svg.hist rect').count()).resolves.toBe(24);
  });

  it('opens a malformed file: shows the failing rule and marks the broken row', async () => {
    await openFiles(path.join(FIXTURES, 'malformed/offset-plus-one.llmcp'));
    const cp = page.locator('.checkpoint');
    expect(await cp.locator('[data-role=verdict]').textContent()).toContain('INVALID');
    await expect(cp.locator('[data-role=error-code]').textContent()).resolves.toBe('FORMAT_LAYOUT');
    // Everything that parsed is still shown, and the failing row is marked.
    await expect(cp.locator('[data-role=descriptors] tbody tr').count()).resolves.toBe(38);
    const failing = cp.locator('[data-role=descriptors] tbody tr.failing-row');
    await expect(failing.count()).resolves.toBe(1);
    await expect(failing.getAttribute('data-index')).resolves.toBe('1');
    expect(await failing.textContent()).toContain('starts at 2871, previous ended at 2870 ◀ FORMAT_LAYOUT');
    await expect(cp.locator('svg.byte-map line.fail-mark').count()).resolves.toBe(1);
  });

  it('opens a truncated header: shows what parsed and where parsing stopped', async () => {
    await openFiles(path.join(FIXTURES, 'malformed/header-cut-60.llmcp'));
    const cp = page.locator('.checkpoint');
    await expect(cp.locator('[data-role=error-code]').textContent()).resolves.toBe('FORMAT_TRUNCATED');
    expect(await cp.locator('[data-role=issues]').textContent()).toContain('Parsing stopped: FORMAT_TRUNCATED');
    expect(await cp.locator('[data-role=variable-header]').textContent()).toContain('tokenizer kind');
  });

  it('opens loss.jsonl alone: training, validation (from its evaluation records), learning rate and gradient norm render', async () => {
    await openFiles(writeLossLog());
    const chart = page.locator('[data-role=chart-loss]');
    await chart.locator('canvas').waitFor();
    expect(await page.locator('[data-role=loss]').textContent()).toContain('A = loss.jsonl: 60 training steps');
    expect(await page.locator('[data-role=loss]').textContent()).toContain('7 validation evaluations, lowest 0.730070 at step 60');
    await expect(chart.getAttribute('data-series')).resolves.toBe('A: training loss|A: validation loss');
    await expect(page.locator('[data-role=chart-lr]').getAttribute('data-series')).resolves.toBe('A: learning rate');
    await expect(page.locator('[data-role=chart-grad]').getAttribute('data-series')).resolves.toBe('A: gradient norm');
    // The timing of the records: throughput and wall clock.
    await expect(page.locator('[data-role=chart-throughput]').getAttribute('data-series')).resolves.toBe('A: training tokens/s');
    await expect(page.locator('[data-role=chart-clock]').getAttribute('data-series')).resolves.toBe('A: minutes since the first record');
    await keepScreenshot('loss-log-curves.png', await page.locator('[data-role=loss]').screenshot());
    // The canvas holds drawn series: blue (training) and red (validation) pixels.
    expect(await pixelsNear('[data-role=chart-loss] canvas', [0x25, 0x63, 0xeb])).toBeGreaterThan(200);
    expect(await pixelsNear('[data-role=chart-loss] canvas', [0xdc, 0x26, 0x26])).toBeGreaterThan(50);
    expect(await pixelsNear('[data-role=chart-lr] canvas', [0x7c, 0x3a, 0xed])).toBeGreaterThan(100);
    // Log scale and EMA smoothing redraw the charts.
    await page.locator('[data-role=log-scale]').check();
    await page.waitForSelector('[data-role=loss][data-drawn="log:0"]');
    await page.locator('[data-role=smoothing]').fill('0.9');
    await page.waitForSelector('[data-role=loss][data-drawn="log:0.9"]');
    await expect(page.locator('[data-role=smoothing-value]').textContent()).resolves.toBe('0.90');
    expect(await pixelsNear('[data-role=chart-loss] canvas', [0x25, 0x63, 0xeb])).toBeGreaterThan(200);
  });

  it('opens a run directory: slots, run.json events, the curves with fork markers, and the latest checkpoint checked against its copy', async () => {
    await openRunDirectories(runs.a);
    const run = page.locator('[data-role=run]');
    await expect(run.getAttribute('data-name')).resolves.toBe('run-a');
    const slots = await run.locator('[data-role=slots] tbody tr td:first-child').allTextContents();
    expect(slots).toEqual(['latest', 'latest.backup', 'best', 'best.backup', 'step_000016', 'step_000012', 'step_000008']);
    expect(await run.locator('[data-role=slots] tbody tr').first().textContent()).toContain('6 330 bytes');
    const events = await run.locator('[data-role=events] tbody tr td:nth-child(2)').allTextContents();
    expect(events).toEqual(['created', 'completed', 'forked-to']);
    // The lineage: every slot against its manifest, the chain from latest (step 16) back to the fresh model, unbroken.
    await expect(run.locator('[data-role=lineage]').getAttribute('data-ok')).resolves.toBe('true');
    const chain = await run.locator('[data-role=chain] tbody tr td:first-child').allTextContents();
    expect(chain[0]).toBe('16');
    expect(chain.at(-1)).toBe('0');
    await expect(run.locator('[data-role=chain] tbody tr').last().textContent()).resolves.toContain('fresh model');
    expect(await run.locator('[data-role=slots] tbody tr').first().textContent()).toContain('ok, unsigned');
    await expect(page.locator('[data-role=markers] li').allTextContents()).resolves.toEqual(['A: fork at step 8 (forked-to)']);
    await expect(page.locator('[data-role=chart-loss]').getAttribute('data-series')).resolves.toMatch(/^A: training loss/);
    const hasEvaluations = readFileSync(path.join(runs.a, 'loss.jsonl'), 'utf8').includes('"validationLoss"');
    if (hasEvaluations) await expect(page.locator('[data-role=chart-loss]').getAttribute('data-series')).resolves.toBe('A: training loss|A: validation loss');
    // The latest slot is shown, with a table of contents, heatmaps, and the copy check against step_000016.
    const cp = page.locator('#slot');
    expect(await cp.locator('h2').textContent()).toContain('run-a/checkpoints/latest/state.llmcp');
    const toc = await cp.locator('[data-role=toc] a').allTextContents();
    expect(toc).toEqual(['Copy check', 'Byte map', 'Fixed header and checksum', 'Checksum', 'Variable header', 'Descriptor table (records)', 'Tokenizer', 'Configuration and optimizer', 'Tensors (statistics, heatmaps)']);
    for (const href of await cp.locator('[data-role=toc] a').evaluateAll((as) => as.map((x) => x.getAttribute('href')))) await expect(page.locator(href as string).count()).resolves.toBe(1);
    await expect(cp.locator('[data-role=copy-verdict]').textContent()).resolves.toBe('latest and step_000016 are identical byte for byte.');
    // 2-D tensors: the 5×4 embedding, 4×4 attention/FFN weights and their moments: 8 + 16 heatmaps.
    await expect(cp.locator('canvas.heatmap').count()).resolves.toBe(24);
    const heat = cp.locator('[data-role=stats]');
    await keepScreenshot('checkpoint-heatmaps.png', await heat.screenshot());
    await keepScreenshot('run-directory.png', await page.screenshot({ fullPage: true }));
    // Another slot opens from the slot table.
    await run.locator('button[data-slot=latest\\.backup]').click();
    await page.waitForFunction(() => document.querySelector('#slot h2')?.textContent?.includes('latest.backup') === true);
    await expect(page.locator('#slot [data-role=copy-verdict]').textContent()).resolves.toBe('latest.backup and step_000012 are identical byte for byte.');
  });

  it('overlays two runs: both drawn in their own colours, with a legend and the markers of both', async () => {
    await openRunDirectories(runs.a, runs.b);
    await expect(page.locator('[data-role=run]').count()).resolves.toBe(2);
    await expect(page.locator('[data-role=run-legend] li').allTextContents()).resolves.toEqual(['A = run-a', 'B = run-b (dashed)']);
    const series = (await page.locator('[data-role=chart-loss]').getAttribute('data-series')) ?? '';
    expect(series.split('|').filter((s) => s.endsWith('training loss'))).toEqual(['A: training loss', 'B: training loss']);
    await expect(page.locator('[data-role=markers] li').allTextContents()).resolves.toEqual(['A: fork at step 8 (forked-to)', 'B: fork at step 8 (forked-from)', 'B: resume at step 8 (resumed)']);
    expect(await page.locator('[data-role=run-events]').nth(1).textContent()).toContain('forked-from');
    // Run B's chain ends at its fork point in run A.
    await expect(page.locator('[data-role=lineage]').nth(1).getAttribute('data-ok')).resolves.toBe('true');
    await expect(page.locator('[data-role=chain]').nth(1).locator('tbody tr').last().textContent()).resolves.toContain('fork point');
    // Run B's curves are teal (loss) and pink (learning rate), run A's blue and violet.
    expect(await pixelsNear('[data-role=chart-loss] canvas', [0x25, 0x63, 0xeb])).toBeGreaterThan(100);
    expect(await pixelsNear('[data-role=chart-loss] canvas', [0x0d, 0x94, 0x88])).toBeGreaterThan(50);
    expect(await pixelsNear('[data-role=chart-lr] canvas', [0xdb, 0x27, 0x77])).toBeGreaterThan(50);
    await keepScreenshot('two-runs-overlay.png', await page.locator('[data-role=loss]').screenshot());
  });

  it('locates a flipped bit in latest to the record element, against the copy in step_000016', async () => {
    await openRunDirectories(runs.c);
    const cp = page.locator('#slot');
    expect(await cp.locator('[data-role=verdict]').textContent()).toContain('INVALID');
    await expect(cp.locator('[data-role=error-code]').textContent()).resolves.toBe('FORMAT_CHECKSUM_MISMATCH');
    await expect(cp.locator('[data-role=copy-verdict]').textContent()).resolves.toBe('latest (invalid (FORMAT_CHECKSUM_MISMATCH)) and step_000016 (valid) differ in 1 byte(s), 1 bit(s):');
    const { offset, name, element } = runs.flipped;
    await expect(cp.locator('[data-role=corruption-run]').allTextContents()).resolves.toEqual([`bytes ${offset}–${offset + 7} differ: record \`${name}\` (model-parameter) element ${element} (1 bit)`]);
    await keepScreenshot('corruption-located.png', await cp.locator('[data-role=copy-check]').screenshot());
    // The lineage names the changed file against its manifest.
    await expect(page.locator('[data-role=lineage]').getAttribute('data-ok')).resolves.toBe('false');
    await expect(page.locator('[data-role=lineage-problems]').textContent()).resolves.toMatch(/checkpoints\/latest\/state\.llmcp: bytes \[0, 6330\) differ from model\.sig/);
    await keepScreenshot('lineage-broken.png', await page.locator('[data-role=run-lineage]').screenshot());
  });

  it('opens a run directory dropped as a folder (DataTransfer entries walked recursively)', async () => {
    await page.goto(`${origin}/`);
    const files: { path: string; data: number[] }[] = [];
    const collect = (dir: string, rel: string): void => {
      for (const entry of readdirSync(dir)) {
        const full = path.join(dir, entry);
        if (statSync(full).isDirectory()) collect(full, `${rel}/${entry}`);
        else files.push({ path: `${rel}/${entry}`, data: Array.from(readFileSync(full)) });
      }
    };
    collect(runs.b, '/run-b');
    await page.evaluate((list) => {
      type Node = { name: string; children: Map<string, Node>; data: number[] | null };
      const root: Node = { name: '', children: new Map(), data: null };
      for (const f of list) {
        let at = root;
        const parts = f.path.split('/').filter(Boolean);
        parts.forEach((p, k) => {
          let next = at.children.get(p);
          if (next === undefined) {
            next = { name: p, children: new Map(), data: k === parts.length - 1 ? f.data : null };
            at.children.set(p, next);
          }
          at = next;
        });
      }
      // Entries as Chromium gives them for a dropped folder: directories read in batches (here: one entry per batch).
      const entryOf = (n: Node, parent: string): unknown => {
        const fullPath = `${parent}/${n.name}`;
        if (n.data !== null) {
          const bytes = new Uint8Array(n.data);
          return { isFile: true, isDirectory: false, name: n.name, fullPath, file: (ok: (f: File) => void) => ok(new File([bytes], n.name)) };
        }
        const children = [...n.children.values()].map((c) => entryOf(c, fullPath));
        return { isFile: false, isDirectory: true, name: n.name, fullPath, createReader: () => ({ readEntries: (ok: (e: unknown[]) => void) => ok(children.splice(0, 1)) }) };
      };
      const top = root.children.get('run-b') as Node;
      const transfer = { items: [{ kind: 'file', webkitGetAsEntry: () => entryOf(top, ''), getAsFile: () => null }], files: [] };
      const drop = new DragEvent('drop', { bubbles: true, cancelable: true });
      Object.defineProperty(drop, 'dataTransfer', { value: transfer });
      (document.getElementById('open') as HTMLElement).dispatchEvent(drop);
    }, files);
    await page.waitForSelector('body[data-ready]');
    await expect(page.locator('[data-role=run]').getAttribute('data-name')).resolves.toBe('run-b');
    await expect(page.locator('[data-role=run] [data-role=slots] tbody tr').count()).resolves.toBe(7);
    expect(await page.locator('#status').textContent()).toContain(`run directory run-b (7 slot(s), 16 loss records)`);
    // The latest sample audit of the run.
    expect(await page.locator('[data-role=run-samples]').textContent()).toMatch(/^Sample audit \(samples\.json, step 16\)/);
  });

  it('opens two checkpoints together: shows the diff', async () => {
    await openFiles(GOLDEN, path.join(FIXTURES, 'malformed/second-moment-negative-zero.llmcp'));
    await expect(page.locator('.checkpoint').count()).resolves.toBe(2);
    const diff = page.locator('[data-role=diff]');
    await expect(diff.locator('[data-role=bit-identical]').textContent()).resolves.toBe('The files differ.');
    const fields = await diff.locator('[data-role=diff-fields] tbody tr td:first-child').allTextContents();
    expect(fields).toEqual(['checksum']);
    const records = diff.locator('[data-role=diff-records] tbody tr');
    await expect(records.count()).resolves.toBe(1);
    expect(await records.first().textContent()).toMatch(/second-moment.*1 of \d+ differ.*0x8000000000000000/);
  });

  it('opens a file dropped on the page (drag and drop)', async () => {
    await page.goto(`${origin}/`);
    const bytes = Array.from(readFileSync(GOLDEN));
    await page.evaluate((data) => {
      const transfer = new DataTransfer();
      transfer.items.add(new File([new Uint8Array(data)], 'dropped.llmcp'));
      const zone = document.getElementById('open') as HTMLElement;
      zone.dispatchEvent(new DragEvent('drop', { dataTransfer: transfer, bubbles: true, cancelable: true }));
    }, bytes);
    await page.waitForSelector('body[data-ready]');
    expect(await page.locator('.checkpoint h2').textContent()).toContain('dropped.llmcp');
    expect(await page.locator('[data-role=verdict]').textContent()).toContain('VALID');
  });

  it('made no request outside its own origin', () => {
    expect(requests.length).toBeGreaterThan(0);
    expect(requests.filter((u) => !u.startsWith(origin))).toEqual([]);
  });
});
