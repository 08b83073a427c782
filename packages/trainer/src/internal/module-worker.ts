/**
 * Starts a worker thread on a module of this package, from built JavaScript
 * or from TypeScript sources alike — the one home of the source bootstrap.
 */
import { Worker } from 'node:worker_threads';

/**
 * Starts `entry` in a worker thread. A `.ts` entry (tests, benches, `node
 * --import tsx`) gets the TypeScript loader registered inside the worker and
 * resolves workspace packages to their sources like the parent does; a `.js`
 * entry starts as it is.
 *
 * @param entry - the module's URL.
 * @param workerData - the worker's `workerData`.
 * @returns the started worker.
 */
export function startModuleWorker(entry: URL, workerData: unknown): Worker {
  if (entry.pathname.endsWith('.ts')) {
    const tsx = import.meta.resolve('tsx/esm/api');
    const bootstrap = `const api = await import(${JSON.stringify(tsx)}); api.register(); await import(${JSON.stringify(entry.href)});`;
    return new Worker(bootstrap, { eval: true, execArgv: ['--conditions=@llmcp/source'], workerData });
  }
  return new Worker(entry, { execArgv: [], workerData });
}
