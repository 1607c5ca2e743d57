"""strata.gpu: the batch-size calculator on the numbers of its docstring
(doctest) and on hand-worked cases; no GPU is needed."""
import doctest
import unittest

import strata.gpu as gpu
from strata.gpu import batch_size_plan, max_batch_size

GiB = 1 << 30


class GpuTest(unittest.TestCase):
    def test_docstring_numbers(self):
        failed, attempted = doctest.testmod(gpu, verbose=False)
        self.assertGreaterEqual(attempted, 4)
        self.assertEqual(failed, 0)

    def test_hand_worked(self):
        # 16 GiB, 1 GiB reserved, 100M fp32 params with SGD momentum
        # (4 B x 3 = 1.2 GB), 100 MiB per sample:
        # (16 GiB - 1 GiB - 1.2e9) / 104857600 = 142.17 -> 142 -> 136
        p = batch_size_plan(16 * GiB, 100_000_000, 100 << 20, optimizer="momentum",
                            reserve="1GiB")
        self.assertEqual(p["usable"], 15 * GiB)
        self.assertEqual(p["model_state"], 1_200_000_000)
        self.assertEqual(p["fits"], 142)
        self.assertEqual(p["batch_size"], 136)
        self.assertEqual(max_batch_size(16 * GiB, 100_000_000, 100 << 20, optimizer="momentum",
                                        reserve=GiB), 136)
        # multiple=1 keeps every sample; a numeric optimizer factor
        self.assertEqual(max_batch_size(16 * GiB, 100_000_000, 100 << 20, optimizer=1,
                                        reserve=GiB, multiple=1), 142)
        # an exact multiple stays as is: (10 GiB - 0) / 1 GiB with no model = 10 -> 8
        self.assertEqual(max_batch_size("10GiB", 0, "1GiB", reserve=0.0), 8)
        self.assertEqual(max_batch_size("16GiB", 0, "1GiB", reserve=0.0), 16)

    def test_errors(self):
        with self.assertRaisesRegex(ValueError, "does not fit"):
            max_batch_size("8GiB", 2_000_000_000, "1MiB")  # 32 GB of Adam state
        with self.assertRaisesRegex(ValueError, "only 7 samples"):
            max_batch_size("8GiB", 0, "1GiB", reserve=GiB)
        with self.assertRaisesRegex(ValueError, "optimizer"):
            max_batch_size("8GiB", 1, "1MiB", optimizer="lion")
        with self.assertRaises(ValueError):
            max_batch_size("8GiB", 1, 0)
        with self.assertRaises(ValueError):
            max_batch_size(-1, 1, 1)


if __name__ == "__main__":
    unittest.main()
