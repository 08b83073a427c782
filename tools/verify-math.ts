/**
 * Verifies @llmcp/model's deterministic math on random arguments (../docs/spec/model.md §14).
 *
 *   tsx --conditions=@llmcp/source tools/verify-math.ts [--count N] [--seed S] [--only exp,ln,…]
 *   tsx --conditions=@llmcp/source tools/verify-math.ts --write-log1p-fixture   (Node 20 only)
 *
 * - exp, ln, sin, cos, pow: every result is judged against the independent
 *   interval oracle of tools/math-oracle.ts ("ok" only if the correctly
 *   rounded value is provably the returned double);
 * - log1p: compared bit for bit with Math.log1p, which on Node 20 is V8's
 *   port of fdlibm (the algorithm llmcp reproduces; on other Node versions
 *   the comparison is reported but not required).
 * Arguments come from a seeded SplitMix64 and mix several generators per
 * function: random bit patterns over all exponents (including NaN, ±∞,
 * subnormals), dense uniform ranges over the finite-result domain, arguments
 * near the difficult points (0 for exp, 1 for ln, multiples of π/2 for sin
 * and cos, 1 for the base of pow), and the RoPE arguments of ../docs/spec/model.md §9.2.
 * Prints one line per function (counts, time) and exits with status 1 on any
 * wrong or undecided result.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { f64FromBits, SplitMix64 } from '@llmcp/format';
import { cos, exp, ln, log1p, MATH_VERSION, pow, sin } from '@llmcp/model';
import { checkExp, checkLn, checkPow, checkSinCos, type Verdict } from './math-oracle.ts';

/** Name of a verified function. */
export type MathFunctionName = 'exp' | 'ln' | 'log1p' | 'sin' | 'cos' | 'pow';

/** Counts for one function. */
export interface FunctionReport {
  name: MathFunctionName;
  count: number;
  ok: number;
  wrong: number;
  undecided: number;
  /** Up to five failing cases, with argument and result bit patterns. */
  failures: string[];
  seconds: number;
}

/** Options of {@link verifyMath}. */
export interface VerifyOptions {
  /** Arguments per function. */
  count: number;
  /** Seed of the argument generator. */
  seed: bigint;
  /** Functions to check (all by default). */
  only?: readonly MathFunctionName[];
  /** Called after each function. */
  onReport?: (report: FunctionReport) => void;
}

const ALL: readonly MathFunctionName[] = ['exp', 'ln', 'log1p', 'sin', 'cos', 'pow'];

const view = new DataView(new ArrayBuffer(8));

/** Bit pattern of x; every NaN as the canonical 7ff8000000000000 (JS does not define NaN payloads). */
function hex(x: number): string {
  if (x !== x) return '7ff8000000000000';
  view.setFloat64(0, x);
  return view.getBigUint64(0).toString(16).padStart(16, '0');
}

/** Argument generators: each call returns the next argument(s), cycling through kinds. */
class Args {
  private readonly rng: SplitMix64;
  constructor(seed: bigint) {
    this.rng = new SplitMix64(seed);
  }
  unit(): number {
    return this.rng.nextUnit();
  }
  uniform(a: number, b: number): number {
    return a + (b - a) * this.rng.nextUnit();
  }
  sign(): number {
    return this.rng.nextBelow(2) === 0 ? 1 : -1;
  }
  bits(): number {
    return f64FromBits(this.rng.nextU64());
  }
  finiteBits(): number {
    for (;;) {
      const x = this.bits();
      if (Number.isFinite(x)) return x;
    }
  }
  below(n: number): number {
    return this.rng.nextBelow(n);
  }
  /** 2^-(scale·u) with a random significand: log-uniform small magnitudes. */
  tiny(scale: number): number {
    return this.sign() * (1 + this.unit()) * 2 ** -Math.floor(scale * this.unit());
  }

  exp(i: number): number {
    switch (i % 6) {
      case 0:
        return this.bits(); // whole domain, NaN and ±∞ included
      case 1:
        return this.uniform(-745.2, 709.8); // every finite result
      case 2:
        return this.uniform(-745.2, -708.3); // subnormal results and the underflow threshold
      case 3:
        return this.tiny(1080); // near 0 down to subnormal arguments
      case 4:
        return this.uniform(-40, 40); // softmax, SiLU and loss range
      default:
        return this.uniform(705, 709.9); // overflow threshold
    }
  }

