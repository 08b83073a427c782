/** Facts about the machine that decide which platform-specific expectations hold. */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { scheduleOfStat } from '../../src/save-priority.ts';

/** Whether util-linux's `chrt` runs here (Linux): the save thread can then reach SCHED_IDLE (save-priority.ts). */
export const hasChrt: boolean = process.platform === 'linux' && spawnSync('chrt', ['--version'], { stdio: 'ignore' }).status === 0;

/**
 * Scheduling policy and nice value of thread `tid` of this process (Linux).
 * @param tid - a thread id.
 * @returns them; throws when the thread is gone.
 */
export function scheduleOf(tid: number): { policy: number; nice: number } {
  return scheduleOfStat(readFileSync(`/proc/self/task/${tid}/stat`, 'utf8'));
}
