import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { CH33_CONFIG_INPUT } from '@llmcp/trainer';
import { afterAll, describe, expect, it } from 'vitest';
import { GOLDEN, llmcp, REPO_ROOT, tempDir } from './helpers.ts';

const tmp = tempDir();
afterAll(() => tmp.cleanup());
const goldenBytes = readFileSync(GOLDEN);
const run = path.join(tmp.dir, 'runs', 'ch33');

/** The ch33 config as a file, optionally changed. */
function configFile(name: string, change: (c: Record<string, unknown>) => void = () => {}): string {
  const config = JSON.parse(JSON.stringify(CH33_CONFIG_INPUT)) as Record<string, unknown>;
  change(config);
  const file = path.join(tmp.dir, name);
  writeFileSync(file, JSON.stringify(config, null, 2));
  return file;
}

describe('llmcp train / status / verify on the ch33 fixture', () => {
  it('trains the 8-step reference run; best/state.llmcp is the golden 6330-byte file', async () => {
    const r = await llmcp(['train', run, '--config', configFile('ch33.json'), '--plain']);
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(`completed: ${run} at step 8/8; best validation loss 1.595297 at step 8\n`);
    expect(r.stderr).toContain('step 8: validation loss 1.5953');
    expect(readFileSync(path.join(run, 'checkpoints/best/state.llmcp')).equals(goldenBytes)).toBe(true);
  });

  it('status: latest and best steps, losses and last checkpoint age', async () => {
    const written = (await import('node:fs')).statSync(path.join(run, 'checkpoints/latest/state.llmcp')).mtimeMs;
    const r = await llmcp(['status', run]);
    expect(r.code).toBe(0);
    const lines = r.stdout.split('\n');
    expect(lines[0]).toMatch(new RegExp(`^run ${run} \\([0-9a-f-]{36}\\): complete$`));
    expect(lines[1]).toMatch(/^ {2}latest step: 8 of 8 \(slot latest\), last checkpoint \d+s ago$/);
    expect(lines[2]).toBe('  best: step 8 (slot best), validation loss 1.595297');
    expect(lines[3]).toMatch(/^ {2}losses: last training \d\.\d{6} \(8 step records \+ 5 evaluation records in loss\.jsonl\), last validation 1\.595297$/);
    const json = await (async () => {
      const { runCli } = await import('../src/cli.ts');
      let out = '';
      const code = await runCli(['status', run, '--json'], { stdout: { write: (s: string) => (out += s) }, stderr: { write: () => true }, env: {}, cwd: tmp.dir, now: () => written + 90_000 });
      expect(code).toBe(0);
      return JSON.parse(out) as { schema: string; runs: { step: number; best: { step: number }; lastCheckpointAgeSeconds: number; state: string }[] };
    })();
    expect(json.schema).toBe('llmcp-status/1');
    expect(json.runs[0]).toMatchObject({ step: 8, state: 'complete', best: { step: 8 }, lastCheckpointAgeSeconds: 90 });
  });

  it('runs (alias) lists every run inside a directory', async () => {
    const r = await llmcp(['runs', path.dirname(run)]);
    expect(r.code).toBe(0);
    expect(r.stdout.split('\n')[1]).toMatch(/^ {2}ch33\s+complete\s+8\/8\s+8: 1\.5953\s+\d\.\d{4}\s+\d+s ago$/);
  });

  it('verify <run-dir>: every slot, the loss log and the manifest (exit 0, --json)', async () => {
    const r = await llmcp(['verify', run]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(`run ${run}: ok`);
    expect(r.stdout).toMatch(/latest\s+8\s+ok/);
    expect(r.stdout).toContain('  best: step 8 in best, validation loss 1.595297');
    expect(r.stdout).toContain('loss.jsonl: ok, 8 step records + 5 evaluation records, prefix hash matches');
    const j = JSON.parse((await llmcp(['verify', run, '--json'])).stdout) as { kind: string; ok: boolean; run: { resumeSlot: string } };
    expect(j).toMatchObject({ kind: 'run', ok: true, run: { resumeSlot: 'latest' } });
  });

  it('resume of a finished run reports it complete (exit 0)', async () => {
    const r = await llmcp(['resume', run]);
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(`resumed from latest (step 8)\nalready complete: ${run} at step 8/8; best validation loss 1.595297 at step 8\n`);
  });

  it('train refuses a directory that already holds a run (exit 3)', async () => {
    const r = await llmcp(['train', run, '--preset', 'ch33']);
    expect(r.code).toBe(3);
    const [line, hint] = r.stderr.trimEnd().split('\n');
    expect(line).toBe(`llmcp train: error: train ${run}: TRAINER_RUN_INVALID: ${run} already holds a run; resume it (resumeRun) or choose another directory`);
    expect(hint).toBe("hint: check the directory: 'llmcp train' needs a new (or empty) one, the other run commands an existing run");
  });
});

describe('interrupt, resume, fork, pivot', () => {
  it('a stopped run exits 130 and its resume finishes with the golden bytes', async () => {
    const dir = path.join(tmp.dir, 'interrupted');
    const controller = new AbortController();
    controller.abort();
    const { runCli } = await import('../src/cli.ts');
    let out = '';
    const code = await runCli(['train', dir, '--preset', 'ch33', '--plain'], { stdout: { write: (s: string) => (out += s) }, stderr: { write: () => true }, env: {}, cwd: tmp.dir, signal: controller.signal });
    expect(code).toBe(130);
    expect(out).toMatch(/^stopped at step \d\/8 /);
    expect(out).toContain(`resume with: llmcp resume ${dir}`);
    const r = await llmcp(['resume', dir, '--plain']);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^resumed from latest \(step \d\)\ncompleted: .* at step 8\/8 \(resumed from latest\); best validation loss 1\.595297 at step 8\n$/);
    expect(readFileSync(path.join(dir, 'checkpoints/best/state.llmcp')).equals(goldenBytes)).toBe(true);
  });

  it('fork copies a slot into a new run', async () => {
    const target = path.join(tmp.dir, 'runs', 'ch33-fork');
    const r = await llmcp(['fork', run, target, '--slot', 'step_000008']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout.split('\n')[0]).toMatch(new RegExp(`^forked ${run} \\(step_000008, step 8\\) into ${target} as run [0-9a-f-]{36}; changed nothing$`));
    expect((await llmcp(['verify', target])).code).toBe(0);
    const occupied = await llmcp(['fork', run, target]);
    expect(occupied.code).toBe(3);
    expect(occupied.stderr.split('\n')[0]).toBe(`llmcp fork: error: fork ${run}: TRAINER_RUN_INVALID: fork target ${target} exists and is not empty`);
  });

  it('pivot changes declared policy fields; resume trains on to the new budget', async () => {
    const target = path.join(tmp.dir, 'runs', 'ch33-fork');
    const longer = configFile('ch33-10.json', (c) => {
      c.steps = 10;
      (c.schedule as { rates: number[] }).rates.push(0.005, 0.005);
    });
    const undeclared = await llmcp(['pivot', target, '--config', longer, '--change', 'steps']);
    expect(undeclared.code).toBe(3);
    expect(undeclared.stderr.split('\n')[0]).toMatch(/^llmcp pivot: error: pivot .*: TRAINER_CONFIG_CHANGED: .*schedule/);
    const r = await llmcp(['pivot', target, '--config', longer, '--change', 'steps,schedule', '--reason', 'two more steps']);
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(
      `pivot 1 of ${target} at step 8 (from latest): changed schedule.rates, steps\n  archived the replaced policy in ${path.join(target, 'archive/pivot-1')}\n  continue with: llmcp resume ${target}\n`,
    );
    const resumed = await llmcp(['resume', target, '--plain']);
    expect(resumed.code).toBe(0);
    expect(resumed.stdout).toMatch(/^resumed from latest \(step 8\)\ncompleted: .* at step 10\/10 \(resumed from latest\)/);
    expect(existsSync(path.join(target, 'archive', 'pivot-1'))).toBe(true);
  });

  it('pivot, fork and config take --set like train; the keys it names are declared', async () => {
    const source = path.join(tmp.dir, 'runs', 'ch33-fork');
    const shown = await llmcp(['config', source, '--set', 'sampling.temperature=0.5']);
    expect(shown.code, shown.stderr).toBe(0);
    expect(JSON.parse(shown.stdout)).toMatchObject({ steps: 10, sampling: { temperature: 0.5 } });
    const branch = path.join(tmp.dir, 'runs', 'ch33-set');
    const fork = await llmcp(['fork', source, branch, '--set', 'sampling.temperature=0.5']);
    expect(fork.code, fork.stderr).toBe(0);
    expect(fork.stdout.split('\n')[0]).toMatch(/; changed sampling\.temperature$/);
    const refused = await llmcp(['fork', source, path.join(tmp.dir, 'runs', 'ch33-bad'), '--set', 'model.width=8']);
    expect(refused.code).toBe(3);
    expect(refused.stderr).toMatch(/hint: model\.width cannot change in a fork \(policy fields only\); start a new run for that/);
    const pivot = await llmcp(['pivot', branch, '--set', 'sampling.topK=2', '--reason', 'narrower']);
    expect(pivot.code, pivot.stderr).toBe(0);
    expect(pivot.stdout.split('\n')[0]).toBe(`pivot 1 of ${branch} at step 10 (from latest): changed sampling.topK`);
    expect(JSON.parse((await llmcp(['config', branch])).stdout)).toMatchObject({ sampling: { temperature: 0.5, topK: 2 } });
  });
});

