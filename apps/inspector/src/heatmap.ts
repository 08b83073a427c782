/**
 * Heatmaps of 2-D f64 tensors: the matrix read straight from the record's
 * bytes, downsampled by block means to at most {@link MAX_HEATMAP_CELLS}
 * cells a side, coloured with a diverging map centred on 0 (blue negative,
 * white zero, red positive; scaled by the largest |value|). Non-finite
 * values are drawn black.
 */

/** Cells a side at most; a larger matrix is averaged in blocks. */
export const MAX_HEATMAP_CELLS = 64;

/** A downsampled matrix. */
export interface HeatmapGrid {
  readonly rows: number;
  readonly columns: number;
  /** Rows and columns of the tensor each cell averages. */
  readonly blockRows: number;
  readonly blockColumns: number;
  /** Row-major cell values (NaN where a block holds a non-finite value). */
  readonly values: Float64Array;
  /** Largest |cell value| (0 for an all-zero tensor). */
  readonly scale: number;
}

/** Where a 2-D f64 record lies and how far to downsample it. */
export interface HeatmapSource {
  /** First byte of the record (row-major f64, little-endian). */
  readonly offset: number;
  /** The tensor's first and second dimensions. */
  readonly rows: number;
  readonly columns: number;
  /** Cells a side at most (default {@link MAX_HEATMAP_CELLS}). */
  readonly maxCells?: number;
}

/**
 * @param bytes - the file.
 * @param source - where the record lies, its shape and the cap.
 * @returns the grid.
 * @throws RangeError when the record does not fit in `bytes`.
 */
export function heatmapGrid(bytes: Uint8Array, source: HeatmapSource): HeatmapGrid {
  const { offset, rows, columns, maxCells = MAX_HEATMAP_CELLS } = source;
  if (offset < 0 || offset + rows * columns * 8 > bytes.length) throw new RangeError(`heatmapGrid: a ${rows}×${columns} f64 record at ${offset} does not fit in ${bytes.length} bytes`);
  const view = new DataView(bytes.buffer, bytes.byteOffset + offset, rows * columns * 8);
  const blockRows = Math.max(1, Math.ceil(rows / maxCells));
  const blockColumns = Math.max(1, Math.ceil(columns / maxCells));
  const outRows = Math.ceil(rows / blockRows);
  const outColumns = Math.ceil(columns / blockColumns);
  const sums = new Float64Array(outRows * outColumns);
  const counts = new Uint32Array(outRows * outColumns);
  for (let r = 0; r < rows; r++) {
    const cr = Math.floor(r / blockRows) * outColumns;
    for (let c = 0; c < columns; c++) {
      const k = cr + Math.floor(c / blockColumns);
      sums[k] = (sums[k] as number) + view.getFloat64(8 * (r * columns + c), true);
      counts[k] = (counts[k] as number) + 1;
    }
  }
  let scale = 0;
  for (let k = 0; k < sums.length; k++) {
    const v = (sums[k] as number) / (counts[k] as number);
    sums[k] = Number.isFinite(v) ? v : Number.NaN;
    if (Number.isFinite(v) && Math.abs(v) > scale) scale = Math.abs(v);
  }
  return { rows: outRows, columns: outColumns, blockRows, blockColumns, values: sums, scale };
}

/**
 * The diverging colour of a value: blue (−scale) → white (0) → red (+scale).
 *
 * @param value - the value.
 * @param scale - the largest |value| of the map.
 * @returns `[r, g, b]` in 0–255; black for a non-finite value.
 */
export function divergingColour(value: number, scale: number): [number, number, number] {
  if (!Number.isFinite(value)) return [0, 0, 0];
  const t = scale === 0 ? 0 : Math.max(-1, Math.min(1, value / scale));
  // White to #2166ac (negative) or #b2182b (positive), linearly.
  const [r, g, b] = t < 0 ? [0x21, 0x66, 0xac] : [0xb2, 0x18, 0x2b];
  const a = Math.abs(t);
  return [Math.round(255 + (r - 255) * a), Math.round(255 + (g - 255) * a), Math.round(255 + (b - 255) * a)];
}

/**
 * Draws a grid into a canvas, one canvas pixel per cell (scaled up by CSS).
 *
 * @param canvas - the canvas (resized to the grid).
 * @param grid - the grid.
 */
export function drawHeatmap(canvas: HTMLCanvasElement, grid: HeatmapGrid): void {
  canvas.width = grid.columns;
  canvas.height = grid.rows;
  const ctx = canvas.getContext('2d');
  if (ctx === null) return;
  const image = ctx.createImageData(grid.columns, grid.rows);
  for (let k = 0; k < grid.values.length; k++) {
    const [r, g, b] = divergingColour(grid.values[k] as number, grid.scale);
    image.data[4 * k] = r;
    image.data[4 * k + 1] = g;
    image.data[4 * k + 2] = b;
    image.data[4 * k + 3] = 255;
  }
  ctx.putImageData(image, 0, 0);
}
