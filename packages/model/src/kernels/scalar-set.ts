/**
 * The `scalar` kernel set: the reference layers themselves
 * (../reference/layers.ts), on ordinary arrays — no WebAssembly, no addon.
 * It defines the bits the other sets must give; it runs where neither is
 * available, and under `LLMCP_KERNELS=scalar`.
 */
import type { DecoderConfig } from '@llmcp/format';
import { REFERENCE_LAYERS } from '../reference/layers.ts';
import { gemmJs, transpose } from './gemm.ts';
import type { Kernels } from './kernel-set.ts';
import { Workspace } from './workspace.ts';

/**
 * The scalar kernel set of one thread: the reference layers, the JavaScript product, ordinary arrays (no arena:
 * its products are never handed to another thread).
 * @param config - the decoder configuration.
 * @param trace - keep traces.
 * @returns the kernels.
 */
export function scalarKernels(config: DecoderConfig, trace: boolean): Kernels {
  return {
    ...REFERENCE_LAYERS,
    name: 'scalar',
    kind: 'js-scalar',
    workspace: new Workspace(config, { arena: () => null, transpose }, trace),
    helpMinRows: Infinity,
    product: gemmJs,
    productOn: () => null,
  };
}