  ln(i: number): number {
    switch (i % 6) {
      case 0:
        return Math.abs(this.bits()); // every positive exponent, subnormals, +∞, NaN
      case 1:
        return 1 + this.tiny(53); // near 1
      case 2:
        return this.uniform(0, 8); // RMSNorm range
      case 3:
        return this.uniform(0.70703125, 1.4140625) * 2 ** (this.below(41) - 20); // every table interval
      case 4:
        return this.bits(); // negative arguments and zeros too
      default:
        return this.uniform(0.99, 1.01);
    }
  }

  log1p(i: number): number {
    switch (i % 6) {
      case 0:
        return this.bits();
      case 1:
        return this.uniform(-1, 1);
      case 2:
        return this.tiny(70);
      case 3:
        return this.uniform(1, 1e6);
      case 4:
        return -1 + Math.abs(this.tiny(53)); // near -1
      default:
        return 2 ** this.below(60) * (1 + this.unit() * 2 ** -this.below(53)) - 1; // |f| small after reduction
    }
  }

  trig(i: number): number {
    switch (i % 6) {
      case 0: {
        // RoPE: angle = p·pow(base, -2i/d), head widths 2…256, positions 0…8191
        const d = 2 * (1 + this.below(128));
        const j = this.below(d / 2);
        return this.below(8192) * pow(10000, (-2 * j) / d);
      }
      case 1:
        return this.uniform(-20, 20);
      case 2:
        return this.uniform(-(2 ** 20), 2 ** 20); // both sides of the fast-path limit 2^19
      case 3:
        return this.finiteBits(); // huge arguments: reduction with ~1100 bits of π
      case 4:
        return this.tiny(1080);
      default: {
        // the double nearest to a multiple of π/2, nudged: hard reductions
        const k = 1 + this.below(2 ** 24);
        return (k * 1.5707963267948966) * (1 + (this.below(5) - 2) * 2 ** -52);
      }
    }
  }

  pow(i: number): [number, number] {
    switch (i % 6) {
      case 0: {
        const d = 2 * (1 + this.below(256));
        const base = [10000, 500000, 1000000][this.below(3)] as number;
        return [base, (-2 * this.below(d / 2)) / d]; // RoPE inverse frequencies
      }
      case 1:
        return [this.uniform(0, 100), this.uniform(-30, 30)];
      case 2:
        return [1 + this.tiny(45), this.sign() * 2 ** (50 * this.unit())]; // base near 1, large exponents
      case 3:
        return [this.sign() * this.uniform(0, 4), this.below(201) - 100]; // integer exponents, negative bases
      case 4:
        return [Math.abs(this.finiteBits()), this.uniform(-4, 4)];
      default:
        return [this.bits(), this.bits()]; // special values and extreme cases
    }
  }
}

function judgeOne(name: MathFunctionName, a: Args, i: number, node20: boolean): { verdict: Verdict; detail: string } {
  switch (name) {
    case 'exp': {
      const x = a.exp(i);
      const y = exp(x);
      return { verdict: checkExp(x, y), detail: `exp(${hex(x)}) = ${hex(y)}` };
    }
    case 'ln': {
      const x = a.ln(i);
      const y = ln(x);
      return { verdict: checkLn(x, y), detail: `ln(${hex(x)}) = ${hex(y)}` };
    }
    case 'log1p': {
      const x = a.log1p(i);
      const y = log1p(x);
      const ref = Math.log1p(x);
      const same = Object.is(y, ref) || (y !== y && ref !== ref);
      return { verdict: same || !node20 ? 'ok' : 'wrong', detail: `log1p(${hex(x)}) = ${hex(y)}, Math.log1p ${hex(ref)}` };
    }
    case 'sin':
    case 'cos': {
      const x = a.trig(i);
      const y = name === 'sin' ? sin(x) : cos(x);
      return { verdict: checkSinCos(x, y, name === 'cos'), detail: `${name}(${hex(x)}) = ${hex(y)}` };
    }
    default: {
      const [x, y] = a.pow(i);
      const z = pow(x, y);
      return { verdict: checkPow(x, y, z), detail: `pow(${hex(x)}, ${hex(y)}) = ${hex(z)}` };
    }
  }
}

/** Checks `count` seeded random arguments per function and returns the counts. */
export function verifyMath(options: VerifyOptions): FunctionReport[] {
  const node20 = process.versions.node.startsWith('20.');
  const reports: FunctionReport[] = [];
  for (const name of options.only ?? ALL) {
    const a = new Args((options.seed ^ (BigInt(ALL.indexOf(name) + 1) * 0x9e3779b97f4a7c15n)) & 0xffffffffffffffffn);
    const report: FunctionReport = { name, count: 0, ok: 0, wrong: 0, undecided: 0, failures: [], seconds: 0 };
    const t0 = performance.now();
    for (let i = 0; i < options.count; i++) {
      const { verdict, detail } = judgeOne(name, a, i, node20);
      report.count += 1;
      report[verdict] += 1;
      if (verdict !== 'ok' && report.failures.length < 5) report.failures.push(`${verdict}: ${detail}`);
    }
    report.seconds = (performance.now() - t0) / 1000;
    reports.push(report);
    options.onReport?.(report);
  }
  return reports;
}