describe('llmcp resume says what it did', () => {
  it('names the refused slot and the work a crash left undone at the resumed step', async () => {
    const dir = path.join(tmp.dir, 'runs', 'ch33-repair');
    const config = configFile('ch33-repair.json', (c) => {
      c.checkpoint = { every: 4, keepSteps: 2 };
    });
    expect((await llmcp(['train', dir, '--config', config, '--plain'])).code).toBe(0);
    // As a kill right after the final latest/ was published leaves it: no step_000008, no 'completed' event.
    (await import('node:fs')).rmSync(path.join(dir, 'checkpoints', 'step_000008'), { recursive: true });
    const manifest = JSON.parse(readFileSync(path.join(dir, 'run.json'), 'utf8')) as { events: { event: string }[] };
    writeFileSync(path.join(dir, 'run.json'), JSON.stringify({ ...manifest, events: manifest.events.filter((e) => e.event !== 'completed') }));
    const r = await llmcp(['resume', dir, '--plain']);
    expect(r.code).toBe(0);
    expect(r.stdout.split('\n')[0]).toBe('resumed from latest (step 8)');
    expect(r.stdout.split('\n')[1]).toBe('completed what the crash left undone at step 8 (latest): step_000008, completed event');
    expect(r.stdout.split('\n')[2]).toMatch(/^already complete: .* at step 8\/8/);
    expect(existsSync(path.join(dir, 'checkpoints', 'step_000008', 'state.llmcp'))).toBe(true);
  });
});

