"""The Python module over the engine API, on the tiny checkpoints: every call against the CLI's output
for the same request, image inputs of every kind, streaming and cancelling, threads, errors."""
import io
import os
import pydoc
import threading
import time
import unittest

import numpy as np
from PIL import Image

import smolvlm
from common import CORRUPT, FLOWER, HUNYUAN, IMAGES, LLAMA, TINY, cli, cli_json


class TranslateTest(unittest.TestCase):
    """Model.translate builds the prompt `smolvlm translate` builds (the library's, from the model card)."""

    @classmethod
    def setUpClass(cls):
        cls.m = smolvlm.Model(HUNYUAN)

    def tmp(self):
        import tempfile
        d = tempfile.mkdtemp(prefix="smolvlm_py_translate_")
        self.addCleanup(__import__("shutil").rmtree, d)
        return d

    def test_translate_equals_cli(self):
        terms = os.path.join(self.tmp(), "terms.tsv")
        with open(terms, "w") as f:
            f.write("receipt\t收据\n")
        cases = (("Good morning, friends.", dict(to="de"), ["--to", "de"]),
                 ("Good morning, friends.", dict(to="Chinese", system="Be formal."), ["--to", "Chinese", "--system", "Be formal."]),
                 ("早上好", dict(to="en", from_="zh"), ["--to", "en", "--from", "zh"]),
                 ("Keep the receipt.", dict(to="zh", terms=[("receipt", "收据")]), ["--to", "zh", "--terms", terms]))
        for text, kwargs, flags in cases:
            with self.subTest(flags=flags):
                r = self.m.translate(text, max_new_tokens=6, **kwargs)
                c = cli_json("translate", "--model", HUNYUAN, "--json", "--max-new-tokens", "6", *flags, text)
                self.assertEqual(r.token_ids, c["token_ids"])
                self.assertEqual(r.text, c["text"])
                self.assertEqual(r.prompt_tokens, c["prompt_tokens"])

    def test_sample_uses_generation_config(self):
        rec = self.m.info()["recommended_sampling"]
        self.assertEqual(set(rec), {"temperature", "top_k", "top_p", "repetition_penalty"})
        r = self.m.translate("Good morning.", to="fr", sample=True, seed=3, max_new_tokens=5)
        c = cli_json("translate", "--model", HUNYUAN, "--json", "--sample", "--seed", "3", "--max-new-tokens", "5",
                     "--to", "fr", "Good morning.")
        self.assertEqual(r.token_ids, c["token_ids"])
        with self.assertRaises(TypeError):
            self.m.translate("x", to="fr", sample=True, temperature=0.5)
        self.assertIn("zh-Hant", smolvlm.translation_languages().split(", "))


class ModelTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.m = smolvlm.Model(TINY)

    def test_caption_ids_equal_cli(self):
        for split, flags in ((None, []), (False, ["--no-split"])):
            r = self.m.caption(FLOWER, max_new_tokens=8, split=split)
            c = cli_json("caption", "--model", TINY, "--json", "--max-new-tokens", "8", *flags, FLOWER)
            self.assertEqual(r.token_ids, c["token_ids"])
            self.assertEqual(r.text, c["text"])
            self.assertEqual(r.prompt_tokens, c["prompt_tokens"])
            self.assertEqual(r.finish_reason, c["finish_reason"])
            self.assertEqual(len(r.token_ids), 8)
        self.assertEqual(set(r.timings), {"load_s", "preprocess_s", "vision_s", "prefill_s", "decode_s"})
        self.assertIn(r.kernel_path, smolvlm.supported_kernel_paths().split())
        self.assertEqual(r.to_dict()["token_ids"], r.token_ids)
        self.assertEqual(self.m.info()["decode_products"], f"BF16 {self.m.info()['kernel_path']} fp32")

    def test_caption_prompt_and_sampling_equal_cli(self):
        r = self.m.caption([FLOWER, FLOWER], "What is it?", max_new_tokens=6, split=False, temperature=0.8,
                           top_k=20, seed=7)
        c = cli_json("caption", "--model", TINY, "--json", "--max-new-tokens", "6", "--no-split", "--temperature",
                     "0.8", "--top-k", "20", "--seed", "7", "--prompt", "What is it?", FLOWER, FLOWER)
        self.assertEqual(r.token_ids, c["token_ids"])

    def test_chat_equals_cli_messages(self):
        messages = [{"role": "system", "content": "Be brief."},
                    {"role": "user", "content": [{"type": "image_url", "image_url": {"url": "file://" + FLOWER}},
                                                 {"type": "text", "text": "Name the flower."}]}]
        r = self.m.chat(messages, max_new_tokens=6, split=False)
        path = os.path.join(self.tmp(), "messages.json")
        with open(path, "w") as f:
            import json
            json.dump(messages, f)
        c = cli_json("generate", "--model", TINY, "--json", "--max-new-tokens", "6", "--messages", path)
        # generate --messages renders with the chat template, splitting as the config says
        r_split = self.m.chat(messages, max_new_tokens=6)
        self.assertEqual(r_split.token_ids, c["token_ids"])
        self.assertEqual(len(r.token_ids), 6)
        text, ids = self.m.render_prompt(messages, split=False)
        self.assertEqual(len(ids), r.prompt_tokens)
        self.assertIn("Name the flower.", text)

    def test_generate_equals_cli(self):
        llama = smolvlm.Model(LLAMA)
        r = llama.generate("The capital of France is", max_new_tokens=8)
        c = cli_json("generate", "--model", LLAMA, "--json", "--max-new-tokens", "8", "--prompt",
                     "The capital of France is")
        self.assertEqual(r.token_ids, c["token_ids"])
        self.assertEqual(r.text, c["text"])
        stopped = llama.generate("The capital of France is", max_new_tokens=8, stop_ids=[r.token_ids[2]])
        self.assertEqual(stopped.token_ids, r.token_ids[:3])
        self.assertEqual(stopped.finish_reason, "eos")

    def test_tokenize_detokenize_equal_cli(self):
        text = "Hello, wörld! <image> 123"
        for special, flags in ((True, ["--add-special-tokens"]), (False, [])):
            ids = self.m.tokenize(text, add_special_tokens=special)
            self.assertEqual(ids, cli_json("tokenize", "--model", TINY, *flags, text)["ids"])
        ids = self.m.tokenize(text, add_special_tokens=False)
        self.assertEqual(self.m.detokenize(ids, skip_special_tokens=False), text)
        c = cli_json("detokenize", "--model", TINY, *map(str, ids))
        self.assertEqual(self.m.detokenize(ids, skip_special_tokens=False), c["text"])
        self.assertEqual(self.m.token_to_string(ids[0]), "Hello")

    def test_info(self):
        i = self.m.info()
        c = cli_json("info", "--model", TINY, "--json") if "--json" in cli("info", "--help").stdout else None
        self.assertEqual(i["architecture"], "Idefics3ForConditionalGeneration")
        self.assertTrue(i["has_vision"])
        self.assertEqual(i["params"]["total"],
                         i["params"]["vision"] + i["params"]["connector"] + i["params"]["text"] + i["params"]["lm_head"])
        if c is not None and "parameters" in c:
            self.assertEqual(i["params"]["total"], c["parameters"]["total"])
        self.assertIn("smolvlm-tiny", repr(self.m))
        self.assertEqual(smolvlm.Model(TINY, threads=1, ctx=512).info()["max_context"], 512)

    def test_precision(self):
        self.assertEqual(self.m.info()["precision"], "exact")
        with self.assertRaisesRegex(Exception, "expected exact or fast"):
            smolvlm.Model(TINY, precision="half")
        with self.assertRaisesRegex(Exception, "avx512_bf16"):
            smolvlm.Model(TINY, kernels="scalar", precision="fast")
        bad = cli("caption", "--model", TINY, "--precision", "half", FLOWER, check=False)
        self.assertNotEqual(bad.returncode, 0)
        self.assertIn("--precision", bad.stderr)
        try:
            fast = smolvlm.Model(TINY, threads=2, precision="fast")
        except Exception as e:  # a CPU without avx512_bf16 refuses it, naming what is missing
            self.assertIn("avx512_bf16", str(e))
            self.skipTest(str(e))
        self.assertEqual(fast.info()["precision"], "fast")
        r = fast.caption(FLOWER, max_new_tokens=6, split=False)
        c = cli_json("caption", "--model", TINY, "--threads", "2", "--precision", "fast", "--no-split",
                     "--max-new-tokens", "6", "--json", FLOWER)
        self.assertEqual(list(r.token_ids), c["token_ids"])

    def test_weight_memory(self):
        self.assertEqual(self.m.info()["weight_memory"], "read")
        mapped = smolvlm.Model(TINY, threads=2, weight_memory="map")
        self.assertEqual(mapped.info()["weight_memory"], "map")
        with self.assertRaisesRegex(Exception, "expected read or map"):
            smolvlm.Model(TINY, weight_memory="mmap")
        bad = cli("caption", "--model", TINY, "--weight-memory", "mmap", FLOWER, check=False)
        self.assertNotEqual(bad.returncode, 0)
        self.assertIn("--weight-memory", bad.stderr)
        r = mapped.caption(FLOWER, max_new_tokens=6, split=False)
        c = cli_json("caption", "--model", TINY, "--threads", "2", "--weight-memory", "read", "--no-split",
                     "--max-new-tokens", "6", "--json", FLOWER)
        self.assertEqual(list(r.token_ids), c["token_ids"])

    def test_image_inputs_bit_identical(self):
        odd = [os.path.join(IMAGES, "odd", n) for n in ("gen_513x513.png", "gen_pal4bit.png", "gen_1024x512.jpg")]
        for path in [FLOWER] + odd:
            with open(path, "rb") as f:
                data = f.read()
            pil = Image.open(path)
            arr = np.asarray(pil.convert("RGB"))
            inputs = {"path": path, "pathlike": __import__("pathlib").Path(path), "bytes": data,
                      "bytearray": bytearray(data), "memoryview": memoryview(data), "numpy": arr, "numpy_strided": np.ascontiguousarray(arr)[:, :, :],
                      "pil": pil}
            ref = smolvlm.preprocess_image(TINY, path)
            ref_ids = self.m.caption(path, max_new_tokens=4).token_ids
            for kind, image in inputs.items():
                with self.subTest(path=os.path.basename(path), kind=kind):
                    px = smolvlm.preprocess_image(TINY, image)
                    self.assertEqual(px["pixel_values"].dtype, np.float32)
                    self.assertTrue(np.array_equal(px["pixel_values"], ref["pixel_values"]))
                    self.assertTrue(np.array_equal(px["tiles_u8"], ref["tiles_u8"]))
                    self.assertEqual(self.m.caption(image, max_new_tokens=4).token_ids, ref_ids)
        # a non-contiguous view (every other column) equals its contiguous copy
        view = arr[:, ::2, :]
        self.assertFalse(view.flags["C_CONTIGUOUS"])
        self.assertTrue(np.array_equal(smolvlm.preprocess_image(TINY, view)["pixel_values"],
                                       smolvlm.preprocess_image(TINY, np.ascontiguousarray(view))["pixel_values"]))

    def test_stream_cancel_after_3_pieces_leaves_model_usable(self):
        full = self.m.caption(FLOWER, max_new_tokens=12, split=False)
        s = self.m.stream(FLOWER, max_new_tokens=12, split=False)
        pieces = []
        for piece in s:
            pieces.append(piece)
            if len(pieces) == 3:
                break
        s.close()
        self.assertEqual(len(pieces), 3)
        self.assertTrue(full.text.startswith("".join(pieces)))
        self.assertEqual(s.result.finish_reason, "cancelled")
        self.assertLess(len(s.result.token_ids), 12)
        # dropped without close(): cancelled by the destructor
        for i, _ in enumerate(self.m.stream(FLOWER, max_new_tokens=12, split=False)):
            if i == 2:
                break
        again = self.m.caption(FLOWER, max_new_tokens=12, split=False)
        self.assertEqual(again.token_ids, full.token_ids)
        whole = self.m.stream(FLOWER, max_new_tokens=12, split=False)
        self.assertEqual("".join(whole), full.text)
        self.assertEqual(whole.result.token_ids, full.token_ids)
        closed = self.m.stream(FLOWER, max_new_tokens=12, split=False)
        closed.close()  # before reading anything
        self.assertEqual(closed.result.finish_reason, "cancelled")
        with self.assertRaises(smolvlm.BadInputError) as e:
            for _ in self.m.stream(FLOWER, temperature=-1):
                pass
        self.assertIn("sampling temperature", str(e.exception))
        with self.assertRaises(TypeError):
            self.m.stream(FLOWER, messages=[{"role": "user", "content": "Hi"}])
        self.assertEqual("".join(self.m.stream(messages=[{"role": "user", "content": "Hi"}], max_new_tokens=5)),
                         self.m.chat([{"role": "user", "content": "Hi"}], max_new_tokens=5).text)

    def test_threads_concurrent_equal_sequential(self):
        m = smolvlm.Model(TINY, threads=1)
        prompts = [f"Describe image {i}." for i in range(8)]
        m.caption(FLOWER, max_new_tokens=2)  # the tokenizer loaded, pages warm

        def one(p):
            return m.caption(FLOWER, p, max_new_tokens=160, ignore_eos=True, split=False).token_ids

        def concurrent():
            results = [None] * len(prompts)

            def worker(k):
                for i in range(k, len(prompts), 4):
                    results[i] = one(prompts[i])

            threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            return results

        # Equal results are asserted; the times are printed only (a loaded machine decides them: how
        # much the threads gain is the GIL test's and the benchmarks' business, not an assertion here).
        t0 = time.perf_counter()
        sequential = [one(p) for p in prompts]
        t_seq = time.perf_counter() - t0
        t0 = time.perf_counter()
        results = concurrent()
        t_par = time.perf_counter() - t0
        self.assertEqual(results, sequential)
        print(f"\n8 captions of 160 tokens, 1 engine thread each: sequential {t_seq:.2f} s, 4 Python threads {t_par:.2f} s "
              f"({os.cpu_count()} cores)")

    def test_gil_released_while_generating(self):
        m = smolvlm.Model(TINY, threads=1)
        done = threading.Event()
        ticks = [0]

        def count():
            while not done.is_set():
                ticks[0] += 1

        t = threading.Thread(target=count)
        t.start()
        time.sleep(0.05)
        before = ticks[0]
        m.caption(FLOWER, max_new_tokens=32, ignore_eos=True)
        during = ticks[0] - before
        done.set()
        t.join()
        # with the GIL held for the whole caption the counter would stand still (bar a switch interval)
        self.assertGreater(during, 10000)

    def test_errors_map_to_classes_with_engine_messages(self):
        with self.assertRaises(smolvlm.IOError) as e:
            self.m.caption("/nonexistent/cat.jpg")
        self.assertIsInstance(e.exception, OSError)
        self.assertEqual(e.exception.status, 5)
        self.assertEqual(e.exception.code, "io")
        cli_err = cli("caption", "--model", TINY, "/nonexistent/cat.jpg", check=False)
        self.assertEqual(cli_err.returncode, 5)
        self.assertIn(str(e.exception), cli_err.stderr)

        with self.assertRaises(smolvlm.BadInputError) as e:
            self.m.caption(FLOWER, temperature=-1)
        self.assertIsInstance(e.exception, ValueError)
        cli_err = cli("caption", "--model", TINY, "--temperature", "-1", FLOWER, check=False)
        self.assertEqual(cli_err.returncode, 3)
        self.assertIn(str(e.exception), cli_err.stderr)

        with open(os.path.join(CORRUPT, "garbage.bin"), "rb") as f:
            garbage = f.read()
        with self.assertRaises(smolvlm.BadInputError):
            self.m.caption(garbage)
        with self.assertRaises(smolvlm.BadInputError) as e:
            self.m.caption(np.zeros((4, 4, 3), np.float32))
        self.assertIn("uint8", str(e.exception))
        with self.assertRaises(smolvlm.BadInputError):
            self.m.caption(np.zeros((4, 4), np.uint8))
        with self.assertRaises(TypeError):
            self.m.caption(12345)
        with self.assertRaises(TypeError):
            self.m.caption(FLOWER, temprature=0.5)
        with self.assertRaises(smolvlm.BadInputError):
            self.m.chat([{"role": "robot", "content": "hi"}])
        with self.assertRaises(smolvlm.Error) as e:
            smolvlm.Model("/nonexistent/model")
        self.assertIn("/nonexistent/model", str(e.exception))
        with self.assertRaises(smolvlm.BadInputError) as e:
            self.m.translate("Hallo", to="Klingon")
        self.assertIn("Klingon", str(e.exception))
        no_weights = smolvlm.Model(TINY, load_weights=False)
        self.assertEqual(no_weights.tokenize("hi", False), self.m.tokenize("hi", False))
        with self.assertRaises(smolvlm.StateError):
            no_weights.caption(FLOWER, max_new_tokens=2)
        # the model is still usable after every error
        self.assertEqual(len(self.m.caption(FLOWER, max_new_tokens=3).token_ids), 3)

    def test_ctrl_c_cancels_and_raises_keyboard_interrupt(self):
        import signal
        m = smolvlm.Model(TINY, threads=1)
        timer = threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT))
        t0 = time.perf_counter()
        timer.start()
        with self.assertRaises(KeyboardInterrupt):
            m.generate("Once upon a time", max_new_tokens=8000, ignore_eos=True)
        self.assertLess(time.perf_counter() - t0, 60)  # a bound that only a hang reaches
        timer.join()
        self.assertEqual(len(m.generate("Once upon a time", max_new_tokens=4).token_ids), 4)

    def test_help_reads_well(self):
        doc = pydoc.render_doc(smolvlm.Model, renderer=pydoc.plaintext)
        for name in ("caption", "chat", "generate", "stream", "tokenize", "detokenize", "info", "max_new_tokens"):
            self.assertIn(name, doc)
        self.assertTrue(os.path.exists(os.path.join(os.path.dirname(smolvlm.__file__), "__init__.pyi")))

    _tmp = None

    def tmp(self):
        import tempfile
        if ModelTest._tmp is None:
            ModelTest._tmp = tempfile.mkdtemp(prefix="smolvlm-py-")
        return ModelTest._tmp


if __name__ == "__main__":
    unittest.main()
