/**
 * Shared WebAssembly memories that cannot be had, for tests of the paths
 * that do without them. Only this thread's constructor is replaced: a
 * decoder makes its workers' memories on the calling thread.
 */

type MemoryConstructor = new (d: { initial: number; shared?: boolean }) => object;

/** What {@link refuseSharedMemories} counts, and the way back. */
export interface RefusedMemories {
  /** Shared memories asked for so far. */
  asked(): number;
  /** Of those, refused. */
  refused(): number;
  /** Puts the real constructor back. */
  restore(): void;
}

/**
 * Makes `new WebAssembly.Memory({ shared: true, … })` throw a RangeError (as
 * when the memory is too large) for the requests `refuse` picks, until
 * `restore()`; unshared memories are made as usual.
 * @param refuse - given n, the count of shared memories asked for so far (from 1): whether to refuse this one.
 * @returns the counts and the way back.
 */
export function refuseSharedMemories(refuse: (n: number) => boolean): RefusedMemories {
  const api = (globalThis as unknown as { WebAssembly: { Memory: MemoryConstructor } }).WebAssembly;
  const Memory = api.Memory;
  let asked = 0;
  let refused = 0;
  api.Memory = new Proxy(Memory, {
    construct(target, args: [{ initial: number; shared?: boolean }]) {
      if (args[0].shared === true && refuse(++asked)) {
        refused++;
        throw new RangeError('out of memory (test)');
      }
      return Reflect.construct(target, args) as object;
    },
  });
  return { asked: () => asked, refused: () => refused, restore: () => (api.Memory = Memory) };
}