describe('llmcp resume --steps: a new step budget', () => {
  /** The ch33 fixture with a constant schedule (a list schedule has exactly one rate per step). */
  const constantRate = (name: string, change: (c: Record<string, unknown>) => void = () => {}): string =>
    configFile(name, (c) => {
      c.schedule = { kind: 'constant' };
      change(c);
    });

  it('extends a finished run as a recorded pivot of steps and trains on from its last step', async () => {
    const dir = path.join(tmp.dir, 'runs', 'ch33-extend');
    expect((await llmcp(['train', dir, '--config', constantRate('ch33-constant.json'), '--plain'])).code).toBe(0);
    const r = await llmcp(['resume', dir, '--steps', '12', '--plain']);
    expect(r.code).toBe(0);
    const lines = r.stdout.split('\n');
    expect(lines[0]).toMatch(/^extending from 8 to 12 steps; the schedule is constant: updates 9 to 12 use learning rate [\d.e-]+$/);
    expect(lines[1]).toBe('resumed from latest (step 8)');
    expect(lines[2]).toMatch(/^completed: .* at step 12\/12 \(resumed from latest\)/);
    const manifest = JSON.parse(readFileSync(path.join(dir, 'run.json'), 'utf8')) as { events: { event: string; changed?: string[]; step?: number }[] };
    expect(manifest.events.map((e) => e.event)).toEqual(['created', 'completed', 'pivot', 'resumed', 'completed']);
    expect(manifest.events[2]).toMatchObject({ changed: ['steps'], step: 8 });
    expect(existsSync(path.join(dir, 'archive', 'pivot-1', 'config.json'))).toBe(true);
    expect((await llmcp(['verify', dir])).code).toBe(0);
    // The same budget again changes nothing.
    const again = await llmcp(['resume', dir, '--steps', '12', '--plain']);
    expect(again.code).toBe(0);
    expect(again.stdout).toMatch(/already complete: .* at step 12\/12/);
    expect(again.stdout).not.toMatch(/extending/);
  });

  it('extends a finished 60-step tiny run to 90 steps: it continues from step 60 with a recorded pivot', async () => {
    const dir = path.join(tmp.dir, 'runs', 'tiny-60');
    const stories = path.join(REPO_ROOT, 'apps', 'trainer', 'corpus');
    const corpus = ['--size', 'tiny', '--corpus', path.join(stories, 'stories.json'), '--split', path.join(stories, 'stories-split.json'), '--set', 'log.timing=false'];
    expect((await llmcp(['train', dir, ...corpus, '--steps', '60', '--threads', '1', '--plain'])).code).toBe(0);
    const r = await llmcp(['resume', dir, '--steps', '90', '--plain']);
    expect(r.code).toBe(0);
    expect(r.stdout.split('\n').slice(0, 3)).toEqual([
      expect.stringMatching(/^extending from 60 to 90 steps; the warmup-cosine schedule now spans 90 steps instead of 60: .*update 61 uses learning rate [\d.e-]+ \(update 60 used 0\.001\), reaching the floor 0\.001 at step 90$/),
      'resumed from latest (step 60)',
      expect.stringMatching(/^completed: .* at step 90\/90 \(resumed from latest\)/),
    ]);
    const manifest = JSON.parse(readFileSync(path.join(dir, 'run.json'), 'utf8')) as { events: { event: string; changed?: string[]; step?: number }[] };
    expect(manifest.events.map((e) => e.event)).toEqual(['created', 'completed', 'pivot', 'resumed', 'completed']);
    expect(manifest.events[2]).toMatchObject({ changed: ['steps'], step: 60 });
  }, 300_000);

  it('refuses a budget below the checkpoint step (exit 3) and changes nothing', async () => {
    const dir = path.join(tmp.dir, 'runs', 'ch33-extend');
    const before = readFileSync(path.join(dir, 'run.json'), 'utf8');
    const r = await llmcp(['resume', dir, '--steps', '10', '--plain']);
    expect(r.code).toBe(3);
    expect(r.stderr.split('\n')[0]).toMatch(/TRAINER_CONFIG_INVALID: a step budget of 10 is below the step 12 of latest/);
    expect(readFileSync(path.join(dir, 'run.json'), 'utf8')).toBe(before);
  });

  it('refuses any other change, naming the fields and the pivot command that applies them (exit 3)', async () => {
    const dir = path.join(tmp.dir, 'runs', 'ch33-extend');
    const changed = constantRate('ch33-constant-clip.json', (c) => {
      c.steps = 14;
      (c.optimizer as Record<string, unknown>).clipNorm = 0.5;
    });
    const before = readFileSync(path.join(dir, 'run.json'), 'utf8');
    const r = await llmcp(['resume', dir, '--config', changed, '--plain']);
    expect(r.code).toBe(3);
    expect(r.stderr).toMatch(/TRAINER_CONFIG_CHANGED: the config differs from the one .* was trained with: optimizer\.clipNorm, steps changed/);
    expect(r.stderr).toContain(`llmcp pivot ${dir} --config ${changed} --change optimizer.clipNorm,steps && llmcp resume ${dir}`);
    expect(readFileSync(path.join(dir, 'run.json'), 'utf8')).toBe(before);
    const structural = await llmcp(['resume', dir, '--config', constantRate('ch33-constant-wide.json', (c) => ((c.model as Record<string, unknown>).initSeed = 2)), '--plain']);
    expect(structural.code).toBe(3);
    expect(structural.stderr).toMatch(/model\.initSeed cannot change in an existing run/);
  });

  it('train --steps and --threads set the budget and threads of a new run (validated as the config)', async () => {
    const dir = path.join(tmp.dir, 'runs', 'ch33-six');
    const r = await llmcp(['train', dir, '--config', constantRate('ch33-constant-6.json'), '--steps', '6', '--threads', '2', '--plain']);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^completed: .* at step 6\/6;/);
    const job = JSON.parse(readFileSync(path.join(dir, 'checkpoints', 'latest', 'job.json'), 'utf8')) as { config: { steps: number; threads: number } };
    expect(job.config).toMatchObject({ steps: 6, threads: 2 });
    const tooMany = await llmcp(['train', path.join(tmp.dir, 'runs', 'ch33-many'), '--config', constantRate('ch33-constant-6.json'), '--threads', '65']);
    expect(tooMany.code).toBe(3);
    expect(tooMany.stderr.split('\n')[0]).toMatch(/TRAINER_CONFIG_INVALID: .*threads/);
  });

  it('--threads never counts as a config change', async () => {
    const dir = path.join(tmp.dir, 'runs', 'ch33-extend');
    const r = await llmcp(['resume', dir, '--threads', '2', '--steps', '12', '--plain']);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/already complete/);
    expect((await llmcp(['resume', dir, '--threads', '0'])).code).toBe(2);
  });
});

