"""How numbers read in error texts: JavaScript's ``String`` (and ``f64Text``) of an f64.

The cases below are ECMA-262's Number::toString rules at their edges; the
comparison with JavaScript itself, on tens of thousands of generated bit
patterns, is in tools/python-reader.test.ts (it hands them to this package
in the job and compares both texts).
"""

from __future__ import annotations

import math
import os
import random
import re
import struct
import unittest

from support import FIXTURES, GOLDEN_PATH, read

import llmcp
from llmcp.text import f64_text, js_number_text


def from_bits(bits):
    return struct.unpack('<d', struct.pack('<Q', bits))[0]


def bits_of(value):
    return struct.unpack('<Q', struct.pack('<d', value))[0]


class JsNumberTextTest(unittest.TestCase):
    def test_zero_infinity_and_nan_read_as_in_javascript(self):
        self.assertEqual([js_number_text(v) for v in (0.0, -0.0, math.inf, -math.inf, math.nan)], ['0', '0', 'Infinity', '-Infinity', 'NaN'])
        self.assertEqual([f64_text(v) for v in (0.0, -0.0, math.nan)], ['0', '-0', 'NaN'])

    def test_integers_below_1e21_are_the_shortest_digits_padded_with_zeros(self):
        self.assertEqual(js_number_text(2.0 ** 53), '9007199254740992')
        self.assertEqual(js_number_text(2.0 ** 63), '9223372036854776000')
        self.assertEqual(js_number_text(-(2.0 ** 64)), '-18446744073709552000')
        self.assertEqual(js_number_text(from_bits(bits_of(1e21) - 1)), '999999999999999900000')
        self.assertEqual(js_number_text(1e21), '1e+21')
        self.assertEqual(js_number_text(123.0), '123')

    def test_values_below_1e_minus_6_take_an_exponent(self):
        self.assertEqual(js_number_text(1e-6), '0.000001')
        self.assertEqual(js_number_text(1.234e-6), '0.000001234')
        self.assertEqual(js_number_text(1e-7), '1e-7')
        self.assertEqual(js_number_text(-1.5e-7), '-1.5e-7')
        self.assertEqual(js_number_text(5e-324), '5e-324')
        self.assertEqual(js_number_text(1e-5), '0.00001')

    def test_large_and_fractional_values(self):
        self.assertEqual(js_number_text(1.7976931348623157e308), '1.7976931348623157e+308')
        self.assertEqual(js_number_text(0.1 + 0.2), '0.30000000000000004')
        self.assertEqual(js_number_text(123456789.125), '123456789.125')
        self.assertEqual(js_number_text(1.5e300), '1.5e+300')

    def test_every_finite_text_reads_back_as_the_same_value_in_the_right_form(self):
        rng = random.Random(0x29)
        plain = re.compile(r'-?(0|[1-9][0-9]*)(\.[0-9]*[1-9])?')
        exponent = re.compile(r'-?[1-9](\.[0-9]*[1-9])?e[+-][1-9][0-9]*')
        for _ in range(20000):
            v = from_bits(rng.getrandbits(64))
            if not math.isfinite(v):
                continue
            t = js_number_text(v)
            self.assertEqual(float(t), v, t)
            self.assertTrue(plain.fullmatch(t) or exponent.fullmatch(t), t)
            self.assertEqual('e' in t, v != 0 and not (1e-6 <= abs(v) < 1e21), t)


class FoundTextTest(unittest.TestCase):
    def decode_error(self, edit, path=GOLDEN_PATH):
        data = bytearray(read(path))
        edit(data)
        struct.pack_into('<Q', data, 30, 0)
        struct.pack_into('<Q', data, 30, llmcp.file_checksum(bytes(data)))
        with self.assertRaises(llmcp.FormatError) as cm:
            llmcp.decode(bytes(data))
        return cm.exception

    def test_a_negative_zero_learning_rate_is_found_as_0_as_formatErrorData_has_it(self):
        e = self.decode_error(lambda d: struct.pack_into('<d', d, 131, -0.0))
        self.assertEqual((e.code, e.reason, e.found), ('FORMAT_ADAMW_CONFIG', 'invalid-learning-rate', '0'))
        self.assertEqual(e.to_dict()['found'], '0')

    def beta1_power_offset(self, path):
        # The optimizer step, beta1 power, beta2 power and two u32 counts come right before the descriptor count.
        return llmcp.decode(read(path)).layout.descriptor_count_offset - 24

    def test_a_beta_power_of_2_to_the_63_is_found_with_javascripts_digits(self):
        offset = self.beta1_power_offset(GOLDEN_PATH)
        e = self.decode_error(lambda d: struct.pack_into('<d', d, offset, 2.0 ** 63))
        self.assertEqual((e.code, e.reason, e.offset, e.found), ('FORMAT_ADAMW_STATE', 'invalid-beta-power', offset, '9223372036854776000'))

    def test_a_negative_zero_beta_power_at_step_0_keeps_its_sign_as_f64Text_does(self):
        path = os.path.join(FIXTURES, 'malformed', 'step-zero.llmcp')
        offset = self.beta1_power_offset(path)
        e = self.decode_error(lambda d: struct.pack_into('<d', d, offset, -0.0), path)
        self.assertEqual((e.code, e.reason, e.offset, e.expected, e.found), ('FORMAT_ADAMW_STATE', 'invalid-beta-power', offset, 'exactly 1.0 at step 0', '-0'))


if __name__ == '__main__':
    unittest.main()
