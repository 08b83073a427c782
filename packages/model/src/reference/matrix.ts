/**
 * The one matrix type of the model: a view of rows of an array. Every buffer
 * a layer reads or writes travels as one, so a layer takes a handful of
 * arguments (llm.c's `matmul_forward` takes eight) and never a list of
 * offsets and strides: one sequence's rows of a batch buffer, one head's
 * columns of a (T, D) activation and a weight whose rows are padded are all
 * views of arrays that hold more.
 */

/** `rows` rows of `columns` values in `data`; element (r, c) at `offset + r·stride + c`. */
export interface Matrix {
  readonly data: Float64Array;
  /** Index of element (0, 0) in `data`. */
  readonly offset: number;
  readonly rows: number;
  readonly columns: number;
  /** Distance between the starts of two rows (≥ columns). */
  readonly stride: number;
}

/**
 * A view of `data` as a row-major matrix.
 *
 * @param data - the values.
 * @param rows - rows.
 * @param columns - values per row.
 * @param stride - distance between rows (default `columns`: contiguous rows).
 * @param offset - index of element (0, 0) (default 0).
 * @returns the view.
 */
export function matrix(data: Float64Array, rows: number, columns: number, stride: number = columns, offset: number = 0): Matrix {
  return { data, offset, rows, columns, stride };
}

/**
 * Rows `first … first + count − 1` of `m` (one sequence of a batch, the rows a product leaves to another thread).
 *
 * @param m - a matrix.
 * @param first - first row.
 * @param count - rows.
 * @returns the view.
 */
export function rowsOf(m: Matrix, first: number, count: number): Matrix {
  return { data: m.data, offset: m.offset + first * m.stride, rows: count, columns: m.columns, stride: m.stride };
}

/**
 * Columns `first … first + count − 1` of `m` (one head of a (T, D) activation).
 *
 * @param m - a matrix.
 * @param first - first column.
 * @param count - columns.
 * @returns the view.
 */
export function columnsOf(m: Matrix, first: number, count: number): Matrix {
  return { data: m.data, offset: m.offset + first, rows: m.rows, columns: count, stride: m.stride };
}