describe('run commands: bad inputs', () => {
  it.each([
    [['train', path.join(tmp.dir, 'x')], 2, 'llmcp train: error: a new run needs --config <file> or --preset <name>'],
    [['train', path.join(tmp.dir, 'x'), '--preset', 'ch33', '--config', 'c.json'], 2, 'llmcp train: error: give one of --config, --preset or --size/--corpus, not --config and --preset'],
    [['train', path.join(tmp.dir, 'x'), '--preset', 'gpt5'], 2, "llmcp train: error: option '--preset <name>' argument 'gpt5' is invalid. Allowed choices are ch33, ch34, ch39."],
    [['train', path.join(tmp.dir, 'x'), '--config', path.join(tmp.dir, 'none.json')], 3, `llmcp train: error: config not found: ${path.join(tmp.dir, 'none.json')}`],
    [['train', path.join(tmp.dir, 'x'), '--config', tmp.dir], 3, `llmcp train: error: ${tmp.dir} is a directory, expected a config file`],
    [['resume', path.join(tmp.dir, 'nowhere')], 3, `llmcp resume: error: run directory not found: ${path.join(tmp.dir, 'nowhere')}`],
    [['resume', GOLDEN], 3, `llmcp resume: error: ${GOLDEN} is not a directory, expected a run directory`],
    [['resume', tmp.dir], 3, `llmcp resume: error: resume ${tmp.dir}: TRAINER_RUN_INVALID: ${tmp.dir} is not a run directory (no run.json)`],
    [['status', path.join(tmp.dir, 'runs', 'ch33', 'checkpoints')], 3, `llmcp status: error: ${path.join(tmp.dir, 'runs', 'ch33', 'checkpoints')} is not a run directory and holds none (no run.json)`],
    [['pivot', path.join(tmp.dir, 'runs', 'ch33')], 2, 'llmcp pivot: error: a pivot needs the new policy: --set key.path=value (repeatable) or --config <file> with --change'],
    [['fork', path.join(tmp.dir, 'runs', 'ch33')], 2, "llmcp fork: error: missing required argument 'new-run-dir'"],
  ])('%j → exit %i', async (argv, code, message) => {
    const r = await llmcp(argv, { cwd: tmp.dir });
    expect(r.code).toBe(code);
    expect(r.stderr.split('\n')[0]).toBe(message);
  });

  it('train: an invalid config names the bad key (exit 3)', async () => {
    const bad = configFile('bad.json', (c) => {
      c.steps = -1;
    });
    const r = await llmcp(['train', path.join(tmp.dir, 'y'), '--config', bad]);
    expect(r.code).toBe(3);
    expect(r.stderr.split('\n')[0]).toMatch(/^llmcp train: error: config .*bad\.json: TRAINER_CONFIG_INVALID: invalid trainer config: .*steps/);
  });

  it('verify: a damaged slot fails the run (exit 1)', async () => {
    const damaged = path.join(tmp.dir, 'runs', 'ch33', 'checkpoints', 'step_000008', 'state.llmcp');
    const bytes = readFileSync(damaged);
    bytes.writeUInt8(bytes.readUInt8(bytes.length - 1) ^ 0xff, bytes.length - 1);
    writeFileSync(damaged, bytes);
    const r = await llmcp(['verify', path.join(tmp.dir, 'runs', 'ch33')]);
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/step_000008\s+8\s+TRAINER_STATE_INVALID: /);
  });
});
