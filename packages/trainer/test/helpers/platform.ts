/** Facts about the machine that decide which platform-specific expectations hold. */
import { spawnSync } from 'node:child_process';

/** Whether util-linux's `chrt` runs here (Linux): the save thread can then reach SCHED_IDLE (save-priority.ts). */
export const hasChrt: boolean = process.platform === 'linux' && spawnSync('chrt', ['--version'], { stdio: 'ignore' }).status === 0;
