import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { f64BitsHex, f64Bytes, f64FromBits, f64Text, f64ToBits, hexBytes, quotedBytes, u64Hex } from './bits.ts';

describe('f64ToBits', () => {
  it('gives the IEEE-754 pattern, the sign of zero included', () => {
    expect(f64ToBits(1)).toBe(0x3ff0000000000000n);
    expect(f64ToBits(-2)).toBe(0xc000000000000000n);
    expect(f64ToBits(0)).toBe(0n);
    expect(f64ToBits(-0)).toBe(0x8000000000000000n);
    expect(f64ToBits(5e-324)).toBe(1n);
    expect(f64ToBits(Number.POSITIVE_INFINITY)).toBe(0x7ff0000000000000n);
  });

  it('agrees with a Float64Array / BigUint64Array view of the same memory for any non-NaN value', () => {
    fc.assert(
      fc.property(fc.double({ noNaN: true }), (x) => {
        const expected = new BigUint64Array(Float64Array.of(x).buffer)[0];
        // Views use host byte order on both sides, so this holds on any host.
        expect(f64ToBits(x)).toBe(expected);
      }),
    );
  });
});

describe('f64FromBits', () => {
  it('inverts f64ToBits for every non-NaN value', () => {
    fc.assert(fc.property(fc.double({ noNaN: true }), (x) => Object.is(f64FromBits(f64ToBits(x)), x)));
    expect(Object.is(f64FromBits(0x8000000000000000n), -0)).toBe(true);
    expect(f64FromBits(0x3fdb8cc6573cd2c7n)).toBe(0.43046721000000016);
  });

  it('rejects patterns outside [0, 2^64) with a RangeError', () => {
    expect(() => f64FromBits(-1n)).toThrow(RangeError);
    expect(() => f64FromBits(1n << 64n)).toThrow(/expected a bigint in \[0, 2\^64\), found 18446744073709551616/);
  });
});

describe('f64BitsHex', () => {
  it('writes 0x and 16 lowercase hex digits, leading zeros kept', () => {
    expect(f64BitsHex(0.43046721000000016)).toBe('0x3fdb8cc6573cd2c7');
    expect(f64BitsHex(10000)).toBe('0x40c3880000000000');
    expect(f64BitsHex(5e-324)).toBe('0x0000000000000001');
    expect(f64BitsHex(0)).toBe('0x0000000000000000');
    expect(f64BitsHex(-0)).toBe('0x8000000000000000');
  });
});

describe('f64Text', () => {
  it('is the shortest round-trip decimal with −0 visible', () => {
    expect(f64Text(-0)).toBe('-0');
    expect(f64Text(0)).toBe('0');
    expect(f64Text(0.1 + 0.2)).toBe('0.30000000000000004');
    expect(f64Text(1e-8)).toBe('1e-8');
    expect(f64Text(Number.NaN)).toBe('NaN');
    expect(f64Text(Number.NEGATIVE_INFINITY)).toBe('-Infinity');
  });
});

describe('u64Hex', () => {
  it('pads to 16 digits across the whole u64 range', () => {
    expect(u64Hex(0n)).toBe('0x0000000000000000');
    expect(u64Hex(0x9e3779b97f4a7c38n)).toBe('0x9e3779b97f4a7c38');
    expect(u64Hex((1n << 64n) - 1n)).toBe('0xffffffffffffffff');
  });

  it('rejects values outside [0, 2^64) instead of printing a wider or signed number', () => {
    expect(() => u64Hex(-1n)).toThrow(RangeError);
    expect(() => u64Hex(1n << 64n)).toThrow(RangeError);
  });
});

describe('hexBytes', () => {
  it('writes space-separated lowercase pairs by default', () => {
    expect(hexBytes(Uint8Array.of(0x4c, 0x4c, 0x4d, 0x00, 0xff))).toBe('4c 4c 4d 00 ff');
    expect(hexBytes(new Uint8Array(0))).toBe('');
  });

  it('takes another separator, including none', () => {
    expect(hexBytes(Uint8Array.of(0xab, 0x01), '')).toBe('ab01');
    expect(hexBytes(Uint8Array.of(0xab, 0x01, 0x02), ':')).toBe('ab:01:02');
  });

  it('matches a per-byte toString(16) for any bytes', () => {
    fc.assert(fc.property(fc.uint8Array({ maxLength: 64 }), (b) => hexBytes(b) === Array.from(b, (x) => x.toString(16).padStart(2, '0')).join(' ')));
  });
});

describe('quotedBytes', () => {
  it('keeps printable ASCII, escapes quote and backslash, and writes other bytes as \\xNN', () => {
    expect(quotedBytes(new TextEncoder().encode('ab c'))).toBe('"ab c"');
    expect(quotedBytes(Uint8Array.of(0x22, 0x5c))).toBe('"\\"\\\\"');
    expect(quotedBytes(Uint8Array.of(0x00, 0x0a, 0x7f, 0xc3, 0xa9))).toBe('"\\x00\\x0a\\x7f\\xc3\\xa9"');
    expect(quotedBytes(new Uint8Array(0))).toBe('""');
  });

  it('is unambiguous: different bytes never give the same text', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 12 }), fc.uint8Array({ maxLength: 12 }), (a, b) => {
        const same = a.length === b.length && a.every((x, i) => x === b[i]);
        return same === (quotedBytes(a) === quotedBytes(b));
      }),
    );
  });
});

describe('f64Bytes', () => {
  it('writes each value as its little-endian bit pattern', () => {
    expect(hexBytes(f64Bytes([1, -0]))).toBe('00 00 00 00 00 00 f0 3f 00 00 00 00 00 00 00 80');
  });

  it('gives the same bytes for a Float64Array (also a subarray) and a plain array, in a fresh buffer', () => {
    const values = Float64Array.of(9, 0.1, -0, 5e-324, 3);
    const part = values.subarray(1, 4);
    const bytes = f64Bytes(part);
    expect(bytes).toEqual(f64Bytes([0.1, -0, 5e-324]));
    expect(bytes.byteLength).toBe(24);
    bytes.fill(0);
    expect(values[1]).toBe(0.1);
    const view = new DataView(f64Bytes(part).buffer);
    expect(view.getBigUint64(8, true)).toBe(0x8000000000000000n);
  });
});