/** 4,096 log1p arguments over every branch of fdlibm's s_log1p.c, with Math.log1p's results. */
function writeLog1pFixture(target: string): void {
  if (!process.versions.node.startsWith('20.')) {
    throw new Error(`--write-log1p-fixture needs Node 20 (V8's fdlibm log1p); this is Node ${process.versions.node}`);
  }
  const a = new Args(0x6c6f6731707031n);
  const cases: [string, string][] = [];
  const specials = [0, -0, -1, -2, Infinity, -Infinity, NaN, 5e-324, -5e-324, 2 ** -54, -(2 ** -54), 2 ** -55, 2 ** -29, -(2 ** -29), 0.41421356, -0.29289321, 2 ** 53, 2 ** 1023];
  for (const x of specials) cases.push([hex(x), hex(Math.log1p(x))]);
  for (let i = 0; cases.length < 4096; i++) {
    let x: number;
    switch (i % 8) {
      case 0:
        x = a.tiny(70); // |x| < 2^-29 and below 2^-54
        break;
      case 1:
        x = a.uniform(-0.2929, 0.4142); // k = 0: f = x
        break;
      case 2:
        x = a.uniform(-1, -0.2929); // k < 0, correction c
        break;
      case 3:
        x = a.uniform(0.4142, 1e6); // k > 0
        break;
      case 4:
        x = 2 ** a.below(60) * (1 + a.unit() * 2 ** -(20 + a.below(33))) - 1; // hu = 0 (|f| < 2^-20)
        break;
      case 5:
        x = a.uniform(2 ** 53, 2 ** 60) * 2 ** a.below(900); // x ≥ 2^53: c = 0
        break;
      case 6:
        x = -1 + Math.abs(a.tiny(53));
        break;
      default:
        x = a.bits();
    }
    cases.push([hex(x), hex(Math.log1p(x))]);
  }
  const doc = {
    note: `log1p arguments over every branch of fdlibm s_log1p.c with the results of Math.log1p on Node ${process.versions.node} (V8's fdlibm port), written by tools/verify-math.ts --write-log1p-fixture. Bits are IEEE-754 binary64 patterns, most significant byte first.`,
    cases,
  };
  writeFileSync(target, `${JSON.stringify(doc)}\n`);
  console.log(`wrote ${cases.length} cases to ${target}`);
}

function main(argv: string[]): number {
  let count = 1_000_000;
  let seed = 0x6c6c6d6370n;
  let only: MathFunctionName[] | undefined;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '--count') count = Number(argv[++i]);
    else if (arg === '--seed') seed = BigInt(argv[++i] ?? '0');
    else if (arg === '--only') only = (argv[++i] ?? '').split(',') as MathFunctionName[];
    else if (arg === '--write-log1p-fixture') {
      const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
      writeLog1pFixture(path.join(root, 'packages/conformance/fixtures/vectors/log1p-fdlibm.json'));
      return 0;
    } else {
      console.error(`unknown option ${arg}`);
      return 2;
    }
  }
  if (!Number.isInteger(count) || count < 1) {
    console.error('--count must be a positive integer');
    return 2;
  }
  console.log(`verify-math: ${MATH_VERSION}, ${count.toLocaleString('en-US')} arguments per function, seed 0x${seed.toString(16)}, Node ${process.versions.node}`);
  const reports = verifyMath({
    count,
    seed,
    ...(only ? { only } : {}),
    onReport: (r) => {
      const rate = Math.round(r.count / r.seconds).toLocaleString('en-US');
      const against = r.name === 'log1p' ? 'Math.log1p' : 'oracle';
      console.log(
        `${r.name.padEnd(5)} ${r.count.toLocaleString('en-US')} checked vs ${against}: ${r.ok.toLocaleString('en-US')} ok, ${r.wrong} wrong, ${r.undecided} undecided (${r.seconds.toFixed(1)} s, ${rate}/s)`,
      );
      for (const f of r.failures) console.log(`  ${f}`);
    },
  });
  const bad = reports.reduce((n, r) => n + r.wrong + r.undecided, 0);
  console.log(bad === 0 ? 'verify-math: all results verified' : `verify-math: ${bad} results NOT verified`);
  return bad === 0 ? 0 : 1;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  process.exitCode = main(process.argv.slice(2));
}
